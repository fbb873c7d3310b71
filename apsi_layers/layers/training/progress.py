"""What fit shows while it trains: a rich progress bar on a terminal (loss, validation loss, steps
per second, time left), one plain line per epoch otherwise, nothing when verbose is false."""

import sys
import time


class Quiet:
    def start(self):
        pass

    def step(self, loss):
        pass

    def epoch(self, epoch, loss, val, metrics=None, val_metrics=None):
        pass

    def close(self):
        pass


def _extra(val, metrics, val_metrics):
    """The part of an epoch's line after the loss: val loss and each metric."""
    text = f"  val {val:.4f}" if val is not None else ""
    for k, v in (metrics or {}).items():
        text += f"  {k} {v:.4f}"
    for k, v in (val_metrics or {}).items():
        text += f"  val_{k} {v:.4f}"
    return text


class Lines(Quiet):
    """One line per epoch, for logs and pipes."""

    def __init__(self, epochs, steps_per_epoch, first=1):
        self.epochs, self.steps, self.first = epochs, steps_per_epoch, first

    def start(self):
        self.t0 = time.perf_counter()

    def epoch(self, epoch, loss, val, metrics=None, val_metrics=None):
        rate = (epoch - self.first + 1) * self.steps / max(time.perf_counter() - self.t0, 1e-9)
        extra = _extra(val, metrics, val_metrics)
        print(f"epoch {epoch}/{self.epochs}  loss {loss:.4f}{extra}  {rate:.1f} steps/s", flush=True)


class Bar(Quiet):
    """A rich progress bar per epoch, as Keras shows them: each epoch's bar stays on screen with its
    loss (and validation loss); the running one shows steps per second and the time the whole fit
    has left."""

    def __init__(self, epochs, steps_per_epoch, first=1):
        self.epochs, self.steps, self.first = epochs, steps_per_epoch, first
        self.losses = []
        self.bar = None

    def start(self):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), transient=False)
        self.t0 = time.perf_counter()
        self.done, self.total, self.seen = 0, 0.0, 0
        self.task = self._new(self.first)
        self.bar.start()

    def _new(self, epoch):
        self.total, self.seen = 0.0, 0
        return self.bar.add_task(f"epoch {epoch}/{self.epochs}", total=self.steps, info="")

    def step(self, loss):
        """One step done; `loss` is None where the backend does not read it every step (torch reads
        it once per epoch, so a step never waits for the device)."""
        self.done += 1
        if loss is not None:
            self.total, self.seen = self.total + loss, self.seen + 1
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        left = ((self.epochs - self.first + 1) * self.steps - self.done) / rate
        running = f"loss {self.total / self.seen:.4f}  " if self.seen else ""
        self.bar.update(self.task, advance=1, info=f"{running}{rate:.1f} steps/s  {_duration(left)} left")

    def epoch(self, epoch, loss, val, metrics=None, val_metrics=None):
        extra = _extra(val, metrics, val_metrics)
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        self.bar.update(self.task, completed=self.steps, info=f"loss {loss:.4f}{extra}  {rate:.1f} steps/s")
        self.losses.append(loss)
        if epoch < self.epochs:
            self.task = self._new(epoch + 1)

    def close(self):
        if self.bar is None:            # closed already (a Ctrl-C closes it before its message)
            return
        self.bar.stop()
        self.bar = None
        if len(self.losses) > 1:       # a one-line summary that stays: the loss curve at a glance
            print(f"loss {self.losses[0]:.4f} → {self.losses[-1]:.4f}  {sparkline(self.losses)}", flush=True)


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes}m{seconds:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values, width=40):
    """The values as a row of block characters (the last `width` of them), low to high."""
    values = list(values)[-width:]
    lo, hi = min(values), max(values)
    span = hi - lo
    return "".join(_BLOCKS[0 if span == 0 else min(7, int((v - lo) / span * 7.999))] for v in values)


class Live(Lines):
    """In a notebook (an output stream with a `live` sink, the kernel's worker): the per-epoch lines
    as Lines prints them, and the bar's numbers sent to `live`, at most a few times a second, for the
    kernel to draw as one display that updates in place. Only numbers and metric names go out: what
    the notebook shows is made by the kernel (apsi_cli/kernel/bar.py), never by the program."""

    EVERY_S = 0.25

    def __init__(self, epochs, steps_per_epoch, first=1, sink=None):
        super().__init__(epochs, steps_per_epoch, first)
        self.sink, self.closed = sink, False
        self.losses, self.last = [], {}

    def start(self):
        super().start()
        self.done, self.step_n, self.total, self.seen, self.sent = 0, 0, 0.0, 0, 0.0
        self.epoch_n = self.first
        self._send("start")

    def step(self, loss):
        self.done, self.step_n = self.done + 1, self.step_n + 1
        if loss is not None:
            self.total, self.seen = self.total + loss, self.seen + 1
        if time.perf_counter() - self.sent >= self.EVERY_S:
            self._send("update")

    def epoch(self, epoch, loss, val, metrics=None, val_metrics=None):
        super().epoch(epoch, loss, val, metrics, val_metrics)
        self.losses.append(loss)
        self.last = {"loss": loss, **({"val": val} if val is not None else {}), **(metrics or {}),
                     **{f"val_{k}": v for k, v in (val_metrics or {}).items()}}
        self.epoch_n, self.step_n, self.total, self.seen = epoch + 1, 0, 0.0, 0
        if epoch < self.epochs:
            self._send("update")

    def close(self):
        if self.closed:                 # closed already (a Ctrl-C closes it before its message)
            return
        self.closed = True
        self._send("end")

    def _send(self, event):
        self.sent = now = time.perf_counter()
        elapsed = now - self.t0
        rate = self.done / max(elapsed, 1e-9)
        left = ((self.epochs - self.first + 1) * self.steps - self.done) / rate if rate else None
        self.sink(event=event, epoch=min(self.epoch_n, self.epochs), epochs=self.epochs, step=self.step_n,
                  steps=self.steps, loss=self.total / self.seen if self.seen else None, rate=rate,
                  left=left, elapsed=elapsed, done_epochs=len(self.losses), last=self.last,
                  losses=self.losses[-40:])


def progress(verbose, epochs, steps_per_epoch, first=1, shared=False):
    """shared: other processes write to the same terminal (the ranks of `apsi launch`), where a bar
    that redraws itself would erase their lines: one plain line per epoch instead."""
    if not verbose:
        return Quiet()
    sink = getattr(sys.stdout, "live", None)
    if callable(sink) and not shared:
        return Live(epochs, steps_per_epoch, first, sink)
    if sys.stdout.isatty() and not shared:
        return Bar(epochs, steps_per_epoch, first)
    return Lines(epochs, steps_per_epoch, first)
