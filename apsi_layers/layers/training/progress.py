"""What fit shows while it trains: a rich progress bar on a terminal (loss, validation loss, steps
per second, time left), one plain line per epoch otherwise, nothing when verbose is false."""

import sys
import time


class Quiet:
    def start(self):
        pass

    def step(self, loss):
        pass

    def epoch(self, epoch, loss, val):
        pass

    def close(self):
        pass


class Lines(Quiet):
    """One line per epoch, for logs and pipes."""

    def __init__(self, epochs, steps_per_epoch):
        self.epochs, self.steps = epochs, steps_per_epoch

    def start(self):
        self.t0 = time.perf_counter()

    def epoch(self, epoch, loss, val):
        rate = epoch * self.steps / max(time.perf_counter() - self.t0, 1e-9)
        extra = f"  val {val:.4f}" if val is not None else ""
        print(f"epoch {epoch}/{self.epochs}  loss {loss:.4f}{extra}  {rate:.1f} steps/s", flush=True)


class Bar(Quiet):
    """rich's progress bar over all steps, its description updated once per epoch."""

    def __init__(self, epochs, steps_per_epoch):
        self.epochs, self.steps = epochs, steps_per_epoch

    def start(self):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("left"),
                            TimeRemainingColumn(), transient=False)
        self.task = self.bar.add_task(f"epoch 1/{self.epochs}", total=self.epochs * self.steps, rate="")
        self.t0 = time.perf_counter()
        self.done = 0
        self.bar.start()

    def step(self, loss):
        self.done += 1
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        self.bar.update(self.task, advance=1, rate=f"{rate:.1f} steps/s")

    def epoch(self, epoch, loss, val):
        extra = f" val {val:.4f}" if val is not None else ""
        nxt = min(epoch + 1, self.epochs)
        self.bar.update(self.task, description=f"epoch {nxt}/{self.epochs} loss {loss:.4f}{extra}")

    def close(self):
        self.bar.stop()


def progress(verbose, epochs, steps_per_epoch):
    if not verbose:
        return Quiet()
    if sys.stdout.isatty():
        return Bar(epochs, steps_per_epoch)
    return Lines(epochs, steps_per_epoch)
