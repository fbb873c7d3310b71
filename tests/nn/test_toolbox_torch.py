# ruff: noqa: E501  (one Apsi function and its NumPy reference per line)
"""Issue 35's functions on the torch backend (what an Apsi loss meets under fit(backend="torch")):
each Apsi function below, given a torch float64 tensor, returns a torch tensor whose value is
NumPy's/SciPy's (computed here) and whose torch.autograd gradient equals float64 central differences
of that NumPy/SciPy reference."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sp = pytest.importorskip("scipy.special")

from apsi_lang import run_source  # noqa: E402
from apsi_layers.backends.torch import nn_dispatch  # noqa: E402

from .gradcheck import numeric_jacobian  # noqa: E402

SOURCE = """
use nn
let f_nanmax = fn(x) => nanmax(x, axis=1) + nanmin(x, axis=0, keepdims=true)[0]
let f_nanvar = fn(x) => nanvar(x, axis=1, ddof=1) + nanstd(x, axis=1)
let f_nanquantile = fn(x) => nanmedian(x, axis=1) + nanquantile(x, [0.3, 0.8], axis=1)[1]
let f_average = fn(x) => average(x, axis=1, weights=[1.0, 2.0, 0.5, 1.5]) + ptp(x, axis=1)
let f_cov = fn(x) => cov(x, aweights=[1.0, 2.0, 0.5, 1.5])[0] + corrcoef(x)[1] + cov(x, rowvar=false, ddof=0)[2]
let f_special = fn(x) => gammaln(abs(x) + 0.5) + erfc(x) + logit(expit(x) * 0.5 + 0.2) + arccosh(x * x + 1.5) + logaddexp(x, 0.3) + digamma(abs(x) + 1.0) + polygamma(1, abs(x) + 1.0)
let f_curves = fn(x) => cummax(x, axis=1)[:, 3] + cummin(x, axis=0)[2, :] + convolve(x[0], x[1], "same") + interp(x[2], [-2.0, 0.0, 0.5, 3.0], [1.0, 4.0, -1.0, 2.0]) + trapezoid(x, x[1], axis=1)
let f_indices = fn(x) => [nonzero(x > 0), argwhere(x > 0), digitize(x, [-1.0, 0.0, 1.0]), nanargmax(x, axis=1), nanargmin(x)]
"""

NAN = np.nan


def _quantiles(x):
    return np.nanmedian(x, axis=1) + np.nanquantile(x, [0.3, 0.8], axis=1)[1]


def _cov(x):
    return (np.cov(x, aweights=[1.0, 2.0, 0.5, 1.5])[0] + np.corrcoef(x)[1]
            + np.cov(x, rowvar=False, ddof=0)[2])


def _special(x):
    return (sp.gammaln(abs(x) + 0.5) + sp.erfc(x) + sp.logit(sp.expit(x) * 0.5 + 0.2) + np.arccosh(x * x + 1.5)
            + np.logaddexp(x, 0.3) + sp.digamma(abs(x) + 1.0) + sp.polygamma(1, abs(x) + 1.0))


CASES = {
    "f_nanmax": (lambda x: np.nanmax(x, axis=1) + np.nanmin(x, axis=0, keepdims=True)[0], True),
    "f_nanvar": (lambda x: np.nanvar(x, axis=1, ddof=1) + np.nanstd(x, axis=1), True),
    "f_nanquantile": (_quantiles, True),
    "f_average": (lambda x: np.average(x, axis=1, weights=[1.0, 2.0, 0.5, 1.5]) + np.ptp(x, axis=1), False),
    "f_cov": (_cov, False),
    "f_special": (_special, False),
}


@pytest.fixture(scope="module")
def ns():
    nn_dispatch.install()
    return run_source(SOURCE)


def _point(with_nan):
    x = np.random.default_rng(3).standard_normal((4, 4))
    if with_nan:
        x[0, 2] = x[3, 1] = NAN
    return x


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_is_numpys_and_gradient_is_the_finite_difference_of_numpys(ns, name):
    ref, with_nan = CASES[name]
    x = _point(with_nan)
    xt = torch.tensor(x, requires_grad=True)
    got = ns[name](xt)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    # torch's own digamma/polygamma kernels are good to ~1e-10 (nn's match SciPy to 1e-13: test_special)
    rtol = 1e-9 if name == "f_special" else 1e-12
    assert np.allclose(got.detach().numpy(), ref(x), rtol=rtol, atol=1e-14)
    w = np.random.default_rng(8).standard_normal(got.shape)
    (got * torch.tensor(w)).sum().backward()
    numeric = numeric_jacobian(lambda v: np.sum(ref(np.where(np.isnan(x), NAN, v)) * w), np.nan_to_num(x))
    assert np.allclose(np.nan_to_num(xt.grad.numpy()), numeric, rtol=1e-6, atol=1e-7)


def test_curves_on_torch(ns):
    x = _point(False)
    x[1] = np.sort(x[1])                                  # trapezoid's sample points, increasing
    ref = (lambda v: np.maximum.accumulate(v, axis=1)[:, 3] + np.minimum.accumulate(v, axis=0)[2, :]
           + np.convolve(v[0], v[1], "same") + np.interp(v[2], [-2.0, 0.0, 0.5, 3.0], [1.0, 4.0, -1.0, 2.0])
           + np.trapezoid(v, v[1], axis=1))
    xt = torch.tensor(x, requires_grad=True)
    got = ns["f_curves"](xt)
    assert np.allclose(got.detach().numpy(), ref(x), rtol=1e-12)
    got.sum().backward()
    assert np.allclose(xt.grad.numpy(), numeric_jacobian(lambda v: ref(v).sum(), x), rtol=1e-6, atol=1e-7)


def test_logspace_and_geomspace_on_torch(ns):
    f = run_source("use nn\nlet f = fn(s, e) => [logspace(s, e, 6, base=3.0), geomspace(s, e, 5), geomspace(s, e, 4, endpoint=false)]\n")["f"]
    s, e = torch.tensor(0.5, dtype=torch.float64, requires_grad=True), torch.tensor(2.5, dtype=torch.float64)
    got = f(s, e)
    want = [np.logspace(0.5, 2.5, 6, base=3.0), np.geomspace(0.5, 2.5, 5), np.geomspace(0.5, 2.5, 4, endpoint=False)]
    for a, b in zip(got, want, strict=True):
        assert np.allclose(a.detach().numpy(), b, rtol=1e-14)
    sum(g.sum() for g in got).backward()
    ref = lambda v: sum(np.sum(w) for w in (np.logspace(v, 2.5, 6, base=3.0), np.geomspace(v, 2.5, 5), np.geomspace(v, 2.5, 4, endpoint=False)))  # noqa: E731
    assert np.isclose(s.grad.item(), (ref(0.5 + 1e-6) - ref(0.5 - 1e-6)) / 2e-6, rtol=1e-7)


def test_index_finders_on_torch_give_numpys_ints(ns):
    x = _point(True)
    got = ns["f_indices"](torch.tensor(x))
    with np.errstate(invalid="ignore"):
        want = [np.nonzero(x > 0), np.argwhere(x > 0), np.digitize(x, [-1.0, 0.0, 1.0]), np.nanargmax(x, axis=1),
                np.nanargmin(x)]
    for a, b in zip(got[0], want[0], strict=True):
        assert np.array_equal(a.numpy(), b)
    for a, b in zip(got[1:], want[1:], strict=True):
        assert isinstance(a, torch.Tensor) and np.array_equal(a.numpy(), b)


def test_all_nan_slices_on_torch_are_nan_as_on_numpy(ns):
    x = np.array([[NAN, NAN, NAN, NAN], [1.0, 2.0, NAN, 4.0]])
    f = run_source("use nn\nlet f = fn(x) => [nanmax(x, axis=1), nanvar(x, axis=1), nanmedian(x, axis=1)]\n")["f"]
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = [np.nanmax(x, axis=1), np.nanvar(x, axis=1), np.nanmedian(x, axis=1)]
    for a, b in zip(f(torch.tensor(x)), want, strict=True):
        assert np.array_equal(a.numpy(), b, equal_nan=True)


def test_polygamma_of_higher_orders_on_torch_is_mpmaths():
    """torch's own kernel is n! zeta(n + 1, x) as SciPy's: -4.2e8 at (20, -2.5) for -9.18e6, and -inf
    at (200, 2.0) for -2.45e314 -> the values come from nn's; the gradient is the next order, twice."""
    from .test_special import mpmath_polygamma
    x = np.array([-2.5, -7.25, 0.3, 25.0, 150.0])
    for n in (20, 80, 171):
        f = run_source(f"use nn\nlet f = fn(x) => polygamma({n}, x)\n")["f"]
        xt = torch.tensor(x, requires_grad=True)
        got = f(xt)
        assert isinstance(got, torch.Tensor)
        for k, values in enumerate((got,) + _two_derivatives(got, xt)):
            want = mpmath_polygamma(n + k, x)
            fin = np.isfinite(want)
            assert np.allclose(values.detach().numpy()[fin], want[fin], rtol=1e-12, atol=0), (n, k)
            assert np.array_equal(values.detach().numpy()[~fin], want[~fin]), (n, k)


def _two_derivatives(y, x):
    (d1,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x)
    return d1, d2
