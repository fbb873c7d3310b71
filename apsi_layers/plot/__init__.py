"""`use plot`: figures drawn with matplotlib (Agg for PNG, SVG), written under the sandbox's write rules.

    f = figure()                 # figure(width=640, height=480, rows=1, cols=1, title=none)
    f.line(x, y, label="train")  # also scatter, hist, image (a 2-D tensor)
    f.title("loss"); f.xlabel("epoch"); f.legend()
    f.save("loss.png")           # .png or .svg

plot_history(r, "loss.png") draws what fit returned. matplotlib is imported only when a figure is
saved (render.py), never by `use plot`.
"""

from .figure import Figure, Panel, figure
from .history import plot_history

__all__ = ["Figure", "Panel", "figure", "plot_history"]


def plot_exports():
    """{name: value} for `use plot`."""
    return {"figure": figure, "plot_history": plot_history}
