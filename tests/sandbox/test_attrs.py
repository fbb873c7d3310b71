"""Class 3: attribute access is default-deny, decided at run time by the value's type, whatever was
imported when a file was compiled; record fields stay plain reads."""

import numpy as np
import pytest

from .helpers import cli, refused, run

DANGEROUS = ["numpy()", "resize((9,), refcheck=false)", "view()", "setflags(write=true)", "tobytes()",
             "tofile('x.bin')", "ctypes", "data", "base", "dump('x.pkl')", "getfield('f8')", "flags"]


class Plain:
    """A Python type with public attributes and no allow-list: exposes nothing to Apsi."""

    def __init__(self):
        self.secret = "s"

    def run(self):
        return "ran"


class Listed:
    __apsi_attrs__ = frozenset({"shape", "name"})
    shape = (2,)
    name = "listed"
    hidden = "h"


class SubListed(Listed):
    extra = "e"


@pytest.mark.parametrize("attr", DANGEROUS)
def test_module_compiled_before_nn_cannot_reach_ndarray(project, attr):
    # helpers.apsi is compiled (and run) before `use nn` loads numpy's types
    (project / "helpers.apsi").write_text(f"fn poke(t):\n    return t.{attr}\n")
    arg = "t" if attr == "numpy()" else "raw"      # a tensor, or a raw array handed in by Python
    refused(f"use helpers\nuse nn\nlet t = array([1.0, 2.0])\npoke({arg})", "python",
            extra={"raw": np.arange(2.0)})
    assert not (project / "x.bin").exists() and not (project / "x.pkl").exists()


@pytest.mark.parametrize("attr", DANGEROUS[1:])
def test_raw_arrays_refused_with_or_without_nn_loaded(project, attr):
    refused(f"a.{attr}", "python", extra={"a": np.arange(3.0)})
    refused(f"fn f(x):\n    return x.{attr}\nf(a)", "python", extra={"a": np.arange(3.0)})
    refused(f"let f = fn(x) => x.{attr}\nf(a)", "python", extra={"a": np.arange(3.0)})
    refused(f"[x.{attr} for x in [a]]", "python", extra={"a": np.arange(3.0)})


def test_numpy_subclasses_and_scalars_follow_numpy_lists(project, capsys):
    refused("m.tofile('x.bin')", "python", extra={"m": np.ma.masked_array([1.0])})
    refused("s.tobytes()", "python", extra={"s": np.float64(1.5)})
    run("print(s.item(), m.sum())", extra={"s": np.float64(1.5), "m": np.ma.masked_array([1.0, 2.0])})
    assert capsys.readouterr().out == "1.5 3.0\n"


def test_tensor_allow_list_and_nothing_more(project, capsys):
    run("use nn\nlet t = array([1.0, 2.0])\nprint(t.shape, t.sum().item(), t.tolist())")
    assert capsys.readouterr().out == "(2,) 3.0 [1.0, 2.0]\n"
    for attr in ("data", "tape", "node", "numpy()"):
        refused(f"use nn\nlet t = array([1.0])\nt.{attr}", "python")


def test_types_without_a_list_expose_nothing(project, capsys):
    for attr in ("secret", "run()"):
        refused(f"p.{attr}", "python", extra={"p": Plain()})
        refused(f"fn f(q):\n    return q.{attr}\nf(p)", "python", extra={"p": Plain()})
    run("print(p.secret, p.run())", "python", extra={"p": Plain()})
    assert capsys.readouterr().out == "s ran\n"


def test_declared_lists_are_exact_and_inherited(project, capsys):
    run("print(o.shape, o.name, s.name)", extra={"o": Listed(), "s": SubListed()})
    assert capsys.readouterr().out == "(2,) listed listed\n"
    refused("o.hidden", "python", extra={"o": Listed()})
    refused("s.extra", "python", extra={"s": SubListed()})


@pytest.mark.parametrize("code", [
    "print.name", "int.from_bytes", "int.mro()", "zip([1], [2]).x", "enumerate([1]).x",
    "sorted.name", "(fn() => 1).name", "let f = fn() => 1\nf.name", '"a".upper.name',
    "[].append.name", "let g = fn(x) => x\n[g][0].name",
])
def test_functions_types_and_iterators_expose_nothing(project, code):
    refused(code, "python")


@pytest.mark.parametrize("code", [
    # a nested function rebinds the variable mid-expression: no fast path for it
    "fn f(a):\n    let p = {tofile: 1}\n    fn g():\n        p = a\n        return 0\n"
    "    return g() + p.tofile\nf(a)",
    # rebound in a block before the read
    "fn f(a):\n    let p = {tofile: 1}\n    if true:\n        p = a\n    return p.tofile\nf(a)",
    # a loop variable takes a new type on the second round
    "fn f(xs):\n    for p in xs:\n        p.tofile\nf([{tofile: 1}, a])",
    # +=, unpacking and catch rebind too
    "fn f(a):\n    let p = 0\n    p += a\n    return p.tofile\nf(a)",
    "fn f(a):\n    let p, q = {x: 1}, a\n    return p.x + q.tofile\nf(a)",
    "fn f(a):\n    let p = {tofile: 1}\n    p, p = p, a\n    return p.tofile\nf(a)",
    "[p.tofile for p in [{tofile: 1}, a]]",
    "let p = {tofile: 1}\np = a\np.tofile",
    "fn f(a):\n    let ps = [{q: {tofile: 1}}, {q: a}]\n    for p in ps:\n        p.q.tofile\nf(a)",
])
def test_fast_path_never_skips_a_check(project, code):
    refused(code, "python", extra={"a": np.arange(2.0)})


def test_records_and_data_types_read_as_before(project, capsys):
    run("fn walk(ps):\n    let t = 0\n    for p in ps:\n        t += p.x * p.y\n    return t\n"
        "let ps = [{x: 1, y: 2}, {x: 3, y: 4}]\nprint(walk(ps), [p.x for p in ps], (fn(p) => p.y)(ps[0]))\n"
        "let r = {a: {b: {c: 5}}}\nprint(r.a.b.c, \"a,b\".split(\",\"), (2.5).is_integer())\n"
        "let xs = []\nxs.append(1)\nprint(xs, xs.count(1))")
    assert capsys.readouterr().out == "14 [1, 3] 2\n5 [\"a\", \"b\"] false\n[1] 1\n"
    message = refused("let r = {a: 1}\nr.b")
    assert "record has no field 'b'" in message


def test_with_python_everything_public_is_readable(project):
    run("a.tofile('x.bin')", "python", extra={"a": np.arange(3.0)})
    assert (project / "x.bin").stat().st_size == 24


def test_cli_message(tmp_path):
    (tmp_path / "t.apsi").write_text("use nn\nlet t = array([1.0])\nprint(t.numpy())\n")
    code, out, err = cli(["t.apsi"], tmp_path)
    assert code == 1 and "'.numpy' of a tensor is not available to Apsi code" in err
    assert "--allow-python" in err and "File \"" not in err
