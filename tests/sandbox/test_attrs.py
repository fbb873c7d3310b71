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


@pytest.mark.parametrize("attr", ["numpy()", "data", "tape", "resize((9,), refcheck=false)", "view()",
                                  "setflags(write=true)", "tobytes()", "ctypes", "base"])
def test_use_nn_inside_an_if_or_a_function_of_a_module(project, attr):
    # nn is loaded only when the line runs: what the compiler knew then decides nothing
    refused(f"if true:\n    use nn as n\nlet t = n.array([1.0, 2.0])\nt.{attr}", "python")
    refused(f"if true:\n    use nn as n\nfn poke(t):\n    return t.{attr}\npoke(n.array([1.0]))", "python")
    (project / "early.apsi").write_text(f"let poke = fn(t) => t.{attr}\n")
    refused("use early\nif true:\n    use nn as n\npoke(n.array([1.0]))", "python")


@pytest.mark.parametrize("code", [
    # layers, optimizers, fit results and errors: their allow-lists and nothing more
    "use layers\nlet net = mlp(2, 2, hidden=[4])\nnet.build", "use layers\nmlp(2, 2).apply",
    "use layers\nmlp(2, 2).children()", "use layers\nmlp(2, 2).settings", "use layers\nmlp(2, 2).fail('x')",
    "use layers\nlambda_layer(fn(x) => x).fn", "use layers\nmlp(2, 2).layers[0].units",
    "use nn\nadam(lr=0.1).update", "use nn\nadam(lr=0.1).init_state", "use nn\nsgd(lr=0.1).current_lr()",
    "use nn\nadam(lr=0.1).step.update", "use nn\nadam(lr=0.1).hyper.keys().mapping",
    "try:\n    1 / 0\ncatch e:\n    e.args", "try:\n    1 / 0\ncatch e:\n    e.with_traceback",
    "try:\n    error('x')\ncatch e:\n    e.add_note('y')", "try:\n    [][1]\ncatch e:\n    e.message.format",
    'let m = {"a": 1}\nm.keys().mapping', 'let m = {"a": 1}\nm.items().isdisjoint([])',
    "zip([1]).gi_frame", "enumerate([1]).gi_code", "range(3).count.name", "(1).to_bytes.name",
    "use nn\ngrad(fn(x) => x).name", "use nn\nlet g = cosine_lr\ng.defaults",
])
def test_objects_nn_and_layers_return_expose_only_their_lists(project, code):
    refused(code, "python")


def test_their_listed_attributes_give_apsi_values(project, capsys):
    run("use nn\nuse layers\nlet net = mlp(2, 2, hidden=[4])\nlet o = adam(lr=0.1)\n"
        "print(net.kind, net.name, net.options, net.input_shape, type(net.layers[0]), type(net.init))\n"
        "print(o.name, o.lr, o.steps, o.hyper)\ntry:\n    error('x')\ncatch e:\n    print(e.message, e.kind)")
    assert capsys.readouterr().out == (
        'mlp mlp {hidden: [4]} [2] layer function\n'
        'adam 0.1 0 {"b1": 0.9, "b2": 0.999, "eps": 1e-08, "weight_decay": 0.0, "amsgrad": false}\n'
        "x error\n")
