"""Drawing a figure description with matplotlib and writing it: the only module that imports it.

No pyplot: a matplotlib Figure of our own, drawn by the Agg (PNG) or SVG backend that savefig picks
for the format, so no GUI backend, no global list of figures, and nothing a matplotlibrc names as its
backend is ever imported. Drawing runs with matplotlib's defaults (rcdefaults inside rc_context), so a
matplotlibrc in the project folder (a file any program there may write) changes nothing, and a
Python caller's own rcParams are restored after.

The file is written as every Apsi writer writes: permission 'write' checked for the path (free inside
the project folder, protected names refused), then an atomic write (apsi_lang.files.atomic_open).
"""

import io
import os
import sys

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.values import a_type, show

FORMATS = {".png": "png", ".svg": "svg"}
DPI = 100


def matplotlib():
    """The matplotlib package, imported on first use (never by `use plot` itself)."""
    if "matplotlib" in sys.modules:
        return sys.modules["matplotlib"]
    import logging

    folder = _config_folder()
    if folder is not None:
        os.environ["MPLCONFIGDIR"] = folder
    # quiet while it loads: "could not save font_manager cache" (expected where confined), "building
    # the font cache" (a first run): matplotlib's housekeeping, not the program's business
    log = logging.getLogger("matplotlib")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        import matplotlib as mpl
        import matplotlib.figure  # noqa: F401  (font_manager builds or loads its font list here)

        mpl.get_configdir(), mpl.get_cachedir()   # both cached now (with a matplotlibrc in the current
        # folder, the import itself never asked for the first)
    except ImportError:
        raise ApsiError(f"plotting needs matplotlib, which is not installed in the Python that runs Apsi "
                        f"({sys.executable}): install it with `{sys.executable} -m pip install matplotlib` "
                        "(`pip install -e .` of apsi installs it)") from None
    except OSError as e:          # e.g. a settings file it may not read; its path is not shown
        raise ApsiError(f"plotting: matplotlib could not start ({e.strerror or type(e).__name__}); run "
                        "with APSI_DEBUG=1 to see where") from None
    finally:
        log.setLevel(level)
        if folder is not None:
            # matplotlib has read it (its folders are cached); programs the Apsi program starts
            # (`run`) must not inherit it: their matplotlib would then keep its files in the home folder
            os.environ.pop("MPLCONFIGDIR", None)
    return mpl


def _config_folder():
    """The folder for MPLCONFIGDIR while matplotlib is imported, or None to leave the user's choice.

    matplotlib keeps a font list in a folder that it requires access(2) to call writable; failing that
    it makes a temporary folder, and where the kernel's confinement closes /tmp, tempfile falls back
    to the current folder: the user's project would get a matplotlib-xxxx folder and a warning on
    every run. So: its usual cache folder (~/.cache/matplotlib) where this process can use it; else
    (confined: nothing outside the project is readable or writable) the home folder as it was at
    start, which exists and passes access(2) (Landlock does not answer access(2)), while the kernel
    refuses matplotlib's reads and writes there, so it builds the font list in memory (its bundled
    fonts) and writes nothing."""
    if os.environ.get("MPLCONFIGDIR"):
        return None
    home = permissions.current().home
    if not home or not os.path.isabs(home):
        home = None
    cache = os.environ.get("XDG_CACHE_HOME") or (home and os.path.join(home, ".cache"))
    if not (cache and os.path.isabs(cache)):
        cache = None
    if cache:
        folder = os.path.join(cache, "matplotlib")
        try:
            os.makedirs(folder, exist_ok=True)
            os.listdir(folder)            # refused under the confinement, although access(2) says yes
            return folder
        except OSError:
            pass
    # confined: a folder that exists and holds no matplotlibrc (which matplotlib would fail to read)
    for folder in (cache and os.path.join(cache, "matplotlib"), cache, home):
        if folder and os.path.isdir(folder) and not os.path.lexists(os.path.join(folder, "matplotlibrc")):
            return folder
    return "/"


def is_color(value):
    return matplotlib().colors.is_color_like(value)


def save(fig, path, fn, shown_call=None):
    """Draw `fig` (a figure.Figure) into `path`; returns the path as given. `fn` names the Apsi call
    in messages."""
    call = shown_call or f"{fn}({show(path, True)})"
    if type(path) is not str or not path:
        raise ApsiError(f"{fn}(path): the path must be a file name string like \"plot.png\", got "
                        f"{a_type(path) if type(path) is not str else 'an empty string'}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        said = f"'{ext}'" if ext else "no extension"
        raise ApsiError(f"{call}: the file name ends in {said}; plots are written as .png or .svg "
                        f"(like \"{os.path.splitext(path)[0] or 'plot'}.png\")")
    resolved = permissions.check_path("write", path, call)
    content = draw(fig, FORMATS[ext], call)
    from apsi_lang.data_files import _os_error
    from apsi_lang.files import atomic_open

    try:
        with atomic_open(resolved, "wb") as f:
            f.write(content)
    except OSError as e:
        raise _os_error(fn, path, e) from None
    return path


def draw(fig, fmt, call):
    """The bytes of `fig` drawn as `fmt` ("png" or "svg")."""
    import warnings

    mpl = matplotlib()
    from matplotlib.figure import Figure

    _check_math(fig, call)
    with mpl.rc_context(), warnings.catch_warnings():
        warnings.simplefilter("ignore")           # e.g. a log scale over values <= 0: they are left out
        mpl.rcdefaults()
        mpl.rcParams["svg.hashsalt"] = "apsi"     # ids in the SVG the same on every run
        out = Figure(figsize=(fig.width / DPI, fig.height / DPI), dpi=DPI, layout="constrained")
        axes = out.subplots(fig.rows, fig.cols, squeeze=False).ravel()
        for i, (panel, ax) in enumerate(zip(fig.panels, axes)):
            _draw_panel(out, panel, ax, call, i if len(fig.panels) > 1 else None)
        if fig.suptitle is not None:
            out.suptitle(fig.suptitle)
        buf = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {}
        out.savefig(buf, format=fmt, dpi=DPI, metadata=metadata)
    return buf.getvalue()


def _draw_panel(out, panel, ax, call, index):
    if panel.hidden:
        ax.set_visible(False)
        return
    for kind, arrays, opts in panel.items:
        opts = {k: v for k, v in opts.items() if v is not None}
        if kind == "line":
            ax.plot(*arrays, **opts)
        elif kind == "scatter":
            ax.scatter(*arrays, **opts)
        elif kind == "hist":
            ax.hist(*arrays, **opts)
        elif kind == "vline":
            ax.axvline(*arrays, color="0.4", linestyle="--", linewidth=1, **opts)
        elif kind == "image":
            shown = ax.imshow(arrays[0], cmap=opts["cmap"], interpolation="nearest")
            if opts["colorbar"]:
                out.colorbar(shown, ax=ax)
    ax.set_xscale(panel.scales["x"])
    ax.set_yscale(panel.scales["y"])
    if "x" in panel.limits:
        ax.set_xlim(*panel.limits["x"])
    if "y" in panel.limits:
        ax.set_ylim(*panel.limits["y"])
    for key, setter in (("title", ax.set_title), ("xlabel", ax.set_xlabel), ("ylabel", ax.set_ylabel)):
        if panel.texts.get(key) is not None:
            setter(panel.texts[key])
    if panel.whole_x:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if panel.grid_on:
        ax.grid(True, alpha=0.3)
    if panel.legend_at is not None:
        if not any(opts.get("label") for _, _, opts in panel.items):
            where = "" if index is None else f" (panel {index})"
            raise ApsiError(f"{call}: legend() was asked for{where}, but nothing drawn there has a label: "
                            "give one, like line(x, y, label=\"train\")")
        ax.legend(loc=panel.legend_at)


def _check_math(fig, call):
    """Text between $ signs is math (matplotlib's mathtext, like $\\alpha$); a formula it cannot read
    would fail inside savefig, so each is read first and a bad one named."""
    from matplotlib import cbook
    from matplotlib.mathtext import MathTextParser

    texts = [fig.suptitle] + [t for p in fig.panels for t in p.texts.values()] + \
        [opts.get("label") for p in fig.panels for _, _, opts in p.items]
    parser = None
    for t in texts:
        if t is None or not cbook.is_math_text(t):
            continue
        parser = parser or MathTextParser("path")
        try:
            parser.parse(t, dpi=DPI)
        except ValueError as e:
            reason = _parse_reason(e)
            raise ApsiError(f"{call}: the text {show(t, True)} has $…$ math that matplotlib cannot read "
                            f"({reason}); write \\$ for a dollar sign") from None


def _parse_reason(e):
    """pyparsing's words ("Expected \\frac{num}{den}, found end of text"), without its class name and
    character positions."""
    import re

    lines = [ln for ln in str(e).strip().splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    text = lines[-1] if lines else "it cannot be read"
    text = re.sub(r"^\w+(Exception|Error): ", "", text)
    return re.sub(r"\s*\(at char \d+\).*$", "", text).strip()
