# ruff: noqa: E501  (Apsi sources and expected lines kept whole)
"""numlib (issue 19) as users run it: a real .apsi program through `python -m apsi`, checked against
NumPy computed here independently; hostile inputs refused by the sandbox."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apsi_lang import run_source
from apsi_lang.errors import ApsiError, ApsiSyntaxError

PROGRAM = Path(__file__).with_name("numlib_stats.apsi")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lines():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "apsi", str(PROGRAM)], capture_output=True, text=True,
                         env=env, timeout=120, cwd=PROGRAM.parent)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return {line.split()[0]: line for line in out.stdout.splitlines()}


def _numbers(line):
    return [float(t.strip("[],")) for t in line.split() if t.strip("[],").replace(".", "", 1)
            .replace("-", "", 1).replace("e", "", 1).isdigit()]


def test_statistics_match_numpy(lines):
    # spawn(rng(7))[0] is NumPy's SeedSequence(7).spawn(2)[0]: the same numbers from Python
    child = np.random.SeedSequence(7).spawn(2)[0]
    x = 2.0 + 0.5 * np.random.Generator(np.random.PCG64(child)).standard_normal((200, 3))
    mean, std, var1 = _numbers(lines["mean"])
    assert (mean, std, var1) == (round(x.mean(), 6), round(x.std(), 6), round(x.var(ddof=1), 6))
    med, q10, q90 = _numbers(lines["median"])
    assert med == round(np.median(x), 6)
    assert np.allclose([q10, q90], np.quantile(x[:, 0], [0.1, 0.9]), rtol=1e-14)
    top = np.argsort(-x[:, 1], kind="stable")[:3].tolist()
    assert lines["topk"] == f"topk {top} sorted true"


def test_the_rest_of_the_program(lines):
    assert lines["cumsum"] == "cumsum [1.0, 3.0, 6.0] prod 24.0"
    assert lines["unique"] == "unique [1, 2, 3] [1, 1, 3] bincount [1, 0, 2]"
    assert lines["shuffle"] == "shuffle [0, 1, 2, 3, 4, 5] isin [true, false]"
    assert lines["all"] == "all true any false nz true"
    assert lines["astype"] == "astype int64 float32 [1.0, -2.0]"
    v = np.array([1.0, 0.0, 3.0])
    expected = (v - v.mean()) / (3 * v.std()) + np.array([1 + v[1] + v[1] * v[2], v[0] + v[0] * v[2], v[0] * v[1]])
    assert np.allclose(_numbers(lines["grad"]), expected, rtol=1e-14)


HOSTILE = [
    ('astype(x, "object")', "astype: dtype must be one of"),
    ('astype(x, "O")', "astype: dtype must be one of"),
    ('x.astype("V8")', "astype: dtype must be one of"),
    ("astype(x, type)", "astype: dtype must be one of"),
    ('array([1, 2], dtype="object")', "array: dtype must be one of"),
    ("rng(1).entropy", "not available to Apsi code"),
    ("x.data", "not available to Apsi code"),
    ("x.numpy()", "not available to Apsi code"),
    ("std(x, ddof=3)", "var/std: 2 value(s)"),
    ("quantile(x, 1.5)", "quantile: q must be"),
    ("choice(3, 5, replace=false, seed=1)", "choice: cannot take 5 samples from 3"),
    ("normal(0, 1, [2], seed=rng)", "normal: expects a generator from rng(seed)"),
    ('pad(x, 1, mode="mean")', "pad: mode must be one of"),
    ("sort(x, axis=3)", "sort: axis=3 does not fit"),
    ("topk(x, 5)", "topk: k must be an int from 0 to 2"),
    ("split(x, 3)", "split: 2 (the size of axis 0) does not split into 3"),
    ("bincount(array([-1, 2]))", "bincount: x must be >= 0"),
    ("isclose(x, [1, 2, 3])", "isclose: shapes (2,) and (3,) do not broadcast"),
]


@pytest.mark.parametrize("expr,message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_bad_and_hostile_inputs_are_refused_with_a_message(expr, message):
    with pytest.raises(ApsiError) as e:
        run_source(f"use nn\nlet x = array([1.0, 2.0])\nprint({expr})\n")
    assert message in e.value.message


def test_tensor_methods_numpy_users_write():
    ns = run_source("use nn\nlet x = array([[1.0, 2.0], [3.0, 5.0]])\n"
                    "let r = [x.sum(), x.mean(axis=0), x.std(), x.var(axis=1, ddof=1), x.max(), x.min(),\n"
                    "         x.prod(axis=0), x.cumsum(axis=1), x.astype(int64), x.T, x.reshape(4), x.tolist(),\n"
                    "         x.any(), x.all(axis=0), x.argsort(axis=0), x.squeeze(), x.flatten(), x.round()]\n")
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    r = ns["r"]
    assert r[0].item() == 11.0 and r[2].item() == x.std() and np.array_equal(r[3].data, x.var(1, ddof=1))
    assert np.array_equal(r[6].data, x.prod(0)) and np.array_equal(r[7].data, x.cumsum(1))
    assert r[8].dtype == "int64" and r[11] == x.tolist() and r[16].shape == (4,)


def test_generators_are_values_not_state():
    ns = run_source("use nn\nlet g = rng(3)\nlet a = uniform(size=[4], seed=g)\nlet b = uniform(size=[4], seed=g)\n"
                    "let c, d = spawn(g)\nlet e = uniform(size=[4], seed=c)\nlet f = uniform(size=[4], seed=d)\n")
    assert np.array_equal(ns["a"].data, ns["b"].data)          # same generator, same numbers
    assert not np.array_equal(ns["e"].data, ns["f"].data)      # children differ from each other
    assert not np.array_equal(ns["a"].data, ns["e"].data)      # and from the parent


@pytest.mark.parametrize("source,hint", [
    ("use nn\nprint(concatenate([array([1.0]), array([2.0])]))\n", "undefined name 'concatenate' (Apsi writes concat([a, b], axis=0)"),
    ("use nn\nprint(amax(array([1.0])))\n", "Apsi writes max(x, axis=...)"),
    ("use nn\nprint(remainder(array([3.0]), 2.0))\n", "Apsi writes mod(a, b) or a % b"),
    ("use nn\nlet g = default_rng(0)\n", "Apsi writes rng(seed)"),
    ("print(std([1.0, 2.0]))\n", "'std' comes with 'use nn'"),
])
def test_numpy_names_get_the_apsi_spelling(source, hint):
    with pytest.raises(ApsiSyntaxError) as e:
        run_source(source)
    assert hint in str(e.value)


def test_number_builtins_keep_their_meaning_under_use_nn():
    # floor(2.5) is Apsi's int 2 (usable as an index) even though nn's floor now takes tensors
    ns = run_source("use nn\nlet i = floor(2.5)\nlet t = floor(array([2.5]))\nlet h = hypot(3, 4)\nlet n = isnan(1.0)\n")
    assert ns["i"] == 2 and type(ns["i"]) is int
    assert ns["t"].tolist() == [2.0] and ns["h"] == 5.0 and ns["n"] is False


def test_math_builtin_names_take_tensors_under_use_nn():
    ns = run_source("use nn\nlet a = atan2(array([1.0]), array([2.0]))\nlet b = asin(0.5)\n")
    assert ns["a"].tolist() == [np.arctan2(1.0, 2.0)] and ns["b"] == np.arcsin(0.5)


def test_all_and_any_keep_apsi_meaning_on_lists_and_numpy_meaning_on_tensors():
    ns = run_source("use nn\nlet a = all([1, 0])\nlet b = any([])\nlet c = all([[true, false], [true, true]], axis=1)\n"
                    "let d = any(array([[0.0, 1.0], [0.0, 0.0]]), axis=1)\n")
    assert ns["a"] is False and ns["b"] is False
    assert ns["c"].tolist() == [False, True] and ns["d"].tolist() == [True, False]


def test_round_takes_numpy_decimals_on_numbers_and_tensors():
    ns = run_source("use nn\nlet a = round(2.567, decimals=1)\nlet b = round(2.567, 2)\n"
                    "let c = round(array([2.567, 0.5]), decimals=1)\nlet d = round(array([0.5, 1.5]))\n")
    assert ns["a"] == 2.6 and ns["b"] == 2.57
    assert ns["c"].tolist() == [2.6, 0.5] and ns["d"].tolist() == [0.0, 2.0]


def test_the_older_random_functions_take_generator_values_too():
    ns = run_source("use nn\nlet g = rng(4)\nlet a = randn(3, seed=g)\nlet b = normal(size=[3], seed=g)\n"
                    "let p = permutation(5, seed=spawn(g)[0])\n")
    assert np.array_equal(ns["a"].data, ns["b"].data)
    assert sorted(ns["p"].tolist()) == [0, 1, 2, 3, 4]
