"""fit's live bar in a notebook, drawn by the kernel from the numbers the worker sends (progress.py
Live): one display per fit (display_data with a display_id), redrawn with update_display_data, and
its last state the fit's summary.

The worker sends numbers and metric names, never markup. This module alone makes the text/plain and
text/html shown: rich draws the bar and writes it out as HTML, escaping every piece of text
(Console.export_html), and the names are passed to rich as plain Text (never parsed as rich markup),
so a program's metric name cannot become HTML or styling in the page.
"""

import io
import math
import uuid

WIDTH = 100          # characters: the console rich draws on (a notebook's output area has no size)
NAME_MAX = 40        # a metric's name, shortened past this
# rich's Jupyter look: its own <pre> (rich/jupyter.py), with the styles inlined into spans
HTML = ('<pre style="white-space:pre;overflow-x:auto;line-height:normal;'
        "font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace\">{code}</pre>")
_BLOCKS = "▁▂▃▄▅▆▇█"


def _number(value):
    """A float from the worker's message, or None for anything else (a missing or odd field)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value):
    number = _number(value)
    return int(number) if number is not None and math.isfinite(number) and number >= 0 else 0


def _fmt(value):
    number = _number(value)
    return "?" if number is None else f"{number:.4f}"


def _duration(seconds):
    number = _number(seconds)
    if number is None or not math.isfinite(number):
        return "?"
    seconds = int(round(max(number, 0.0)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes}m{seconds:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def _metrics(last):
    """The last finished epoch's loss and metrics, 'name value' each; names as plain text."""
    if not isinstance(last, dict):
        return ""
    return "  ".join(f"{str(k)[:NAME_MAX]} {_fmt(v)}" for k, v in list(last.items())[:12])


def sparkline(values):
    values = [v for v in map(_number, values if isinstance(values, list) else []) if v is not None
              and math.isfinite(v)][-40:]
    if not values:
        return ""
    lo, span = min(values), max(values) - min(values)
    return "".join(_BLOCKS[0 if span == 0 else min(7, int((v - lo) / span * 7.999))] for v in values)


def lines(message):
    """The display's rows as (label, completed, total, info); the bar is None in the summary."""
    epochs, done = _count(message.get("epochs")), _count(message.get("done_epochs"))
    if message.get("event") == "end":
        losses = message.get("losses") if isinstance(message.get("losses"), list) else []
        curve = (f"  loss {_fmt(losses[0])} → {_fmt(losses[-1])}  {sparkline(losses)}"
                 if len(losses) > 1 else "")
        return [(f"fit: {done}/{epochs} epochs in {_duration(message.get('elapsed'))}{curve}", None, None,
                 _metrics(message.get("last")))]
    epoch, step, steps = (_count(message.get(k)) for k in ("epoch", "step", "steps"))
    loss = _number(message.get("loss"))
    running = f"loss {loss:.4f}  " if loss is not None else ""
    rate = _number(message.get("rate")) or 0.0
    info = f"{running}{rate:.1f} steps/s  {_duration(message.get('left'))} left"
    rows = [(f"epoch {epoch}/{epochs}", step, steps, info)]
    if message.get("last"):
        rows.append((f"after epoch {done}", None, None, _metrics(message.get("last"))))
    return rows


def render(message):
    """The MIME bundle (text/plain and text/html) for one progress message."""
    from rich.console import Console
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    console = Console(file=io.StringIO(), record=True, width=WIDTH, color_system="truecolor",
                      force_terminal=True, force_jupyter=False)
    grid = Table.grid(padding=(0, 1))
    for label, completed, total, info in lines(message):
        bar = (ProgressBar(total=max(total, 1), completed=min(completed, total), width=30)
               if total is not None else Text(""))
        count = Text(f"{completed}/{total}" if total is not None else "")
        grid.add_row(Text(label), bar, count, Text(info))
    console.print(grid)
    text = console.export_text(clear=False).rstrip() + "\n"
    return {"text/plain": text, "text/html": console.export_html(inline_styles=True, code_format=HTML)}


class Display:
    """The kernel's side of one fit's bar: its display_id and what it sent last."""

    def __init__(self, send):
        self.send, self.id = send, None

    def show(self, message):
        data = render(message)
        if self.id is None:
            self.id = uuid.uuid4().hex
            kind = "display_data"
        else:
            kind = "update_display_data"
        self.send(kind, {"data": data, "metadata": {}, "transient": {"display_id": self.id}})
        if message.get("event") == "end":
            self.id = None

    def end(self, why):
        """A bar still open when the cell ended without fit closing it (the worker was stopped)."""
        if self.id is not None:
            self.send("update_display_data", {"data": {"text/plain": why + "\n"}, "metadata": {},
                                              "transient": {"display_id": self.id}})
            self.id = None
