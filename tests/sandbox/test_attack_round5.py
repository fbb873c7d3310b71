"""Round 5 of the red team: each test is one finding, reproduced as a user or an attacker meets it
(real programs through `apsi`, wall on and off where the kernel's confinement could matter)."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from .helpers import ROOT, caught_but_the_last, cli, refused, run, said_by_each


def apsi(args, cwd, stdin=None):
    """`python -m apsi ARGS` once (for commands the kernel's wall does not touch: trust, setup)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


# --- an apsi.toml that is a link: what `apsi trust` shows is what runs get -------------------------

def test_a_linked_apsi_toml_grants_what_apsi_trust_showed(tmp_path):
    """A cloned repository's apsi.toml is a link to a/b/c.toml holding read = ["../.."]. `apsi trust`
    showed that as the repository itself (resolved from c.toml's folder, a/b), so the user trusted a
    harmless-looking file; runs resolved it from the link's folder: two levels above the repository,
    the user's home, where ../secret/key.txt was then readable without any flag."""
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text("TOPSECRET")
    repo = tmp_path / "home" / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    (repo / "a" / "b" / "c.toml").write_text('[run]\nread = ["../.."]\n')
    (repo / "apsi.toml").symlink_to("a/b/c.toml")
    (repo / "prog.apsi").write_text('print(read_text("../../secret/key.txt"))\n')
    shown = apsi(["trust", "--yes", "."], repo)
    assert shown.returncode == 0, shown.stderr
    assert f"read = ['{repo}']" in shown.stdout, shown.stdout      # what the user was shown …
    code, out, err = cli(["prog.apsi"], repo)
    assert "TOPSECRET" not in out                                   # … is all that is granted
    assert code == 1 and "needs permission 'read'" in err, err


# --- the installed modules are found from any folder ----------------------------------------------

def test_use_nn_works_where_the_current_folder_holds_the_python_environment():
    """The README's first command from a fresh clone with a `.venv` inside it (`python -m venv .venv`)
    said `use layers: no module named 'layers' … (installed: none)`: the search for installed modules
    left out everything under the current folder, the venv's site-packages too. So did `apsi -e` in a
    container's default folder, /."""
    code, out, err = cli(["-e", "use nn\nprint(sum(ones(3)))"], "/")
    assert code == 0 and out == "3.0\n", err


# --- Python environments without pyvenv.cfg ---------------------------------------------------------

KERNEL = '{"argv": ["sh", "-c", "echo planted"], "display_name": "Python 3", "language": "python"}'


def test_a_conda_environment_inside_the_project_is_protected_whole(project):
    """`conda create -p ./env` makes an environment with conda-meta/ and no pyvenv.cfg. A flag-less
    program rewrote env/share/jupyter/kernels/python3/kernel.json (data by name: .json, no tool name),
    and the next notebook opened with that environment's Jupyter ran its argv."""
    env = project / "env"
    (env / "conda-meta").mkdir(parents=True)
    (env / "share" / "jupyter" / "kernels" / "python3").mkdir(parents=True)
    for name in ("env/share/jupyter/kernels/python3/kernel.json", "env/etc/jupyter/x.json"):
        message = refused(f"write_text({name!r}, {KERNEL!r})", "write", match="Python environment")
        assert f"--allow-write={name}" in message
    assert not (env / "share" / "jupyter" / "kernels" / "python3" / "kernel.json").exists()


def test_the_installation_apsi_runs_from_is_protected_whole_inside_the_project(project, monkeypatch):
    """A Python installed into the project (a conda prefix, `--prefix=./py`) has folders beside
    site-packages that tools run: its share/jupyter/kernels (where `apsi kernel` may install its own
    kernel.json) and etc/jupyter."""
    prefix = project / "py"
    (prefix / "share" / "jupyter" / "kernels" / "apsi").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    refused(f"write_text('py/share/jupyter/kernels/apsi/kernel.json', {KERNEL!r})", "write",
            match="Python environment Apsi runs in")
    run('write_text("notes.txt", "x")')                # the project itself stays writable


def test_a_project_inside_the_installation_is_not_protected_whole(project, monkeypatch):
    monkeypatch.setattr(sys, "prefix", str(project.parent))      # a project under /usr/local, say
    run('write_text("notes.txt", "x")')


# --- NumPy's warnings ------------------------------------------------------------------------------

@pytest.mark.parametrize("code, shown", [
    ("print(prod(ones(400) * 10))", "inf\n"),
    ("print(cumsum(ones(3) * 1e308))", "tensor([1.e+308,     inf,     inf])\n"),
    ("print(logspace(0, 400, 3))", "tensor([1.e+000, 1.e+200,     inf])\n"),
    ("print(average(ones(3), weights=[1e308, 1e308, 1e308]))", "nan\n"),
])
def test_numpy_warnings_do_not_reach_the_user(tmp_path, code, shown):
    """These printed NumPy's RuntimeWarning on stderr: the path of the Python installation
    (…/site-packages/numpy/_core/fromnumeric.py:83) and a line of NumPy's source. The filter for
    warnings named apsi_layers' modules only; NumPy's Python functions warn from their own."""
    code_, out, err = cli(["-e", f"use nn\n{code}"], tmp_path)
    assert code_ == 0 and out == shown, err
    assert err == "", err


# --- polygamma of higher orders (issue 35) -----------------------------------------------------------

POLYGAMMA_CASES = [(20, -2.5), (30, -2.5), (12, -7.25), (80, 25.0), (120, 25.0), (60, 3.0)]


def test_polygamma_of_higher_orders_is_scipys(tmp_path):
    """The series ran from x >= 20 whatever n (80 at 25: 1e-5 off, 120 at 25: 0.6%). mpmath at high
    precision is the reference: SciPy itself is wrong at -2.5 for even n >= 6 (n = 20: -4.2e8 where
    mpmath says -9.18e6, n = 30 likewise), so SciPy is held to the cases it gets right."""
    special = pytest.importorskip("scipy.special")
    mpmath = pytest.importorskip("mpmath")
    lines = "\n".join(f"print(repr(float(polygamma({n}, {x}))))" for n, x in POLYGAMMA_CASES)
    code, out, err = cli(["-e", f"use nn\n{lines}"], tmp_path)
    assert code == 0, err
    for (n, x), got in zip(POLYGAMMA_CASES, out.split()):
        with mpmath.workdps(200):
            want = float(mpmath.polygamma(n, x))
        assert float(got) == pytest.approx(want, rel=1e-12), (n, x, got, want)
        if x > 0 or n % 2:
            assert float(got) == pytest.approx(special.polygamma(n, x), rel=1e-12), (n, x, got)


def test_polygamma_beyond_the_float_range_is_infinite_as_scipys(tmp_path):
    code, out, err = cli(["-e", "use nn\nprint(polygamma(200, 2.0))\nprint(polygamma(10**9, 2.0))"],
                         tmp_path, timeout=20)
    assert code == 0 and out == "-inf\n-inf\n", err


# --- numbers too large for a float, given to fit's options ---------------------------------------------

HEAD = ("use layers\nuse nn\nlet x = randn(40, 2, seed=1)\nlet y = concat([zeros(20), ones(20)])\n"
        "let net = mlp(2, 2, hidden=[8])\n")
FIT = "fit(net, net.init(seed=0), x, y, loss=\"cross_entropy\", epochs=1, {})"
TOO_LARGE = [
    ("class_weight=[10**400, 1]", "class_weight[0] is 1000"),
    ("reduce_lr={min_lr: 10**400}", "too large for a float"),
    ("reduce_lr={min_delta: 10**400}", "too large for a float"),
    ("early_stopping={min_delta: 10**400}", "too large for a float"),
    ("clip=10**400", "too large for a float"),
]


@pytest.fixture(scope="module")
def too_large(tmp_path_factory):
    """Every option's fit in one program (helpers.caught_but_the_last): ({option: what was said}, exit
    code)."""
    folder = tmp_path_factory.mktemp("too-large")
    fits = [FIT.format(option) for option, _ in TOO_LARGE]
    (folder / "f.apsi").write_text(HEAD + caught_but_the_last(fits))
    code, out, err = cli(["f.apsi"], folder)
    return said_by_each([option for option, _ in TOO_LARGE], out, err), code


@pytest.mark.parametrize("option, said", TOO_LARGE)
def test_an_int_too_large_for_a_float_is_said_in_apsis_words(too_large, option, said):
    """These said Python's 'int too large to convert to float' (class_weight: NumPy's "ufunc 'isfinite'
    not supported for the input types, and the inputs could not be safely coerced …"): no what-to-do."""
    words, code = too_large
    err = words[option]
    assert code == 1 and said in err, err
    assert "convert to float" not in err and "ufunc" not in err and "coerced" not in err, err


# --- JSON files that tools run commands from ---------------------------------------------------------

@pytest.mark.parametrize("name, planted", [
    ("vercel.json", '{"buildCommand": "sh -c planted", "devCommand": "sh -c planted"}'),
    ("wrangler.json", '{"name": "w", "main": "a.js", "build": {"command": "sh -c planted"}}'),
    ("devbox.json", '{"packages": [], "shell": {"init_hook": ["sh -c planted"]}}'),
    ("dprint.json", '{"plugins": ["https://example.com/planted.json@0123456789abcdef"]}'),
    ("tauri.conf.json", '{"build": {"beforeDevCommand": "sh -c planted"}}'),
    ("rush.json", '{"rushVersion": "5.0.0", "eventHooks": {"preRushInstall": ["sh -c planted"]}}'),
    ("command-line.json", '{"commands": [{"commandKind": "global", "shellCommand": "sh -c planted"}]}'),
    ("cmake-variants.json", '{"x": {"default": "a", "choices": {"a": {"short": "a", "settings": '
                            '{"CMAKE_PROJECT_INCLUDE": "notes.txt"}}}}}'),
    ("CMakeSettings.json", '{"configurations": [{"name": "a", "cmakeCommandArgs": "-P notes.txt"}]}'),
])
def test_json_a_tool_runs_commands_from_is_protected(project, name, planted):
    """Data by their suffix, and no name the allow-list knew: a flag-less program wrote each, and the
    tool that finds it in the folder runs the command in it (the sources are in docs/permissions.md)."""
    for where in (name, f"sub/{name}"):
        (project / "sub").mkdir(exist_ok=True)
        message = refused(f"write_text({where!r}, {planted!r})", "write", match="protected")
        assert f"--allow-write={where}" in message
    assert not (project / name).exists()


# --- a model file's functions only compute -----------------------------------------------------------

MAKE_MODEL = """use nn
use layers
fn evil(x):
    if len(x) == 5:
        {act}
    return x
let net = sequential([lambda_layer(evil), dense(1)], inputs=2)
save_model("m.apsim", net, net.init(seed=0))
"""
USE_MODEL = """use nn
use layers
let m = load_model("m.apsim")
print(predict(m.net, m.params, ones([5, 2])))
"""


ACTS = {
    'save_params("data.npz", {w: zeros(1)})': "rewrites",
    'save_model("other.apsim", dense(1), {})': "rewrites",
    'print("READ", load_csv("secret.csv", header=false))': "reads",
    'print("READ", load_params("weights.npz"))': "reads",
}


def _make_and_use(folder, act):
    """A model file made with `act` in its function, then used in a user's project; what the use said
    and the user's folder."""
    maker = folder / "maker"
    maker.mkdir()
    (maker / "make.apsi").write_text(MAKE_MODEL.format(act=act))
    code, out, err = cli(["make.apsi"], maker)
    assert code == 0, err
    user = folder / "user"
    user.mkdir()
    (user / "m.apsim").write_bytes((maker / "m.apsim").read_bytes())
    (user / "use.apsi").write_text(USE_MODEL)
    (user / "secret.csv").write_text("4242\n")
    (user / "data.npz").write_bytes(b"the user's data")
    return cli(["use.apsi"], user), user


@pytest.fixture(scope="module")
def model_uses(tmp_path_factory):
    """Every act's make and use, two acts at a time, each in a folder of its own (a run is mostly its
    child's start-up, which leaves a core idle: suite time); an act's error is raised by its test."""
    def one(numbered):
        i, act = numbered
        try:
            return _make_and_use(tmp_path_factory.mktemp(f"act{i}"), act)
        except Exception as e:          # (said by the test of that act, not by every test)
            return e

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(ACTS, pool.map(one, enumerate(ACTS))))


@pytest.mark.parametrize("act, harm", ACTS.items())
def test_a_model_files_function_touches_no_file(model_uses, act, harm):
    """A model file's lambda_layer runs as Apsi source 'under no permissions', and a builtin that
    touches files is refused when it is loaded, but nn's and layers' exports were not checked: with no
    flag, reading and writing data files inside the project needs none. A downloaded model, used by a
    flag-less program (or served: `apsi serve` returns its outputs to whoever asks), read the user's
    project files and overwrote their data files whenever it ran."""
    if isinstance(model_uses[act], Exception):
        raise model_uses[act]
    (code, out, err), user = model_uses[act]
    assert code == 1 and "a model file's function may only compute" in err, err
    assert "READ" not in out and "4242" not in out
    assert (user / "data.npz").read_bytes() == b"the user's data"
    assert sorted(p.name for p in user.iterdir()) == ["data.npz", "m.apsim", "secret.csv", "use.apsi"]


# --- names that HFS+ reads as a tool's -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["package\u200c.json", "CMakeLists\u200d.txt", "test\u200e_x.txt",
                                  "requirements\ufeff.txt", "\u200c.envrc.txt", "node\u206a_modules/x.json"])
def test_names_with_code_points_hfs_plus_ignores_are_the_names_without_them(project, name):
    """On HFS+ (macOS before APFS, external disks), "package\\u200c.json" is package.json: HFS+ leaves
    such code points out of names it compares (git refuses .git spelled so: CVE-2014-9390). The rule
    compared the name with them in."""
    (project / "node\u206a_modules").mkdir()
    message = refused(f"write_text({name!r}, 'x')", "write", match="protected")
    assert "--allow-write=" in message


# --- a module file that cannot be read -----------------------------------------------------------------

def test_a_module_that_is_not_utf8_does_not_tell_the_program_where_its_project_is(tmp_path):
    """`use x` of an x.apsi that is not UTF-8 said "cannot read /home/…/project/x.apsi: 'utf-8' codec
    can't decode byte 0xff …": a program that caught it learned its project's absolute path (the home
    folder's name) with no permission, and the words were Python's."""
    (tmp_path / "x.apsi").write_bytes(b"\xff\xfe let a = 1\n")
    (tmp_path / "p.apsi").write_text('try:\n    use x\ncatch e:\n    print(e.message)\n')
    code, out, err = cli(["p.apsi"], tmp_path)
    said = "use x: x.apsi is not UTF-8 text (byte 0xff at position 0); save it as UTF-8\n"
    assert code == 0 and out == said, err
    assert str(tmp_path) not in out + err


def test_a_program_that_is_not_utf8_is_said_in_apsis_words(tmp_path):
    (tmp_path / "bad.apsi").write_bytes(b"\xff\xfeprint(1)\n")
    code, out, err = cli(["bad.apsi"], tmp_path)
    said = "apsi: 'bad.apsi' is not UTF-8 text (byte 0xff at position 0); save it as UTF-8\n"
    assert code == 2 and err == said, err
