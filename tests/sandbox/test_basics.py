"""Escape attempts: each is refused without its permission and, where it should be, allowed with it.

Most run in-process (compile_source + run with explicit Grants); the exact messages users meet and
apsi.toml handling are checked through the real CLI.
"""

import os
import sys

import pytest

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from tests.conftest import trust_toml

from .helpers import cli, refused, refused_at_compile, run

# ---- Python internals: names and attributes starting with '_' ---------------------------------

@pytest.mark.parametrize("code", [
    "let x = 1; x.__class__",
    "().__class__.__bases__",
    "let x = 1; x.__class__.__mro__[-1].__subclasses__()",
    "let _hidden = 1",
    "print.__self__",
    "print.__module__",
    "let xs = []; xs.append.__self__",
    "__import__('os')",
    "__builtins__",
    "let f = fn(x) => x; f.__globals__",
    "let f = fn(x) => x; f.__code__",
    "print(sep=' ', __kw=1)",
    "let r = {__dict__: 1}",
    "try:\n    error('x')\ncatch e:\n    e.__traceback__",
    "try:\n    error('x')\ncatch e:\n    e.__cause__",
])
def test_underscore_names_never_compile(project, code):
    # not even with every permission: these are refused by the compiler, before anything runs
    refused_at_compile(code, *permissions.PERMISSIONS, match="starting with '_'")


@pytest.mark.parametrize("name", ["getattr", "setattr", "vars", "globals", "locals", "eval", "exec",
                                  "open", "compile", "dir", "object", "breakpoint", "memoryview",
                                  "classmethod", "super", "delattr", "bytes", "dict", "frozenset", "id"])
def test_getattr_like_builtins_are_undefined(project, name):
    # (`help` is Apsi's own, apsi_lang/help.py: it prints documentation text, never Python's pydoc)
    refused_at_compile(f"{name}", "python", match=f"undefined name '{name}'")


@pytest.mark.parametrize("module", ["os", "sys", "subprocess", "builtins", "pickle"])
def test_use_does_not_import_python_modules(project, module):
    refused_at_compile(f"use {module}", *permissions.PERMISSIONS, match=f"no module named '{module}'")


def test_builtins_cannot_be_replaced(project):
    refused_at_compile("print = fn(x) => x", match="cannot assign to 'print'")
    refused("len.x = 1", "python")


# ---- type() and reflection ------------------------------------------------------------------

def test_type_returns_a_name_not_a_class(project, capsys):
    run('print(type(1), type("s"), type(none), type({a: 1}), type(print), type(1) == "int")')
    assert capsys.readouterr().out == "int str none record function true\n"
    message = refused('type(1)("5")')
    assert "not a function" in message


def test_mro_of_types(project, capsys):
    refused("int.mro()", "python")
    refused("let r = {a: 1}; [].copy.mro", "python")
    run("print(len(int.mro()))", "python")
    assert capsys.readouterr().out == "2\n"


# ---- string formatting --------------------------------------------------------------------------

def test_str_format_walks_attributes_so_it_is_refused(project, capsys):
    refused('"{0.__class__}".format(1)', "python", match="'.format' of a str")
    refused('"{0.__class__.__mro__}".format(print)', "python")
    run('print("{0.__class__.__name__}".format(1))', "python")
    assert capsys.readouterr().out == "int\n"


def test_format_map_is_refused(project):
    refused('"{x.__class__}".format_map({x: 1})', "python", match="'.format_map' of a str")


def test_fstring_specs_cannot_reach_attributes(project, capsys):
    # a spec is text given to format(value, spec): it cannot name attributes
    message = refused('let s = "{0.__class__}"; f"{1:{s}}"')
    assert "format specifier" in message.lower()
    refused_at_compile('f"{1!a}"')      # !r and !s are Apsi's repr/str (values.show), never Python's
    refused_at_compile('f"{(1).__class__}"', match="starting with '_'")
    run('let w = 6; print(f"[{42:>{w}}]")')
    assert capsys.readouterr().out == "[    42]\n"


# ---- exceptions, tracebacks, frames, generators ---------------------------------------------

@pytest.mark.parametrize("attr", ["args", "with_traceback", "add_note"])
def test_caught_errors_expose_only_message_and_kind(project, attr, capsys):
    code = f"try:\n    1 / 0\ncatch e:\n    print(e.message, e.kind)\n    e.{attr}"
    refused(code, "python", match=f"'.{attr}' of an error")
    assert capsys.readouterr().out == "division by zero ZeroDivisionError\n"
    run(code, "python")     # with python, full access


def _generator():
    yield 1


def test_generator_and_frame_attributes_are_refused(project):
    gen = _generator()
    frame = sys._getframe()
    tb = None
    try:
        raise ValueError("x")
    except ValueError as e:
        tb = e.__traceback__
    refused("g.gi_frame", "python", extra={"g": gen})
    refused("g.gi_code", "python", extra={"g": gen})
    refused("fr.f_globals", "python", extra={"fr": frame})
    refused("fr.f_back", "python", extra={"fr": frame})
    refused("t.tb_frame", "python", extra={"t": tb})
    refused("g.send(none)", "python", extra={"g": gen})
    assert run("let x = g.gi_frame.f_globals", "python", extra={"g": gen})["x"] is not None


# ---- attribute setting ----------------------------------------------------------------------

def test_only_records_take_field_stores(project, capsys):
    run("let r = {a: 1}; r.a = 5; r.a += 1; print(r)")
    assert capsys.readouterr().out == "{a: 6}\n"
    # a record's fields are fixed (a typo must not add one): the message says how to add one
    with pytest.raises(ApsiError, match=r"record has no field 'b' \(its fields: a\).*\{\.\.\.r, b: …\}"):
        run("let r = {a: 1}; r.b = 2")
    refused('let s = "x"; s.size = 1', "python", match="only record fields can be assigned")
    refused("print.x = 1", "python")
    refused("let f = fn() => 1; f.extra = 1", "python")
    refused("let f = fn() => 1; f.extra += 1", "python")
    ns = run("let f = fn() => 1; f.extra = 5", "python")
    assert ns["f"].extra == 5


# ---- numpy arrays ----------------------------------------------------------------------------

@pytest.mark.parametrize("attr", ["tofile('x.bin')", "dump('x.pkl')", "dumps()", "ctypes", "data", "base",
                                  "view()", "setflags(write=true)"])
def test_numpy_array_file_writers_and_raw_memory_are_refused(project, attr):
    np = pytest.importorskip("numpy")
    a = np.arange(3.0)
    refused(f"a.{attr}", "python", extra={"a": a})
    assert not (project / "x.bin").exists() and not (project / "x.pkl").exists()


def test_numpy_array_harmless_attributes_work(project, capsys):
    np = pytest.importorskip("numpy")
    run("print(a.shape, a.sum(), a.tolist())", extra={"a": np.arange(3.0)})
    assert capsys.readouterr().out == "(3,) 3.0 [0.0, 1.0, 2.0]\n"


def test_numpy_with_python_is_fully_usable(project):
    pytest.importorskip("numpy")
    refused('pyimport("numpy")', "python")
    run('let np = pyimport("numpy"); np.arange(3.0).tofile("x.bin"); np.zeros(2).dump("x.pkl")',
        "python")
    assert (project / "x.bin").stat().st_size == 24 and (project / "x.pkl").exists()


# ---- pickle, subprocess, environment, network ------------------------------------------------

@pytest.mark.parametrize("module", ["pickle", "subprocess", "os", "numpy", "ctypes", "importlib"])
def test_pyimport_needs_python(project, module):
    refused(f'pyimport("{module}")', "python", match=f'pyimport("{module}") needs permission \'python\'')


def test_np_load_and_pickle_with_python(project, capsys):
    pytest.importorskip("numpy")
    run('let np = pyimport("numpy"); np.save("a.npy", np.arange(2)); print(np.load("a.npy").tolist())\n'
        'let pickle = pyimport("pickle"); print(pickle.loads(pickle.dumps([1, 2])))', "python")
    assert capsys.readouterr().out == "[0, 1]\n[1, 2]\n"


def test_getenv_needs_env(project, monkeypatch, capsys):
    monkeypatch.setenv("APSI_SANDBOX_VAR", "v1")
    refused('getenv("APSI_SANDBOX_VAR")', "env", match="getenv(\"APSI_SANDBOX_VAR\") needs permission 'env'")
    run('print(getenv("APSI_SANDBOX_VAR"))', "env")
    assert capsys.readouterr().out == "v1\n"


def test_run_command_needs_run(project, capsys):
    refused('run_command(["echo", "hi"])', "run", match="needs permission 'run'")
    run(f'let r = run_command(["{sys.executable}", "-c", "print(7)"]); print(r.code, r.stdout.strip())',
        "run")
    assert capsys.readouterr().out == "0 7\n"


def test_fetch_text_needs_net(project):
    refused('fetch_text("https://example.com")', "net", match="needs permission 'net'")


def test_fetch_text_is_not_a_way_to_read_files(project):
    # net grants the network, not the file system: file:// URLs stay under 'read'
    secret = (project.parent / "outside" / "secret.txt").resolve()
    message = refused(f'fetch_text("file://{secret}")', None, "net")
    assert "http" in message


# ---- files: the project folder and outside it -----------------------------------------------

def test_inside_the_project_needs_nothing(project, capsys):
    run('write_text("out.txt", "hi")\n'
        'print(read_text("out.txt"), read_text("inside.txt"), exists("out.txt"))')
    assert capsys.readouterr().out == "hi inside true\n"


def test_reading_outside_needs_read(project, capsys):
    refused('read_text("../outside/secret.txt")', "read", match="is outside the project folder")
    refused('exists("../outside/secret.txt")', "read")
    run('print(read_text("../outside/secret.txt"))', "read")
    run('print(read_text("../outside/secret.txt"))', read=[project.parent / "outside"])
    assert capsys.readouterr().out == "secret\nsecret\n"
    refused('read_text("/etc/hostname")', "read", read=[project.parent / "outside"])


def test_writing_outside_needs_write(project):
    target = project.parent / "outside" / "new.txt"
    refused(f'write_text("{target}", "x")', "write")
    refused('write_text("../outside/new.txt", "x")', "write", "read")   # read does not grant write
    assert not target.exists()
    run('write_text("../outside/new.txt", "x")', "write")
    assert target.read_text() == "x"


def test_dotdot_cannot_leave_the_project(project):
    (project / "sub").mkdir()
    refused('read_text("sub/../../outside/secret.txt")', "read")
    refused('write_text("sub/../../outside/evil.txt", "x")', "write")
    assert not (project.parent / "outside" / "evil.txt").exists()


def test_symlinks_cannot_leave_the_project(project):
    os.symlink(project.parent / "outside", project / "link")
    os.symlink(project.parent / "outside" / "secret.txt", project / "secret_link.txt")
    refused('read_text("link/secret.txt")', "read")
    refused('read_text("secret_link.txt")', "read")
    refused('write_text("link/evil.txt", "x")', "write")
    assert not (project.parent / "outside" / "evil.txt").exists()
    assert run('let t = read_text("secret_link.txt")', "read")["t"] == "secret"


# ---- the CLI: exact messages, flags and apsi.toml ---------------------------------------------

def test_cli_denial_message_names_the_permission_and_how_to_grant_it(tmp_path):
    (tmp_path / "t.apsi").write_text('let torch = pyimport("torch")\n')
    code, out, err = cli(["t.apsi"], tmp_path)
    assert code == 1 and out == ""
    assert err.endswith("t.apsi:1:13: error: pyimport(\"torch\") needs permission 'python': run with "
                        "--allow-python (or [run] allow = [\"python\"] in apsi.toml)\n")
    assert "Traceback (most recent call last):\n  File" not in err


def test_cli_flags_grant(tmp_path):
    (tmp_path / "t.apsi").write_text('print(pyimport("math").floor(2.5), getenv("APSI_T"))\n')
    assert cli(["--allow-python", "--allow-env", "t.apsi"], tmp_path, {"APSI_T": "x"})[:2] == (0, "2 x\n")
    assert cli(["run", "-A", "t.apsi"], tmp_path, {"APSI_T": "y"})[:2] == (0, "2 y\n")
    assert cli(["--allow-python", "t.apsi"], tmp_path)[0] == 1      # env still missing


def test_apsi_toml_grants(tmp_path):
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d.txt").write_text("data")
    (proj / "apsi.toml").write_text('[run]\nallow = ["python"]\nread = ["../data"]\n')
    trust_toml(proj / "apsi.toml")
    (proj / "src" / "t.apsi").write_text('print(pyimport("math").pi > 3, read_text("../data/d.txt"))\n')
    assert cli(["src/t.apsi"], proj) == (0, "true data\n", "")


def test_apsi_toml_unknown_keys_warn(tmp_path):
    (tmp_path / "apsi.toml").write_text('[run]\nallow = []\ncolour = "red"\n[extra]\nx = 1\n')
    trust_toml(tmp_path / "apsi.toml")
    (tmp_path / "t.apsi").write_text('print("ran")\n')
    code, out, err = cli(["t.apsi"], tmp_path)
    assert (code, out) == (0, "ran\n")
    assert "warning" in err and "run.colour" in err and "[extra]" in err and "apsi.toml" in err


@pytest.mark.parametrize("toml, key", [
    ('[run]\nallow = "python"\n', "run.allow"),
    ('[run]\nallow = ["pyhton"]\n', "run.allow"),
    ('[run]\nread = [1]\n', "run.read"),
    ('[run]\nwrite = "x"\n', "run.write"),
    ('run = 3\n', "run"),
    ('[pkg]\ntorch_index = 5\n', "pkg.torch_index"),
])
def test_apsi_toml_bad_values_are_errors_naming_file_and_key(tmp_path, toml, key):
    (tmp_path / "apsi.toml").write_text(toml)
    trust_toml(tmp_path / "apsi.toml")
    (tmp_path / "t.apsi").write_text('print("ran")\n')
    code, out, err = cli(["t.apsi"], tmp_path)
    assert (code, out) == (2, "")
    assert str(tmp_path / "apsi.toml") in err and key in err, err


def test_apsi_toml_invalid_toml(tmp_path):
    (tmp_path / "apsi.toml").write_text('[run\nallow = \n')
    trust_toml(tmp_path / "apsi.toml")
    (tmp_path / "t.apsi").write_text('print("ran")\n')
    code, out, err = cli(["t.apsi"], tmp_path)
    assert (code, out) == (2, "") and "apsi.toml" in err and "TOML" in err
