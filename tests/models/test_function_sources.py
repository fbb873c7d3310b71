"""A model file stores each Apsi function with its own source, found exactly (issue 33): the
instruction that makes a function carries its `fn`'s line and column, and every program compiled to
run keeps its own lines, so two functions on one line, a function returned by a function, one from a
`use`d module, a REPL's and those of programs compiled under one name each get their text; a function
whose source cannot be found is refused by name, never given another's."""

import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from .conftest import apsi

HELPERS = '''
use nn
let k = 4.0
let triple = fn(x) => x * 3
fn shift(x):
    return x + k
'''

SAVE = '''
use layers
use nn
use helpers
let twice = fn(x) => fn(x) => x * 2
let net = sequential(lambda_layer(twice(0)), lambda_layer(fn(x) => x + 1), lambda_layer(fn(x) => x - 0.5),
                     lambda_layer(triple), lambda_layer(shift))
save_model("m.apsim", net, net.init(seed=0, input_shape=[2]))
'''

LOAD = '''
use layers
use nn
let m = load_model("m.apsim")
print(predict(m.net, m.params, array([[1.0, 2.0], [-3.0, 0.5]])).tolist())
'''

X = np.array([[1.0, 2.0], [-3.0, 0.5]])


def _texts(path):
    with zipfile.ZipFile(path) as z:
        return [(f["text"], f["captures"]) for f in json.loads(z.read("model.json"))["functions"]]


def test_each_function_is_stored_with_its_own_source(run, tmp_path):
    (tmp_path / "helpers.apsi").write_text(HELPERS)
    r = run(SAVE)
    assert r.returncode == 0, r.stderr
    # the inner fn(x) of a curried fn(x) (same line, same parameters), two on one line, a module's two
    assert _texts(tmp_path / "m.apsim") == [
        ("fn(x) => x * 2", {}), ("fn(x) => x + 1", {}), ("fn(x) => x - 0.5", {}), ("fn(x) => x * 3", {}),
        ("fn shift(x):\n    return x + k", {"k": 4.0})]
    (tmp_path / "helpers.apsi").unlink()          # the file alone: no program, no module
    r = run(LOAD, name="load.apsi")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == (((X * 2 + 1) - 0.5) * 3 + 4.0).tolist()


def test_a_function_the_repl_defined_is_stored_from_its_input(tmp_path):
    session = ('use layers\nuse nn\nlet f = fn(x) => x * 2\nlet g = fn(x) => x + 1\n'
               'let net = sequential(lambda_layer(f), lambda_layer(g))\n'
               'save_model("m.apsim", net, net.init(seed=0, input_shape=[2]))\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env["APSI_HISTORY"] = str(tmp_path / ".history")
    r = subprocess.run([sys.executable, "-m", "apsi", "-i"], cwd=tmp_path, input=session, text=True,
                       capture_output=True, env=env, timeout=120)
    assert r.returncode == 0 and "error" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert _texts(tmp_path / "m.apsim") == [("fn(x) => x * 2", {}), ("fn(x) => x + 1", {})]
    (tmp_path / "load.apsi").write_text(LOAD)
    r = apsi(["load.apsi"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == (X * 2 + 1).tolist()


def test_programs_compiled_under_one_name_keep_their_own_sources():
    from apsi_lang import fn_source
    from apsi_lang.program import compile_source

    first = compile_source("let f = fn(x) => x * 2\n")          # both under the default "<input>"
    first.run()
    second = compile_source("let g = fn(x) => x + 1\n")
    second.run()
    assert fn_source.function_source(first.namespace["f"], "t")["text"] == "fn(x) => x * 2"
    assert fn_source.function_source(second.namespace["g"], "t")["text"] == "fn(x) => x + 1"


def test_a_function_compiled_outside_a_program_is_refused_by_name():
    from apsi_lang import fn_source
    from apsi_lang.builtins import BUILTINS
    from apsi_lang.compiler import compile_tree
    from apsi_lang.errors import ApsiError
    from apsi_lang.parser import Parser
    from apsi_lang.program import new_namespace
    from apsi_lang.report import SOURCES

    text = "let f = fn(x) => x * 2\n"
    name = "<not-a-program>"
    SOURCES[name] = text.split("\n")
    code, _ = compile_tree(Parser(text, name).parse_program(), name, SOURCES[name], set(BUILTINS),
                           set(), lambda *a: {})
    ns = new_namespace(".")
    exec(code, ns)                                          # noqa: S102  (the test's own program)
    with pytest.raises(ApsiError, match=r"save_model: t: cannot find the source of the function "
                                        r"defined at <not-a-program>:1"):
        fn_source.function_source(ns["f"], "save_model: t")


def test_a_function_a_stored_function_returns_has_its_source(tmp_path):
    from apsi_lang import fn_source

    entry = {"kind": "lambda", "name": None, "text": "fn(k) => fn(x) => x * k"}
    outer = fn_source.compile_function(entry, "m.apsim (functions[0])", {}, str(tmp_path))
    assert fn_source.function_source(outer, "t")["text"] == "fn(k) => fn(x) => x * k"
    assert fn_source.function_source(outer(3), "t")["text"] == "fn(x) => x * k"
