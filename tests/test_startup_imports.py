"""`apsi -e "print(1)"` as users run it imports nothing heavy (issue 36: start-up ≤ 2x python).

Python's own `-X importtime` lists every module a process imports, so the real command line is
checked, not a call of main() inside a test process that has already imported half the world."""

import os
import subprocess
import sys

import pytest

from apsi_lang.records import Factory, record

HEAVY = ("numpy", "torch", "rich", "scipy", "ipykernel", "pygls", "uvicorn", "starlette", "pint", "click",
         "dataclasses", "inspect", "apsi_layers")


def _imported(argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "apsi", *argv], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    names = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return r.stdout, names


def test_print_one_imports_nothing_heavy():
    out, names = _imported(["-e", "print(1)"])
    assert out == "1\n"
    assert "apsi_lang.program" in names             # the list is real: the compiler was imported
    assert sorted(n for n in names if n.split(".")[0] in HEAVY or n in HEAVY) == []


def test_a_program_using_nn_does_import_numpy():
    # the same check can fail: a program that needs NumPy gets it
    _, names = _imported(["-e", "use nn\nprint(zeros(2).shape)"])
    assert "numpy" in names


@pytest.mark.torch
def test_a_torch_program_that_never_compiles_does_not_import_torchdynamo():
    # torch.compiler.disable at the torch op set's import loaded TorchDynamo: ~1 s more than torch
    pytest.importorskip("torch")
    program = ("use layers\nlet net = mlp(2, 1)\n"
               "print(predict(net, net.init(seed=0), [[1.0, 2.0]], backend=\"torch\").shape)")
    out, names = _imported(["--allow-python", "-e", program])
    assert out == "(1, 1)\n"
    assert "apsi_layers.backends.torch.ops" in names and "torch._dynamo" not in names


@record(frozen=True)
class _Frozen:
    a: int
    b: tuple = ()
    c: frozenset = Factory(frozenset)


@record
class _Open:
    a: int = 1
    names: list = Factory(list)


def test_record_defaults_equality_and_frozen():
    x = _Frozen(1)
    assert (x.a, x.b, x.c) == (1, (), frozenset())
    assert x == _Frozen(1, (), frozenset()) and x != _Frozen(2) and hash(x) == hash(_Frozen(1))
    assert repr(_Frozen(1, (2,))) == "_Frozen(a=1, b=(2,), c=frozenset())"
    for change in (lambda: setattr(x, "a", 5), lambda: delattr(x, "a")):
        try:
            change()
            raise AssertionError("a frozen record changed")
        except AttributeError:
            pass
    y = _Open()
    y.a = 3
    assert y == _Open(a=3) and _Open.__hash__ is None
    assert y.names == [] and y.names is not _Open().names        # a fresh list per instance
    for bad in (lambda: _Open(1, [], 3), lambda: _Open(b=1), lambda: _Frozen()):
        try:
            bad()
            raise AssertionError("bad arguments accepted")
        except TypeError:
            pass


def test_print_one_compiles_no_regex():
    # report.py's few dozen message patterns are compiled when an error needs them (they were 1/6 of
    # start-up's own instructions); errors still get their Apsi wording
    code = ("import re, sys\nbefore = len(re._cache)\nfrom apsi_cli.main import main\n"
            "try:\n    main(['-e', 'print(1)'])\nexcept SystemExit:\n    pass\n"
            "print(len(re._cache) - before)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["1", "0"], r.stderr
    r = subprocess.run([sys.executable, "-m", "apsi", "-e", "print(len(3))"], capture_output=True, text=True,
                       timeout=60)
    assert "len() of an int: only a list, str, tuple, map, set or tensor has a length" in r.stderr
