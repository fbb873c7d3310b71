"""The reproducers of issue 7 for classes 1, 2, 3 and 6, one test per example the issue lists, each
run as written, with no permission flags. (Variations of each class are in tests/sandbox/; classes
4, 5, 7 and 8 are in tests/test_sandbox_files.py.)"""

import re

import numpy as np
import pytest
from sandbox.helpers import caught_but_the_last, cli, refused, refused_at_compile, run, said_by_each

from apsi_lang import permissions, program
from apsi_lang.values import Record

UNBOUND = "is used before it is assigned"
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
PY_TEXT = re.compile(r"<(class|function|built-in|bound method|module) ")


@pytest.fixture
def project(tmp_path, monkeypatch):
    before = permissions.current()
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    yield proj
    permissions.set_current(before)


# ---- class 1: Python's builtins are never reachable by name ------------------------------------

@pytest.mark.parametrize("code, name", [
    ('open("/etc/passwd")\nif false:\n    let open = 0', "open"),                     # open(...) first
    ("if false:\n    fn license():\n        pass\nlicense()", "license"),           # fn in a dead block
    ("if false:\n    let breakpoint = 1\nbreakpoint()", "breakpoint"),              # let in a dead block
    ("fn f():\n    return getattr\nlet g = f()\nlet getattr = 1", "getattr"),        # fn returning it
    ("try:\n    pass\ncatch vars:\n    pass\nvars()", "vars"),                       # catch that never ran
    ("for globals in []:\n    pass\nglobals()", "globals"),                         # for over nothing
    ('if false:\n    let eval = 0\neval("1 + 1")', "eval"),                          # eval
    ('if false:\n    let compile = 0\ncompile("1", "x", "eval")', "compile"),        # compile
])
def test_class1_declared_name_read_before_bound(project, code, name):
    refused(code, match=f"'{name}' {UNBOUND}")


def test_class1_frames_hold_only_apsi_names():
    from apsi_lang.builtins import BUILTINS

    ns = program.new_namespace(".")
    assert all(n in BUILTINS or n.startswith("_") for n in ns["__builtins__"])


def test_class1_through_e_and_use_helpers(project):
    code, out, err = cli(["-e", 'print(open("/etc/hostname").read())\nif false:\n    let open = 0'], project)
    assert code == 1 and f"'open' {UNBOUND}" in err and out == ""
    (project / "helpers.apsi").write_text("fn leak():\n    return eval\nif false:\n    let eval = 0\n")
    (project / "main.apsi").write_text('use helpers\nprint(leak()("1 + 1"))\n')
    code, out, err = cli(["main.apsi"], project)
    assert code == 1 and f"'eval' {UNBOUND}" in err and out == ""


# ---- class 2: no NumPy protocol on an Apsi-made value ------------------------------------------

def test_class2_unflatten_makes_no_dunder_field(project):
    refused('use nn\nunflatten([("__array_interface__", 0)])', match="starts with '_'")


def test_class2_tree_map_and_maketrans(project):
    refused('"".maketrans("", "")', "python")
    made_by_python = Record(**{"__array_interface__": 0, "w": 1.0})
    refused('use nn\ntree_map(fn(v) => "".maketrans("", ""), r)', extra={"r": made_by_python})


def test_class2_take_along_never_reads_protocols(project):
    # the record, as Python code could still make it: the value never reaches np.asarray
    # unchecked, and a record never speaks the protocol
    evil = Record(**{"__array_interface__": {"data": (8, False), "shape": (1,), "typestr": "<f8",
                                             "version": 3}})
    assert not hasattr(evil, "__array_interface__")
    refused("use nn\ntake_along(array([1.0]), r, 0)", extra={"r": evil}, match="take_along")
    refused("use nn\ntake_along(array([1.0]), [r], 0)", extra={"r": evil}, match="take_along")


def test_class2_no_address_from_str_of_a_function(project, capsys):
    run("let s = str(getenv)\nprint(s, repr(print), f\"{getenv}\")\nfn f(): pass\nprint(f, [f])")
    out = capsys.readouterr().out
    assert out == "<fn getenv> <fn print> <fn getenv>\n<fn f> [<fn f>]\n"


def test_class2_load_params_and_literals_make_no_underscore_field(project):
    np.savez(project / "evil.npz", **{"__array_interface__": np.zeros(2)})
    refused('use nn\nload_params("evil.npz")', match="__array_interface__")
    refused_at_compile("let r = {__array_interface__: 1}")


# ---- class 3: attribute access is default-deny at run time -------------------------------------

ATTRS = ["numpy()", "resize((9,), refcheck=false)", "view()", "setflags(write=true)", "tobytes()",
         "tofile(\"x.bin\")"]


@pytest.fixture(scope="module")
def compiled_before(tmp_path_factory):
    """One program for every attribute (helpers.caught_but_the_last): a module compiled before `use nn`
    has a function per attribute, called in turn. ({attribute: what was said}, exit code, folder)."""
    project = tmp_path_factory.mktemp("class3")
    pokes = "".join(f"fn poke{i}(t):\n    return t.{a}\n" for i, a in enumerate(ATTRS))
    (project / "helpers.apsi").write_text(pokes)
    calls = [f"poke{i}(array([1.0, 2.0]))" for i in range(len(ATTRS))]
    (project / "main.apsi").write_text("use helpers\nuse nn\n" + caught_but_the_last(calls))
    code, out, err = cli(["main.apsi"], project)
    return said_by_each(ATTRS, out, err), code, project


@pytest.mark.parametrize("attr", ATTRS)
def test_class3_module_compiled_before_use_nn(compiled_before, attr):
    said, code, project = compiled_before
    assert code == 1 and "is not available to Apsi code" in said[attr] and "--allow-python" in said[attr]
    assert not (project / "x.bin").exists()


@pytest.mark.parametrize("attr", ["numpy()", "data", "resize((9,), refcheck=false)", "view()"])
def test_class3_use_nn_inside_an_if(project, attr):
    refused(f"if true:\n    use nn as n\nlet t = n.array([1.0, 2.0])\nt.{attr}", "python")


# ---- class 6: no program crashes the interpreter ------------------------------------------------

def test_class6_sorted_key_recursion(project):
    (project / "deep.apsi").write_text("fn f(x):\n    return sorted([x], key=f)\nf(0)\n")
    code, out, err = cli(["deep.apsi"], project)
    assert code == 1 and "too many nested calls" in err


def test_class6_tuple_a_million_deep_as_a_map_key(project):
    (project / "deep.apsi").write_text(
        "let t = ()\nfor i in range(1000000):\n    t = (t,)\nlet m = {:}\nm[t] = 1\nprint(len(m))\n"
        "print(t)\n")
    code, out, err = cli(["deep.apsi"], project, timeout=120)
    assert code == 1 and out == "1\n" and "too many nested calls" in err


def test_no_python_text_in_any_of_these_outputs(project):
    code, out, err = cli(["-e", "use nn\nprint(getenv, zip([1], [2]))\nzeros(print)"], project)
    assert code == 1 and not ADDRESS.search(out + err) and not PY_TEXT.search(out + err), out + err
