"""`use plot` and plot_history (issue 18): real programs through `python -m apsi` write PNG and SVG files,
which are read back (size, colours drawn) with matplotlib's own reader; errors carry file:line and no
Python traceback; files are written under the sandbox's write rules, confined by the kernel or not
(tests/sandbox/helpers.cli runs each program both ways and requires the same result)."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.sandbox.helpers import ROOT, cli

# matplotlib's default colour cycle: C0 (blue) draws the first curve, C1 (orange) the second
BLUE, ORANGE = (0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E)


def _run(tmp_path, text, *flags, home=None):
    """Run `text` as prog.apsi in tmp_path/proj (with a home folder of its own): (rc, out, err)."""
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    (proj / "prog.apsi").write_text(text)
    home = home or tmp_path / "home"
    home.mkdir(exist_ok=True)
    return cli([*flags, "prog.apsi"], proj, env={"HOME": str(home)})


def _ok(tmp_path, text, *flags):
    rc, out, err = _run(tmp_path, text, *flags)
    assert rc == 0 and err == "", err
    return out


def _png(path):
    from matplotlib.image import imread

    return imread(str(path))


def _pixels_near(img, rgb, tol=0.08):
    """How many pixels have this colour (matplotlib's PNGs are RGBA floats in [0, 1])."""
    target = np.array(rgb) / 255.0
    return int((np.abs(img[..., :3] - target).max(axis=-1) < tol).sum())


def _error(tmp_path, text, *flags):
    rc, out, err = _run(tmp_path, text, *flags)
    assert rc == 1, (out, err)
    assert "Traceback (most recent call last):\n  File" not in err      # no Python traceback
    assert "prog.apsi:" in err, err
    return err


def test_line_scatter_png_has_the_size_and_the_colours_drawn(tmp_path):
    out = _ok(tmp_path, """use plot
use nn
let f = figure(width=400, height=300)
let x = linspace(0, 6.28, 50)
f.line(x, sin(x), label="sin", color="red", width=3)
f.scatter([1, 2, 3], [0.5, 0.0, -0.5], label="points", color="#00aa00", size=80)
f.title("waves")
f.xlabel("t")
f.ylabel("value")
f.grid()
f.legend(place="upper right")
print(f.save("wave.png"))
""")
    assert out == "wave.png\n"
    img = _png(tmp_path / "proj" / "wave.png")
    assert img.shape == (300, 400, 4)
    assert _pixels_near(img, (255, 0, 0)) > 300            # the thick red line
    assert _pixels_near(img, (0, 0xAA, 0)) > 100           # the green points
    white = (img[..., :3] > 0.99).all(axis=-1).mean()
    assert 0.5 < white < 0.98                              # mostly background, clearly not blank


def test_panels_hist_and_image(tmp_path):
    _ok(tmp_path, """use plot
use nn
let f = figure(width=800, height=300, rows=1, cols=2, title="two panels")
f.panel(0).hist(randn(40, 50, seed=1), bins=25, color="C1")      # every entry of a matrix
f.panel(0).yscale("log")
let p = f.panel(0, 1)
p.image(reshape(arange(64), [8, 8]), cmap="gray", colorbar=true)
p.title("ramp")
f.save("panels.png")
""")
    img = _png(tmp_path / "proj" / "panels.png")
    assert img.shape == (300, 800, 4)
    assert _pixels_near(img, ORANGE) > 2000                # the histogram's bars, left half only
    assert _pixels_near(img[:, 400:], ORANGE) == 0
    right = img[40:260, 420:700, :3]
    greys = right[(np.ptp(right, axis=-1) < 0.01)]          # grey pixels of the gray image
    assert len(np.unique(np.round(greys[:, 0], 2))) > 30   # a ramp of many shades, not one colour


def test_svg_labels_are_text_never_markup(tmp_path):
    """SVG is XML a browser may run scripts in: labels from the program must stay text."""
    _ok(tmp_path, """use plot
let f = figure()
f.line([1, 2, 3], label="<script>alert(1)</script> --> <!-- ]]> &amp;")
f.title("--><svg onload=alert(1)>")
f.xlabel("<a href='javascript:alert(1)'>x</a>")
f.legend()
f.save("escape.svg")
""")
    raw = (tmp_path / "proj" / "escape.svg").read_text()
    assert "<script" not in raw and "<svg onload" not in raw and "<a href" not in raw
    root = ET.fromstring(raw)                              # well-formed XML
    for el in root.iter():
        tag = el.tag.rsplit("}", 1)[-1].lower()
        assert tag not in ("script", "a", "foreignobject", "iframe"), tag
        assert not [k for k in el.attrib if k.lower().startswith("on")], el.attrib
        assert not [v for v in el.attrib.values() if "javascript:" in v.lower()], el.attrib


def _fit_program(val, metrics=""):
    return f"""use layers
use nn
let x = randn(120, 3, seed=1)
let y = x @ array([[1.0], [2.0], [-1.0]])
let net = mlp(3, 1, hidden=[8])
let r = fit(net, net.init(seed=0), x, y, loss="mse", epochs=6, batch_size=32, seed=0,
            {"val=[x, y], " if val else ""}verbose=false)
let shown = {{...r{metrics}}}
print(plot_history(shown, "loss.png"))
"""


def test_plot_history_of_a_fit_draws_loss_and_val_loss(tmp_path):
    assert _ok(tmp_path, _fit_program(val=True)) == "loss.png\n"
    img = _png(tmp_path / "proj" / "loss.png")
    assert img.shape == (360, 480, 4)                      # one panel: the loss
    assert _pixels_near(img, BLUE) > 100 and _pixels_near(img, ORANGE) > 100


def test_plot_history_without_validation_has_one_curve(tmp_path):
    _ok(tmp_path, _fit_program(val=False))
    img = _png(tmp_path / "proj" / "loss.png")
    assert _pixels_near(img, BLUE) > 100 and _pixels_near(img, ORANGE) == 0


def test_plot_history_one_panel_per_metric(tmp_path):
    """r.metrics and r.val_metrics (records of per-epoch lists) each get a panel; `use plot` exports
    the same function."""
    metrics = (", metrics: {mae: [0.5, 0.4, 0.3, 0.2, 0.2, 0.1], r2: [0.1, 0.3, 0.5, 0.7, 0.8, 0.9]}, "
               "val_metrics: {mae: [0.6, 0.5, 0.4, 0.3, 0.3, 0.2]}, best_epoch: 4")
    text = _fit_program(val=True, metrics=metrics).replace("use nn\n", "use nn\nuse plot\n")
    _ok(tmp_path, text)
    img = _png(tmp_path / "proj" / "loss.png")
    assert img.shape == (360, 3 * 480, 4)                  # loss, mae, r2 side by side
    thirds = [img[:, i * 480:(i + 1) * 480] for i in range(3)]
    assert [_pixels_near(t, ORANGE) > 50 for t in thirds] == [True, True, False]   # no val r2
    assert all(_pixels_near(t, BLUE) > 50 for t in thirds)


def test_errors_name_the_line_and_say_what_to_do(tmp_path):
    cases = [
        ('let f = figure()\nf.line([1, 2, 3])\nf.save("plot.jpg")\n',
         'prog.apsi:4:3: error: save("plot.jpg"): the file name ends in \'.jpg\'; plots are written as '
         '.png or .svg'),
        ('let f = figure()\nf.line([1, 2, 3], [1, 2])\n',
         "prog.apsi:3:3: error: line(x, y): x has 3 values and y has 2"),
        ('let f = figure()\nf.image([1, 2, 3])\n',
         "prog.apsi:3:3: error: image(t): t must be a 2-D tensor (rows × columns), not a list of 3 items"),
        ('let f = figure()\nf.line("abc")\n', "prog.apsi:3:3: error: line(y): y must be a tensor or a list"),
        ('let f = figure(rows=2)\nf.line([1, 2])\n', "f.panel(0).line(…)"),
        ('let f = figure()\nf.line([1, 2], color="blurple")\n', 'color "blurple" is not a colour'),
        ('let f = figure()\nf.line([1, 2], foo=1)\n', "has no parameter named 'foo'"),
        ('let f = figure()\nf.line([1, 2])\nf.legend()\nf.save("a.png")\n',
         "prog.apsi:5:3: error: save(\"a.png\"): legend() was asked for, but nothing drawn there has a "
         "label"),
        ('let f = figure()\nf.title("$\\\\frac$")\nf.save("a.png")\n',
         "has $…$ math that matplotlib cannot read (Expected \\frac{num}{den}"),
        ('let f = figure()\nf.line([1, 2])\nf.save("nowhere/a.png")\n',
         'save("nowhere/a.png"): the folder "nowhere" does not exist'),
        ('plot_history({history: []}, "h.png")\n', "r.history is empty"),
        ('plot_history(3, "h.png")\n', "r must be the record fit returned"),
        ('let f = figure(width=100000)\n', "width must be a whole number from 16 to 8000"),
    ]
    def check(numbered):                    # each case in its own folder, two at a time (suite time)
        i, (code, expected) = numbered
        folder = tmp_path / str(i)
        folder.mkdir()
        err = _error(folder, "use plot; use nn\n" + code)
        assert expected in err, (code, err)
        assert not [p for p in os.listdir(folder / "proj") if p != "prog.apsi"]   # nothing written

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(check, enumerate(cases)))


def test_writing_follows_the_write_permission(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    text = f'use plot\nlet f = figure()\nf.line([1, 2, 3])\nf.save("{outside}/a.png")\n'
    err = _error(tmp_path, text)
    assert "needs permission 'write'" in err and "--allow-write" in err and "prog.apsi:4:3" in err
    assert not list(outside.iterdir())
    _ok(tmp_path, text, f"--allow-write={outside}")
    assert _png(outside / "a.png").shape == (480, 640, 4)


def test_a_link_to_a_protected_file_is_refused(tmp_path):
    """Inside the project, writing through a link to apsi.toml (which grants permissions) is refused as
    write_text refuses it; the file stays as it was."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "apsi.toml").write_text("[run]\n")
    os.symlink("apsi.toml", proj / "evil.png")
    err = _error(tmp_path, 'use plot\nlet f = figure()\nf.line([1, 2])\nf.save("evil.png")\n')
    assert "protected file" in err and "--allow-write=" in err
    assert (proj / "apsi.toml").read_text() == "[run]\n"


def test_save_replaces_atomically_and_a_failed_save_keeps_the_old_file(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.png").write_bytes(b"old")
    os.chmod(proj / "a.png", 0o640)
    _ok(tmp_path, 'use plot\nlet f = figure()\nf.line([1, 2])\nf.save("a.png")\n')
    assert (proj / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (os.stat(proj / "a.png").st_mode & 0o777) == 0o640           # an existing file keeps its mode
    before = (proj / "a.png").read_bytes()
    _error(tmp_path, 'use plot\nlet f = figure()\nf.line([1, 2])\nf.legend()\nf.save("a.png")\n')
    assert (proj / "a.png").read_bytes() == before
    assert sorted(os.listdir(proj)) == ["a.png", "prog.apsi"]            # no temporary file left


def test_matplotlib_settings_in_the_project_change_nothing(tmp_path):
    """A matplotlibrc in the current folder (any program there may write one) is not used: plots look
    the same, with matplotlib's defaults."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "matplotlibrc").write_text("axes.facecolor: black\nfigure.facecolor: black\n"
                                       "lines.linewidth: 20\nsvg.fonttype: none\n")
    _ok(tmp_path, 'use plot\nlet f = figure()\nf.line([1, 2], label="<b>")\nf.legend()\nf.save("a.png")\n'
                  'f.save("a.svg")\n')
    img = _png(proj / "a.png")
    assert (img[..., :3] > 0.99).all(axis=-1).mean() > 0.8       # white, not black
    assert 200 < _pixels_near(img, BLUE) < 4000                   # a line 1.5 wide, not 20
    assert "<text" not in (proj / "a.svg").read_text()      # text drawn as paths, the default


def test_confined_runs_leave_nothing_behind_and_say_nothing(tmp_path):
    """Under the kernel's confinement $HOME and /tmp are closed: matplotlib must neither make its
    temporary cache folder in the project nor warn about it. Unconfined, it keeps its font list in the
    user's cache folder, as any matplotlib program does (cli runs both and compares)."""
    home = tmp_path / "home"
    home.mkdir()
    rc, out, err = _run(tmp_path, 'use plot\nlet f = figure()\nf.line([1, 2])\nprint(f.save("a.png"))\n',
                        home=home)
    assert (rc, out, err) == (0, "a.png\n", "")
    assert sorted(os.listdir(tmp_path / "proj")) == ["a.png", "prog.apsi"]
    assert os.listdir(home / ".cache" / "matplotlib")      # from the unconfined run


def test_a_matplotlibrc_at_home_does_not_stop_a_confined_run(tmp_path):
    """Confined, the home folder is closed: a settings file there that matplotlib would try to read
    must not end the run (nor may its temporary folder land in the project)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "matplotlibrc").write_text("lines.linewidth: 20\n")
    rc, out, err = _run(tmp_path, 'use plot\nlet f = figure()\nf.line([1, 2])\nf.save("a.png")\n', home=home)
    assert (rc, out, err) == (0, "", "")
    assert sorted(os.listdir(tmp_path / "proj")) == ["a.png", "prog.apsi"]
    assert _pixels_near(_png(tmp_path / "proj" / "a.png"), BLUE) < 4000    # the default width


def _imports(code, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "apsi", "-e", code], env=env,
                       capture_output=True, text=True, timeout=60, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in p.stderr.splitlines()
            if line.startswith("import time:")}


def test_matplotlib_is_imported_only_when_a_plot_is_drawn(tmp_path):
    assert "matplotlib" not in _imports("print(1)", tmp_path)
    assert "matplotlib" not in _imports('use plot\nuse layers\nlet f = figure()\nf.line([1, 2])\n'
                                        'f.title("t")', tmp_path)
    assert "matplotlib" in _imports('use plot\nlet f = figure()\nf.line([1, 2])\nf.save("a.png")', tmp_path)


def test_python_callers_keep_their_matplotlib_settings(tmp_path):
    import matplotlib

    from apsi_layers.plot import figure
    from apsi_layers.plot.render import draw

    f = figure(width=200, height=100)
    f.line([1.0, 2.0, 4.0])
    with matplotlib.rc_context({"lines.linewidth": 7.0}):
        data = draw(f, "png", "save")
        assert matplotlib.rcParams["lines.linewidth"] == 7.0
    assert data[:4] == b"\x89PNG"


@pytest.mark.parametrize("bad", ["[1, 2, inf]", "[[1, 2], [3]]", "{a: 1}", "[]", "5"])
def test_series_are_checked(tmp_path, bad):
    from apsi_lang.errors import ApsiError
    from apsi_layers.plot import figure

    value = {"[1, 2, inf]": [1.0, 2.0, float("inf")], "[[1, 2], [3]]": [[1, 2], [3]], "{a: 1}": {"a": 1},
             "[]": [], "5": 5}[bad]
    with pytest.raises(ApsiError, match=r"line\(y\): y "):
        figure().line(value)


DOC = (ROOT / "docs" / "plot.md").read_text(encoding="utf-8")


def test_docs_examples_draw_what_they_say(tmp_path):
    import re

    blocks = re.findall(r"```apsi\n(.*?)```", DOC, re.S)
    assert len(blocks) == 2
    for block in blocks:
        _ok(tmp_path, block)
    assert _png(tmp_path / "proj" / "waves.png").shape == (480, 640, 4)
    data = _png(tmp_path / "proj" / "data.png")
    assert data.shape == (400, 900, 4) and _pixels_near(data[:, :450], BLUE) > 1000


def test_docs_list_every_export():
    from apsi_layers.plot import plot_exports
    from apsi_layers.plot.figure import Figure

    assert [n for n in plot_exports() if f"`{n}(" not in DOC] == []
    assert [n for n in Figure.__apsi_attrs__ if f"`{n}(" not in DOC and f"`f.{n}" not in DOC] == []


def test_readme_plot_line_runs(tmp_path):
    import re

    line = re.search(r"apsi -e '(use plot;[^']*)'", (ROOT / "README.md").read_text()).group(1)
    rc, out, err = cli(["-e", line], tmp_path)
    assert rc == 0 and out == '"plot.png"\n', err
    assert _png(tmp_path / "plot.png").shape == (480, 640, 4)


def test_programs_started_later_do_not_inherit_matplotlib_settings(tmp_path):
    """MPLCONFIGDIR is set only while matplotlib loads: a process the program starts (`run`) must not
    get the folder chosen for Apsi's own matplotlib (under confinement, the home folder itself)."""
    code = ("from apsi_layers.plot.render import matplotlib; import os; matplotlib(); "
            "print(matplotlib().get_cachedir() == os.path.join(os.environ['HOME'], '.cache', 'matplotlib'), "
            "'MPLCONFIGDIR' in os.environ)")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (0, "True False\n", "")


def test_hist_takes_any_shape_but_not_a_single_number():
    from apsi_lang.errors import ApsiError
    from apsi_layers.plot import figure

    f = figure()
    f.hist([[1.0, 2.0], [3.0, float("nan")]])
    assert f.panels[0].items[0][1][0].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ApsiError, match=r"hist\(values\): values must be a list of numbers, not an int "
                                        r"\(a number; give a list\)"):
        f.hist(5)


def test_plot_history_wraps_panels_in_rows_of_three(tmp_path, monkeypatch):
    """Four curves: two rows of three panels, the last two places left empty (white)."""
    from apsi_lang import permissions
    from apsi_lang.values import Record
    from apsi_layers.plot import plot_history

    monkeypatch.chdir(tmp_path)
    before = permissions.current()
    permissions.set_current(permissions.Grants(project_root=tmp_path))
    r = Record(history=[3.0, 2.0, 1.5], val_history=[],
               metrics=Record(a=[1, 2, 3], b=[0.5, None, 0.7], c=[float("nan"), 1.0, float("inf")]))
    try:
        assert plot_history(r, "h.png") == "h.png"
    finally:
        permissions.set_current(before)
    img = _png(tmp_path / "h.png")
    assert img.shape == (720, 1440, 4)
    assert (img[380:, 500:, :3] > 0.99).all()                     # the empty places
    assert all(_pixels_near(img[:360, i * 480:(i + 1) * 480], BLUE) > 20 for i in range(3))
    assert _pixels_near(img[360:, :480], BLUE) > 20
    assert _pixels_near(img[360 + 130:360 + 230, 190:330], BLUE) > 5   # c's one finite epoch: a dot
