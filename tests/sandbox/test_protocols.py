"""Class 2: no NumPy protocol on an Apsi-made value. No record field starts with '_' whatever made
it; nn functions take only tensors, numbers, booleans and lists of them; no method hands Apsi a raw
Python container it cannot otherwise make; no memory address is ever shown."""

import re

import numpy as np
import pytest

from apsi_lang.values import Record

from .helpers import refused, refused_at_compile, run

PROTOCOLS = ["__array_interface__", "__array__", "__array_struct__", "__array_priority__",
             "__array_function__", "__dlpack__", "_private"]


@pytest.mark.parametrize("name", PROTOCOLS)
def test_unflatten_and_tree_map_make_no_underscore_fields(project, name):
    refused(f'use nn\nunflatten([("{name}", 0)])', match="cannot make a record field")
    refused(f'use nn\nunflatten([("layer.{name}", 0)])', match="starts with '_'")
    bad = Record(**{name: 1.0, "w": 2.0})          # made by Python code
    refused("use nn\ntree_map(fn(v) => v, r)", extra={"r": bad}, match="starts with '_'")
    refused_at_compile(f"let r = {{{name}: 1}}")


def test_load_params_refuses_underscore_names(project):
    np.savez(project / "evil.npz", **{"__array_interface__": np.zeros(2), "w": np.ones(2)})
    refused('use nn\nload_params("evil.npz")', match="__array_interface__")


@pytest.mark.parametrize("name", PROTOCOLS[:-1])
def test_records_never_speak_numpy_protocols(name):
    r = Record(**{name: {"data": (0, False), "shape": (1,), "typestr": "<f8", "version": 3}})
    assert not hasattr(r, name)
    assert not hasattr(Record, name)


@pytest.mark.parametrize("code, where", [
    ("take_along(x, r, 0)", "take_along"),
    ("take_along(x, [print], 0)", "take_along"),
    ("where(r, x, x)", "where"),
    ("array(r)", "array"),
    ("array([1.0, print])", "array"),
    ("one_hot(r, 3)", "one_hot"),
    ("x[r]", "index"),
    ("x[[r]]", "index"),
    ("param_count([print])", "tree"),
    ("global_norm({w: getenv})", "tree"),
    ('save_params("p.npz", {w: print})', "save_params"),
    ("exp(r)", "exp"),
    ("x + r", ""),
])
def test_nn_takes_only_tensors_numbers_and_lists(project, code, where):
    dunder = Record(**{"__array_interface__": {"data": (8, False), "shape": (1,), "typestr": "<f8",
                                               "version": 3}, "w": 1})
    message = refused(f"use nn\nlet x = array([1.0, 2.0, 3.0])\n{code}", extra={"r": dunder})
    assert where in message
    assert not (project / "p.npz").exists()


@pytest.mark.parametrize("code", [
    '"".maketrans("", "")', 'let s = "ab"\ns.maketrans("a", "b")', '"x".encode().maketrans(b, b)',
    "(1).from_bytes([1], \"big\")", '"ab".format_map', "(1.5).fromhex",
])
def test_methods_returning_raw_containers_are_refused(project, code):
    refused(code, "python", extra={"b": b"x"})
    if "format_map" not in code and "fromhex" not in code:
        run(code, "python", extra={"b": b"x"})


ADDRESS = re.compile(r"0x[0-9a-f]{6,}")


@pytest.mark.parametrize("code", [
    "print(getenv, print, str, len)", "fn f(): pass\nprint(f, [f], {g: f})", 'print("%s %r" % (getenv, f))',
    'print(f"{getenv} {f}")', "print(zip([1], [2]), enumerate([1]))", 'print(str(read_text), repr(error))',
    'let s = "%s"\ns %= getenv\nprint(s)', "print([1].append, \"a\".upper)",
    "try:\n    [1].index(getenv)\ncatch e:\n    print(e.message)",
])
def test_no_memory_address_is_ever_shown(project, capsys, code):
    if "fn f" not in code:
        code = "fn f(): pass\n" + code
    run(code)
    out = capsys.readouterr().out
    assert out and not ADDRESS.search(out), out
    assert "<fn " in out or "zip" in out or "<function getenv>" in out


def test_no_address_in_errors(project):
    message = refused("[1].index(getenv)")
    assert "<fn getenv>" in message or "getenv" in message
    assert not ADDRESS.search(message), message


def test_percent_formatting_of_numbers_and_text_still_works(project, capsys):
    run('print("%d-%s-%.2f" % (3, "a", 1.5), 7 % 3, 7.5 % 2, "%s" % [1, true])\nlet n = 9\nn %= 4\nprint(n)')
    assert capsys.readouterr().out == "3-a-1.50 1 1.5 [1, true]\n1\n"


PY_TEXT = re.compile(r"<(class|function|built-in|bound method|method|module) ")


@pytest.mark.parametrize("code", [
    "use nn\nzeros(f)", "use nn\nmean(array([1.0]), axis=print)", "use nn\nsum(array([1.0]), f)",
    "use nn\nrandn(2, seed=f)", "use nn\nlinspace(0, 1, getenv)", "use nn\nclip_by_global_norm({w: 1.0}, f)",
    'print(f"{1:{print}}")', 'print(f"{1:{f}}")', 'print(f"{1!r:>{f}}")', "[1].index(f)",
    "set([1]).remove(f)", "int(f)", "use nn\nsgd(lr=[f]).step({w: 1.0}, {w: 1.0})",
])
def test_messages_never_show_pythons_text_of_functions(project, code):
    message = refused("fn f(): pass\n" + code)
    assert not ADDRESS.search(message) and not PY_TEXT.search(message), message


def test_a_spec_on_a_function_pads_its_apsi_text(project, capsys):
    run('fn f(): pass\nprint(f"[{f:>9}]")')
    assert capsys.readouterr().out == "[   <fn f>]\n"


def test_spec_fields_and_input_prompt_show_apsi_text(project, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("typed\n"))
    run('fn f(): pass\nlet w = 6\nprint(f"{1:>{w}}|{2.5:.{w - 4}f}|")\nprint(input(f))\n'
        'print("%(a)s %(b)s" % {"a": f, "b": [true]})')
    out = capsys.readouterr().out
    assert out == "     1|2.50|\n<fn f>typed\n<fn f> [true]\n", out


@pytest.mark.parametrize("name", PROTOCOLS + ["__class__"])
def test_layer_names_follow_the_field_rules(project, name):
    # a layer's name is a field of its parameter record
    refused(f'use layers\ndense(3, name="{name}")', match="not starting with '_'")


@pytest.mark.parametrize("ret", ["{:}", "print", "[[1.0]]", "{w: 1.0}", '"text"', "array([1.0, 2.0])",
                                 "true"])
def test_a_loss_function_returns_one_number(project, ret):
    message = refused(f"use nn\nuse layers\nlet net = dense(1, inputs=2)\n"
                      f"fit(net, net.init(seed=0), zeros([4, 2]), zeros([4, 1]), loss=fn(p, y) => {ret}, "
                      "epochs=1, batch_size=2)")
    # one number per sample is a valid answer since sample weights (issue 28): a constant of that shape
    # is refused as not depending on the model's output instead
    assert "the loss function returned" in message, message
    assert ("it must return one number" in message
            or "does not depend on the model's output" in message), message
    run("use nn\nuse layers\nlet net = dense(1, inputs=2)\nlet r = fit(net, net.init(seed=0), zeros([4, 2]), "
        "zeros([4, 1]), loss=fn(p, y) => mean((p - y) * (p - y)), epochs=1, batch_size=2)")


@pytest.mark.parametrize("edges", ["{data: [[0, 1], [1, 0]]}", "r", "{edges: r}", "[r, 2]", "print"])
def test_graph_edges_reach_numpy_only_as_numbers(project, edges):
    dunder = Record(**{"__array_interface__": {"data": (8, False), "shape": (2, 2), "typestr": "<i8",
                                               "version": 3}, "data": [[0, 1], [1, 0]]})
    graph = edges if edges.startswith("{edges") else f"{{edges: {edges}}}"
    message = refused(f"use nn\nuse layers\nlet net = gcn_classifier(2, 2)\n"
                      f"predict(net, net.init(seed=0), zeros([2, 2]), graph={graph})", extra={"r": dunder})
    assert "graph=" in message, message
    run("use nn\nuse layers\nlet net = gcn_classifier(2, 2)\n"
        "let y = predict(net, net.init(seed=0), zeros([2, 2]), graph={edges: [[0, 1], [1, 0]]})")


def test_numpy_text_scalars_cannot_format(project):
    s = np.str_("{0.__class__}")
    refused("s.format(1)", "python", extra={"s": s})
    refused("s.format_map({:})", "python", extra={"s": s})
    refused('b.maketrans(b, b)', "python", extra={"b": np.bytes_(b"x")})
    run("let t = s.upper()", extra={"s": s})
    run("s.format(1)", "python", extra={"s": s})


@pytest.mark.parametrize("ret", ["{shape: [1, 99]}", "{:}", "[[1.0]]", "print", "r"])
def test_a_lambda_layer_returns_a_tensor(project, ret):
    # the output shape was np.shape(result): a record's `shape` field, or NumPy on an unchecked value
    dunder = Record(**{"__array_interface__": {"data": (8, False), "shape": (1,), "typestr": "<f8",
                                               "version": 3}, "shape": (1, 7)})
    refused(f"use layers\nlet net = sequential([dense(2, inputs=2), lambda_layer(fn(x) => {ret})])\n"
            "net.init(seed=0)", extra={"r": dunder}, match="must return a tensor")
    run("use layers\nlet net = sequential([dense(2, inputs=2), lambda_layer(fn(x) => x * 2)])\n"
        "let p = net.init(seed=0)")


class _Spy:
    """A Python object that notes every NumPy/DLPack protocol anything asks it for."""

    def __init__(self):
        self.asked = []

    def __getattr__(self, name):
        if name.startswith(("__array", "__dlpack", "__cuda_array")):
            self.asked.append(name)
        raise AttributeError(name)


def test_no_nn_function_asks_an_unchecked_value_for_a_protocol(project):
    from apsi_layers.apsi_modules import nn_module

    exports = nn_module()
    t = exports["array"]([[1.0, 2.0], [3.0, 4.0]])
    asked = {}
    for name, fn in sorted(exports.items()):
        for place in ("alone", "in a list", "first", "second", "third"):
            spy = _Spy()
            args = {"alone": [spy], "in a list": [[spy, 1.0]], "first": [spy, t],
                    "second": [t, spy], "third": [t, t, spy]}[place]
            try:
                fn(*args)
            except Exception:
                pass
            if spy.asked:
                asked[f"{name} ({place})"] = sorted(set(spy.asked))
    assert not asked, asked
