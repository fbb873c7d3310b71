"""plot_history(r, "loss.png"): what fit returned, one panel per curve, epochs on x.

The loss panel holds the training loss and, when r.val_history has values, the validation loss; each
metric in r.metrics gets a panel of its own, with r.val_metrics' curve of the same name beside it.
When early stopping kept the best epoch (r.best_epoch), a dashed line marks it in every panel.
"""

import math

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, a_type, show

from . import data
from .figure import Figure

PANEL_WIDTH, PANEL_HEIGHT, MAX_COLS = 480, 360, 3
MARKED = 60             # up to this many epochs, each one's value is also a dot


def plot_history(r, path, title=None):
    """Draw r's loss and metric curves into `path` (.png or .svg); returns the path."""
    call = f"plot_history(r, {show(path, True)})"
    curves = _curves(r, call)
    n = len(curves)
    cols = min(n, MAX_COLS)
    rows = -(-n // cols)
    fig = Figure(width=PANEL_WIDTH * cols, height=PANEL_HEIGHT * rows, rows=rows, cols=cols,
                 title=data.text(title, "plot_history", "title"))
    best = _best_epoch(r)
    for panel, (name, own, val) in zip(fig.panels, curves):
        marker = "dot" if len(own) <= MARKED else None      # a lone epoch between gaps still shows
        panel.line(_epochs(own), own, label=name, marker=marker)
        if val:
            panel.line(_epochs(val), val, label=f"val_{name}", marker=marker)
        last = max(len(own), len(val))
        pad = 0.5 if last < 3 else 0.03 * (last - 1)      # room for the first and last dots
        panel.xlim(1 - pad, last + pad)
        if best is not None:
            panel.items.append(("vline", (best,), {"label": f"best epoch ({best})"}))
        panel.title(name)
        panel.xlabel("epoch")
        panel.grid()
        panel.whole_x = True
        panel.legend()
    for panel in fig.panels[n:]:
        panel.hidden = True
    from .render import save

    return save(fig, path, "plot_history", call)


def _epochs(values):
    return list(range(1, len(values) + 1))


def _curves(r, call):
    """[(name, training values, validation values or [])]: the loss first, then each metric."""
    if type(r) is Record:
        history = getattr(r, "history", None)
        if history is None:
            raise ApsiError(f"{call}: r has no field 'history': give the record fit returned "
                            "(r = fit(…)) or a list of loss values")
    elif isinstance(r, list | tuple):
        history, r = r, Record()
    else:
        raise ApsiError(f"{call}: r must be the record fit returned (r = fit(…)) or a list of loss values, "
                        f"got {a_type(r)}")
    curves = [("loss", _values(history, call, "r.history"),
               _values(getattr(r, "val_history", None) or [], call, "r.val_history"))]
    metrics, val_metrics = getattr(r, "metrics", None), getattr(r, "val_metrics", None)
    for name, own in _fields(metrics, call, "r.metrics"):
        val = getattr(val_metrics, name, None) if type(val_metrics) is Record else None
        curves.append((name, _values(own, call, f"r.metrics.{name}"),
                       _values(val or [], call, f"r.val_metrics.{name}")))
    if not curves[0][1]:
        raise ApsiError(f"{call}: r.history is empty: fit trained no epoch, so there is nothing to plot")
    return curves


def _fields(record, call, what):
    if record is None:
        return []
    if type(record) is not Record:
        raise ApsiError(f"{call}: {what} must be a record of lists (one value per epoch), got "
                        f"{a_type(record)}")
    return list(vars(record).items())


def _values(values, call, what):
    """A list of per-epoch floats; NaN, inf and none leave a gap."""
    if not isinstance(values, list | tuple):
        raise ApsiError(f"{call}: {what} must be a list of numbers (one per epoch), got {a_type(values)}")
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append(float("nan"))
        elif isinstance(v, int | float) and type(v) is not bool:
            out.append(float(v) if math.isfinite(v) else float("nan"))   # inf: a gap too
        else:
            raise ApsiError(f"{call}: {what}[{i}] is {a_type(v)}, not a number")
    return out


def _best_epoch(r):
    best = getattr(r, "best_epoch", None) if type(r) is Record else None
    return best if type(best) is int and best >= 1 else None
