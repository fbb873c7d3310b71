# ruff: noqa: E501  (Apsi sources kept whole)
"""Issue 35's functions as users run them: `apsi -e` programs (subprocesses, started together),
their printed values checked against NumPy/SciPy computed here (units: tests/units/test_toolbox_units.py), and their refusals as
messages with the Apsi line and no Python traceback."""

import os
import subprocess
import sys

import numpy as np
import pytest

PROGRAMS = {
    "stats": """use nn
let x = array([[1.0, nan, -2.0, 4.0, 4.0], [nan, nan, nan, nan, nan], [0.5, 3.0, 7.0, -1.0, 2.0]])
print("nanmax", nanmax(x, axis=1).tolist())
print("nanmin", nanmin(x, axis=1).tolist())
print("nanstd", nanstd(x, axis=1, ddof=1).tolist())
print("nanmedian", nanmedian(x, axis=1).tolist())
print("nanquantile", nanquantile(x, 0.3, axis=1).tolist())
print("nanargmax", nanargmax(x[0]), nanargmin(x[2]))
print("average", average(x[2], weights=[1.0, 2.0, 0.0, 3.0, 1.0]), ptp(x[2]))
print("cov", cov(x[[0, 2]][:, [0, 2, 3, 4]]).tolist())
print("corrcoef", corrcoef(x[2], x[2] ** 2).tolist())
print("grad", grad(fn(v) => nanmedian(v) + nanvar(v))(x[0]).tolist())
""",
    "special": """use nn
let p = array([0.5, 3.7, -2.5, 30.0])
print("gammaln", gammaln(p).tolist())
print("erfc", erfc(p).tolist())
print("logit", logit(array([0.0, 0.25, 1.0])).tolist(), expit(-800.0), logaddexp(1000.0, 999.0))
print("arccosh", arccosh(array([1.0, 2.0])).tolist(), digamma(1.0), polygamma(1, 0.5))
print("hess", hessian(fn(v) => sum(gammaln(v)))(array([2.5, 4.0])).tolist())
""",
    "curves": """use nn
print("logspace", logspace(0, 2, 3).tolist(), geomspace(2, 32, 5).tolist())
print("cummax", cummax(array([1.0, 3.0, 2.0, 5.0])).tolist(), cummin(array([[3.0, 1.0], [2.0, 4.0]]), axis=0).tolist())
print("convolve", convolve(array([1.0, 2.0, 3.0]), array([0.0, 1.0, 0.5]), "same").tolist())
print("interp", interp(array([0.5, 2.5, 9.0]), array([1.0, 2.0, 3.0]), array([3.0, 2.0, 0.0])).tolist())
print("trapezoid", trapezoid(array([1.0, 4.0, 9.0]), array([0.0, 1.0, 3.0])))
print("nonzero", nonzero(array([[0.0, 1.0], [2.0, 0.0]]))[1].tolist(), argwhere(array([0.0, 5.0])).tolist(), digitize(array([0.5, 2.5]), [0.0, 1.0, 2.0]).tolist())
print("grad", grad(fn(v) => trapezoid(cummax(v) ** 2) + sum(convolve(v, array([1.0, -1.0]))))(array([1.0, 3.0, 2.0])).tolist())
""",
    "all_nan_arg": "use nn\nprint(nanargmax(array([[nan, nan], [1.0, 2.0]]), axis=1))\n",
    "zero_weights": "use nn\nprint(average(array([1.0, 2.0]), weights=[1.0, -1.0]))\n",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    cwd = tmp_path_factory.mktemp("toolbox")
    procs = {name: subprocess.Popen([sys.executable, "-m", "apsi", "-e", src], cwd=cwd, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, src in PROGRAMS.items()}
    out = {}
    for name, p in procs.items():
        stdout, stderr = p.communicate(timeout=120)
        out[name] = (p.returncode, stdout, stderr)
    return out


def lines(runs, name):
    rc, stdout, stderr = runs[name]
    assert rc == 0, stderr
    return {line.split()[0]: line.split(None, 1)[1] for line in stdout.splitlines()}


def values(text):
    """The numbers in a printed line, nan/inf included, in order."""
    words = text.replace("[", " ").replace("]", " ").replace(",", " ").split()
    return [float(w) for w in words if _is_number(w)]


def _is_number(w):
    try:
        float(w)
        return True
    except ValueError:
        return False


def close(text, want, rtol=1e-12):
    got = values(text)
    want = np.ravel(np.array(want, dtype=float))
    assert len(got) == len(want), (text, want)
    assert np.allclose(got, want, rtol=rtol, atol=0, equal_nan=True), (got, want)


def test_statistics_print_numpys_values(runs):
    x = np.array([[1.0, np.nan, -2.0, 4.0, 4.0], [np.nan] * 5, [0.5, 3.0, 7.0, -1.0, 2.0]])
    got = lines(runs, "stats")
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        close(got["nanmax"], np.nanmax(x, axis=1))
        close(got["nanmin"], np.nanmin(x, axis=1))
        close(got["nanstd"], np.nanstd(x, axis=1, ddof=1))
        close(got["nanmedian"], np.nanmedian(x, axis=1))
        close(got["nanquantile"], np.nanquantile(x, 0.3, axis=1))
    close(got["nanargmax"], [np.nanargmax(x[0]), np.nanargmin(x[2])])
    close(got["average"], [np.average(x[2], weights=[1.0, 2.0, 0.0, 3.0, 1.0]), np.ptp(x[2])])
    close(got["cov"], np.cov(x[[0, 2]][:, [0, 2, 3, 4]]))
    close(got["corrcoef"], np.corrcoef(x[2], x[2] ** 2))
    # d/dv (nanmedian + nanvar) over the 4 values left [1, -2, 4, 4]: the median (1 + 4) / 2 gives
    # 1/2 to 1 and to the first of the tied 4s (the stable sort's middle element)
    v = x[0][~np.isnan(x[0])]
    want = np.zeros(5)
    want[~np.isnan(x[0])] = 2 * (v - v.mean()) / v.size + np.array([0.5, 0.0, 0.5, 0.0])
    close(got["grad"], want)


def test_special_functions_print_scipys_values(runs):
    sp = pytest.importorskip("scipy.special")
    p = np.array([0.5, 3.7, -2.5, 30.0])
    got = lines(runs, "special")
    close(got["gammaln"], sp.gammaln(p))
    close(got["erfc"], sp.erfc(p))
    with np.errstate(divide="ignore"):
        close(got["logit"], list(sp.logit([0.0, 0.25, 1.0])) + [sp.expit(-800.0), np.logaddexp(1000.0, 999.0)])
    close(got["arccosh"], [0.0, np.arccosh(2.0), sp.digamma(1.0), sp.polygamma(1, 0.5)])
    close(got["hess"], np.diag(sp.polygamma(1, [2.5, 4.0])), rtol=1e-12)


def test_curves_print_numpys_values(runs):
    got = lines(runs, "curves")
    close(got["logspace"], list(np.logspace(0, 2, 3)) + list(np.geomspace(2, 32, 5)))
    close(got["cummax"], [1, 3, 3, 5, 3, 1, 2, 1])
    close(got["convolve"], np.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5], "same"))
    close(got["interp"], np.interp([0.5, 2.5, 9.0], [1.0, 2.0, 3.0], [3.0, 2.0, 0.0]))
    close(got["trapezoid"], [np.trapezoid([1.0, 4.0, 9.0], [0.0, 1.0, 3.0])])
    close(got["nonzero"], list(np.nonzero([[0.0, 1.0], [2.0, 0.0]])[1]) + [1] + list(np.digitize([0.5, 2.5], [0.0, 1.0, 2.0])))
    # v = [1, 3, 2]: cummax = [1, 3, 3], the last 3 is v[1]'s; trapezoid(c**2) = c0²/2 + c1² + c2²/2;
    # sum(convolve(v, [1, -1])) = 0 for any v
    close(got["grad"], [1.0, 2 * 3 + 3, 0.0])


@pytest.mark.parametrize("name, message", [
    ("all_nan_arg", "nanargmax: a slice along axis=1 is all NaN"),
    ("zero_weights", "average: the weights sum to 0"),
])
def test_refusals_name_the_function_and_line_without_a_traceback(runs, name, message):
    rc, stdout, stderr = runs[name]
    assert rc == 1
    assert message in stderr and "<-e>:" in stderr
    assert "File \"" not in stderr                      # no Python frames
