"""The documentation of `use plot` (apsi_lang/doc_source.py): the table docs/plot.md shows."""

from apsi_lang.doc_table import Table

TABLES = (
    Table('docs/plot.md', 'method', None,
          ('call', 'draws'),
          (
              ('`line(y)` / `line(x, y, label=none, color=none, style="solid", width=1.5, marker=none)`', 'a line through the points; `line(y)` puts y at x = 0, 1, 2, …; `style`: `"solid"`, `"dashed"`, `"dotted"`, `"dashdot"`; `width` in points; `marker` also marks each point: `"dot"`, `"circle"`, `"square"`, `"triangle"`, `"cross"`, `"plus"`'),
              ('`scatter(x, y, label=none, color=none, size=20)`', 'one dot per point (`size` is the area in points²)'),
              ('`hist(values, bins=10, label=none, color=none)`', "a histogram of all the values, whatever the tensor's shape (a weight matrix: every entry); NaN values are left out"),
              ('`image(t, cmap="viridis", colorbar=false)`', 'a 2-D tensor, one cell per value, row 0 at the top; `cmap`: viridis, plasma, inferno, magma, cividis, gray, gray_r, Greys, Blues, Reds, Greens, coolwarm, RdBu, bwr, seismic, twilight, hot, jet'),
              ('`title(text)`, `xlabel(text)`, `ylabel(text)`', 'texts (at most 1000 characters). On a figure with several panels, `f.title` is the title above them all'),
              ('`legend(place="best")`', 'a box with the `label=` of each curve; `place`: `"best"`, `"upper right"`, `"upper left"`, `"lower left"`, `"lower right"`, `"right"`, `"center left"`, `"center right"`, `"lower center"`, `"upper center"`, `"center"`'),
              ('`xscale(scale)`, `yscale(scale)`', '`"linear"` or `"log"` (values ≤ 0 are left out of a log scale)'),
              ('`xlim(low, high)`, `ylim(low, high)`', 'the range shown on an axis (otherwise it fits the data)'),
              ('`grid(on=true)`', 'light grid lines'),
          )),
    Table('docs/plot.md', 'option', 'figure',
          ('Option', 'Default', 'Meaning'),
          (
              ('`width`', '`640`', 'pixels (16 to 8000)'),
              ('`height`', '`480`', 'pixels (16 to 8000)'),
              ('`rows`', '`1`', 'panels down'),
              ('`cols`', '`1`', 'panels across'),
              ('`title`', '`none`', 'a title above all the panels'),
          )),
    Table('docs/plot.md', 'option', 'plot_history',
          ('Option', 'Default', 'Meaning'),
          (
              ('`r`', 'required', 'the record `fit` returned'),
              ('`path`', 'required', "a `.png` or `.svg` file, written under the sandbox's write rules"),
              ('`title`', '`none`', 'a title above the panels'),
          )),
)

MODULE = 'figures as PNG or SVG: line, scatter, hist and image, and plot_history (docs/plot.md).'

EXAMPLES = {
    'figure': ('use plot\nuse nn\nlet x = linspace(0, 6, 50)\nlet f = figure(width=400, height=300, title="waves")\n'
               'f.line(x, sin(x), label="sin")\nf.legend()\nprint(f.save("waves.svg"))'),
    'plot_history': ('use plot\nuse layers\nuse nn\nlet net = mlp(2, 1, hidden=[4])\n'
                     'let r = fit(net, net.init(seed=0), ones(8, 2), zeros(8), loss="mse", epochs=2, verbose=false)\n'
                     'print(plot_history(r, "loss.png", title="training"))'),
}

PARAGRAPHS = {
    'figure': "`figure(width=640, height=480, rows=1, cols=1, title=none)`: an image of `width` × `height` pixels (16 to 8000 each, at most 40 million pixels) holding `rows` × `cols` panels (at most 64). With one panel, the figure's drawing calls draw in it. With several, draw in a panel: `f.panel(i)` (numbered row by row from 0; -1 is the last) or `f.panel(row, col)`:",
    'plot_history': '`plot_history(r, path, title=none)` draws the record `fit` returned into `path` (`.png` or `.svg`) and returns the path:',
}
