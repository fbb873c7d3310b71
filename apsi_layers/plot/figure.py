"""Figure and panel values: what `use plot` hands to Apsi code.

A figure is a description: each call checks its arguments and records what to draw, and `save`
draws it all with matplotlib (render.py) and writes the file. So a figure holds no matplotlib object,
matplotlib is imported only by `save` (or a `color=`), and every mistake is reported on the line that
made it.
"""

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from . import data

STYLES = {"solid": "-", "dashed": "--", "dotted": ":", "dashdot": "-."}
MARKERS = {"dot": ".", "circle": "o", "square": "s", "triangle": "^", "cross": "x", "plus": "+"}
SCALES = ("linear", "log")
PLACES = ("best", "upper right", "upper left", "lower left", "lower right", "right", "center left",
          "center right", "lower center", "upper center", "center")
COLORMAPS = ("viridis", "plasma", "inferno", "magma", "cividis", "gray", "gray_r", "Greys", "Blues",
             "Reds", "Greens", "coolwarm", "RdBu", "bwr", "seismic", "twilight", "hot", "jet")
MAX_PIXELS = 40_000_000      # width × height of one image: a sandboxed program must not exhaust memory
MAX_PANELS = 64
MAX_BINS = 10_000


class Panel:
    """One set of axes: what is drawn in it, its texts and scales, in the order given."""

    __apsi_attrs__ = frozenset({"line", "scatter", "hist", "image", "title", "xlabel", "ylabel",
                                "legend", "xscale", "yscale", "xlim", "ylim", "grid"})
    __apsi_type__ = "panel"

    def __init__(self, index=0):
        self.index = index                  # its place in the figure, row by row
        self.items = []                     # (kind, arrays, options) in drawing order
        self.texts = {}                     # title, xlabel, ylabel
        self.scales = {"x": "linear", "y": "linear"}
        self.limits = {}                    # "x"/"y" -> (low, high)
        self.legend_at = None               # a PLACES entry once legend() was called
        self.grid_on = False
        self.hidden = False                 # a place left empty in the grid (plot_history)
        self.whole_x = False                # ticks at whole numbers only (epochs)

    def __repr__(self):
        return f"<panel {self.index}: {len(self.items)} drawn>"

    def line(self, x, y=None, label=None, color=None, style="solid", width=1.5, marker=None):
        """line(y) draws y against 0, 1, 2, …; line(x, y) against x."""
        fn = "line(x, y)" if y is not None else "line(y)"
        xs, ys = self._pair(fn, x, y)
        opts = {"label": data.text(label, fn, "label"), "color": _color(color, fn),
                "linestyle": STYLES[data.choice(style, fn, "style", tuple(STYLES))],
                "linewidth": data.number(width, fn, "width", 0, 50),
                "marker": None if marker is None else MARKERS[data.choice(marker, fn, "marker",
                                                                          tuple(MARKERS))]}
        self.items.append(("line", (xs, ys), opts))

    def scatter(self, x, y, label=None, color=None, size=20):
        fn = "scatter(x, y)"
        xs, ys = self._pair(fn, x, y)
        opts = {"label": data.text(label, fn, "label"), "color": _color(color, fn),
                "s": data.number(size, fn, "size", 0, 10_000)}
        self.items.append(("scatter", (xs, ys), opts))

    def hist(self, values, bins=10, label=None, color=None):
        """A histogram of the values, of any shape (a weight matrix: all its entries); NaN are left out."""
        fn = "hist(values)"
        v = data.series(values, fn, "values", ndim=None)
        v = v[v == v]
        if v.size == 0:
            raise ApsiError(f"{fn}: every value is NaN: there is nothing to count")
        opts = {"bins": data.number(bins, fn, "bins", 1, MAX_BINS, whole=True),
                "label": data.text(label, fn, "label"), "color": _color(color, fn)}
        self.items.append(("hist", (v,), opts))

    def image(self, t, cmap="viridis", colorbar=False):
        """A 2-D tensor as a picture: row 0 at the top, one cell per value, colours by `cmap`."""
        fn = "image(t)"
        a = data.series(t, fn, "t", ndim=2)
        if a.size > MAX_PIXELS:
            raise ApsiError(f"{fn}: t has {a.size} values; at most {MAX_PIXELS} are drawn")
        opts = {"cmap": data.choice(cmap, fn, "cmap", COLORMAPS),
                "colorbar": data.flag(colorbar, fn, "colorbar")}
        self.items.append(("image", (a,), opts))

    def title(self, text):
        self.texts["title"] = data.text(text, "title(text)", "text")

    def xlabel(self, text):
        self.texts["xlabel"] = data.text(text, "xlabel(text)", "text")

    def ylabel(self, text):
        self.texts["ylabel"] = data.text(text, "ylabel(text)", "text")

    def legend(self, place="best"):
        """Show the labels given with label=; `save` refuses a legend with no label to show."""
        self.legend_at = data.choice(place, "legend(place)", "place", PLACES)

    def xscale(self, scale):
        self.scales["x"] = data.choice(scale, "xscale(scale)", "scale", SCALES)

    def yscale(self, scale):
        self.scales["y"] = data.choice(scale, "yscale(scale)", "scale", SCALES)

    def xlim(self, low, high):
        self.limits["x"] = _limits("xlim(low, high)", low, high)

    def ylim(self, low, high):
        self.limits["y"] = _limits("ylim(low, high)", low, high)

    def grid(self, on=True):
        self.grid_on = data.flag(on, "grid(on)", "on")

    def _pair(self, fn, x, y):
        if y is None:
            import numpy as np

            ys = data.series(x, fn, "y")
            return np.arange(ys.size, dtype=np.float64), ys
        xs, ys = data.series(x, fn, "x"), data.series(y, fn, "y")
        if xs.size != ys.size:
            raise ApsiError(f"{fn}: x has {xs.size} values and y has {ys.size}; give one x per y")
        return xs, ys


def _limits(fn, low, high):
    low = data.number(low, fn, "low", -1e300, 1e300)
    high = data.number(high, fn, "high", -1e300, 1e300)
    if not low < high:
        raise ApsiError(f"{fn}: low must be less than high, got {show(low)} and {show(high)}")
    return low, high


def _color(value, fn):
    """A colour as matplotlib reads it ("red", "#1f77b4", "C0"), or none for the next of the cycle."""
    if value is None:
        return None
    if type(value) is not str:
        raise ApsiError(f"{fn}: color must be a string like \"red\" or \"#1f77b4\", got {show(value, True)}")
    from .render import is_color

    if not is_color(value):
        raise ApsiError(f"{fn}: color {show(value, True)} is not a colour: give a name (\"red\", "
                        "\"tab:blue\"), a hex code (\"#1f77b4\") or \"C0\"…\"C9\" (the default cycle)")
    return value


class Figure:
    """figure(width=640, height=480, rows=1, cols=1): an image of rows × cols panels, width × height
    pixels. With one panel, the figure's drawing calls draw in it; with several, draw in f.panel(i)."""

    __apsi_attrs__ = Panel.__apsi_attrs__ | {"panel", "save", "width", "height", "rows", "cols"}
    __apsi_type__ = "figure"

    def __init__(self, width=640, height=480, rows=1, cols=1, title=None):
        fn = "figure()"
        self.width = data.number(width, fn, "width", 16, 8000, whole=True)
        self.height = data.number(height, fn, "height", 16, 8000, whole=True)
        if self.width * self.height > MAX_PIXELS:
            raise ApsiError(f"{fn}: {self.width} × {self.height} pixels is more than the "
                            f"{MAX_PIXELS} an image may have")
        self.rows = data.number(rows, fn, "rows", 1, MAX_PANELS, whole=True)
        self.cols = data.number(cols, fn, "cols", 1, MAX_PANELS, whole=True)
        if self.rows * self.cols > MAX_PANELS:
            raise ApsiError(f"{fn}: {self.rows} × {self.cols} panels; at most {MAX_PANELS}")
        n = self.rows * self.cols
        self.panels = [Panel(i) for i in range(n)]
        self.suptitle = data.text(title, fn, "title")

    def __repr__(self):
        drawn = sum(len(p.items) for p in self.panels)
        return f"<figure {self.width}×{self.height}, {self.rows}×{self.cols} panels, {drawn} drawn>"

    def panel(self, i, col=None):
        """f.panel(i): the i-th panel, row by row from 0; f.panel(row, col) by its place."""
        n = len(self.panels)
        if col is None:
            data.number(i, "panel(i)", "i", -n, n - 1, whole=True)
            return self.panels[i]
        data.number(i, "panel(row, col)", "row", 0, self.rows - 1, whole=True)
        data.number(col, "panel(row, col)", "col", 0, self.cols - 1, whole=True)
        return self.panels[i * self.cols + col]

    def title(self, text):
        """The only panel's title; with several panels, the title above them all."""
        if len(self.panels) == 1:
            self.panels[0].title(text)
        else:
            self.suptitle = data.text(text, "title(text)", "text")

    def save(self, path):
        """Draw the figure into `path` (.png or .svg); returns the path."""
        from .render import save

        return save(self, path, "save")

    # with one panel, the figure draws in it (the same parameters as Panel's, so a misspelt one is
    # named in the usual way)
    def line(self, x, y=None, label=None, color=None, style="solid", width=1.5, marker=None):
        self._only("line").line(x, y, label, color, style, width, marker)

    def scatter(self, x, y, label=None, color=None, size=20):
        self._only("scatter").scatter(x, y, label, color, size)

    def hist(self, values, bins=10, label=None, color=None):
        self._only("hist").hist(values, bins, label, color)

    def image(self, t, cmap="viridis", colorbar=False):
        self._only("image").image(t, cmap, colorbar)

    def xlabel(self, text):
        self._only("xlabel").xlabel(text)

    def ylabel(self, text):
        self._only("ylabel").ylabel(text)

    def legend(self, place="best"):
        self._only("legend").legend(place)

    def xscale(self, scale):
        self._only("xscale").xscale(scale)

    def yscale(self, scale):
        self._only("yscale").yscale(scale)

    def xlim(self, low, high):
        self._only("xlim").xlim(low, high)

    def ylim(self, low, high):
        self._only("ylim").ylim(low, high)

    def grid(self, on=True):
        self._only("grid").grid(on)

    def _only(self, name):
        if len(self.panels) > 1:
            raise ApsiError(f"{name}: this figure has {len(self.panels)} panels; draw in one of them, "
                            f"like f.panel(0).{name}(…)")
        return self.panels[0]


def figure(width=640, height=480, rows=1, cols=1, title=None):
    """A new, empty figure (see Figure)."""
    return Figure(width, height, rows, cols, title)
