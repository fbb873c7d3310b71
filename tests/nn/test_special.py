"""Issue 35's special functions (nn/numlib/special.py) against SciPy/NumPy computed here, at ordinary
points and the edges (poles, 0 and 1, +-inf, NaN, the far tails); derivatives of every order
available against torch.autograd float64 (gammaln -> digamma -> polygamma, logit, erfc, ...)."""

import functools

import numpy as np
import pytest

from apsi_layers import nn

try:
    import scipy.special as sp
except ImportError:           # the SciPy comparisons skip; the torch ones still run
    sp = None
try:
    import torch
except ImportError:
    torch = None
needs_scipy = pytest.mark.skipif(sp is None, reason="needs SciPy (the test extra)")
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")

EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0]


def same(ours, theirs, rtol):
    got = ours.data if isinstance(ours, nn.Tensor) else np.asarray(ours)
    theirs = np.asarray(theirs, dtype=np.float64)
    assert got.shape == theirs.shape
    assert np.array_equal(np.isnan(got), np.isnan(theirs)), (got, theirs)
    assert np.array_equal(got[np.isinf(theirs)], theirs[np.isinf(theirs)]), (got, theirs)
    ok = np.isfinite(theirs)
    assert np.allclose(got[ok], theirs[ok], rtol=rtol, atol=0), (got[ok], theirs[ok])


CASES = {} if sp is None else {
    "gammaln": (sp.gammaln, [0.5, 1.0, 2.0, 3.7, 1e-300, 1e-8, 171.5, 1e6, 1e300, -0.5, -2.5, -7.3, -1.0,
                             -2.0, -100.25]),
    "erfc": (sp.erfc, [-3.0, -0.5, 0.0, 1e-10, 0.5, 2.0, 5.0, 10.0, 26.0, 27.5, 30.0]),
    "logit": (sp.logit, [1e-300, 1e-8, 0.1, 0.5, 0.75, 1 - 1e-12, 1.0, -0.1, 1.5]),
    "expit": (sp.expit, [-800.0, -40.0, -1.0, 0.0, 1e-9, 2.0, 40.0, 800.0]),
    "digamma": (sp.digamma, [1e-8, 0.5, 1.0, 2.0, 7.5, 19.9, 20.0, 35.0, 1e8, -0.5, -1.5, -7.25, -1.0, -3.0]),
    "arccosh": (np.arccosh, [1.0, 1.0 + 1e-12, 1.5, 10.0, 1e300, 0.5, -2.0]),
}


@needs_scipy
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_scipy_at_ordinary_points_and_edges(name):
    ref, points = CASES[name]
    x = np.array(points + EDGES)
    with np.errstate(all="ignore"):
        theirs = ref(x)
    same(getattr(nn, name)(x), theirs, rtol=1e-13)


@needs_scipy
def test_gammaln_over_a_wide_range_matches_scipy():
    # below 10 Python's correctly rounded lgamma, above Stirling's series: both to SciPy's digits
    # (near its zeros at 1 and 2 SciPy's value is off by ~1e-16 absolutely, so the bound has an atol)
    x = np.concatenate([np.geomspace(1e-6, 1e6, 2001), np.linspace(9.0, 11.0, 401), [1e305, 1e307, 1.7e308]])
    got, theirs = nn.gammaln(x).data, sp.gammaln(x)
    assert np.all(np.abs(got[:-2] - theirs[:-2]) <= 4e-15 * np.abs(theirs[:-2]) + 1e-15)
    assert np.array_equal(got[-2:], [np.inf, np.inf]) and np.array_equal(theirs[-2:], [np.inf, np.inf])
    same(nn.gammaln(-x[:2000] - 0.25), sp.gammaln(-x[:2000] - 0.25), rtol=1e-13)


@needs_scipy
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_polygamma_matches_scipy(n):
    x = np.array([1e-6, 0.3, 1.0, 2.5, 19.5, 20.0, 40.0, 1e5, -0.3, -1.7, -4.5, -10.2, 0.0, -1.0, -2.0,
                  np.inf, np.nan])
    got, theirs = nn.polygamma(n, x).data, sp.polygamma(n, x)
    fin = np.isfinite(theirs)
    # left of 0 SciPy's own reflection is off by up to ~5e-12 (n = 4 at -4.5; mpmath, below, agrees
    # with ours to 1e-15 there)
    rtol = np.where(x[fin] < 0, 1e-11, 1e-13)
    assert np.all(np.abs(got[fin] - theirs[fin]) <= rtol * np.abs(theirs[fin]))
    assert np.array_equal(got[~fin], theirs[~fin], equal_nan=True)


def test_polygamma_left_of_zero_matches_mpmath():
    mpmath = pytest.importorskip("mpmath")
    x = [-0.3, -1.7, -4.5, -10.2, -33.75]
    for n in range(5):
        theirs = [float(mpmath.polygamma(n, v)) for v in x]
        assert np.allclose(nn.polygamma(n, x).data, theirs, rtol=2e-14, atol=0), n


# issue 35's higher orders: x left of 0 (half-integers too), small, at the old cut-off 20, large
POLY_X = np.array([-40.3, -7.25, -2.5, -2.3, -0.7, -0.1, 1e-3, 0.3, 1.0, 2.5, 7.75, 19.5, 25.0, 60.0,
                   150.0, 1e3, 1e5])
POLY_ORDERS = [0, 1, 2, 6, 20, 21, 60, 80, 101, 120, 150, 170, 171, 200]


def mpmath_polygamma(n, x):
    """mpmath's psi^(n) at each double x, rounded to a double (+-inf past the range). At a negative
    half-integer its sum's terms come in pairs of opposite sign that cancel ~ n digits, so the
    precision there grows with n; elsewhere one term dominates and 40 digits round to the same
    doubles as 120 + 2n at every other x of POLY_X and every order up to 200 (checked once: the
    cost of the tests below is mpmath's)."""
    mpmath = pytest.importorskip("mpmath")
    big = mpmath.mpf(np.finfo(np.float64).max)

    def one(v):
        with mpmath.workdps(120 + 2 * n if v < 0 and 2 * v == round(2 * v) else 40):
            value = mpmath.polygamma(n, mpmath.mpf(float(v)))
            return float(value) if abs(value) <= big else float(mpmath.sign(value)) * np.inf

    return np.array([one(v) for v in x])


@functools.cache
def mpmath_poly_x(n):
    """mpmath_polygamma(n, POLY_X), once per order for both tests below."""
    return mpmath_polygamma(n, POLY_X)


def check_polygamma_orders(orders):
    for n in orders:
        got, theirs = nn.polygamma(n, POLY_X).data, mpmath_poly_x(n)
        fin = np.isfinite(theirs) & (theirs != 0)
        assert np.all(np.abs(got[fin] - theirs[fin]) <= 1e-12 * np.abs(theirs[fin])), n
        assert np.array_equal(got[~fin], theirs[~fin]), (n, got[~fin], theirs[~fin])


def test_polygamma_of_orders_up_to_200_matches_mpmath():
    # n! x^-(n+1) past 170 and the series' cut-off growing with n (it was 20 whatever n: 1e-5 off at
    # (80, 25), 0.6% at (120, 25)); left of 0 above order 100 the cot polynomial would overflow
    check_polygamma_orders(POLY_ORDERS)


@pytest.mark.slow
def test_polygamma_of_every_order_up_to_200_matches_mpmath():
    check_polygamma_orders(range(201))


@needs_scipy
def test_polygamma_of_orders_up_to_170_matches_scipy_right_of_0():
    # SciPy's polygamma is n! zeta(n + 1, x) in doubles: inf times 0 past n = 170, its zeta underflows
    # below ~1e-220, and left of 0 at half-integers it loses every digit for even n >= 6 (-2.5 at
    # n = 20: 4.2e8 where mpmath, and we, say 9.18e6), so it is the reference only inside those bounds
    x = POLY_X[POLY_X > 0]
    for n in [n for n in POLY_ORDERS if n <= 170]:
        got, theirs = nn.polygamma(n, x).data, sp.polygamma(n, x)
        inside = np.isfinite(theirs) & (np.abs(theirs) > 1e-200)
        assert np.all(np.abs(got[inside] - theirs[inside]) <= 1e-12 * np.abs(theirs[inside])), n


def test_polygamma_of_huge_orders_is_quick_and_infinite_or_zero():
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x): never (10**9)!; the sign follows n's parity at any size
    x = [2.0, -2.5, 1e305]
    assert np.array_equal(nn.polygamma(10**9, x).data, [-np.inf, -np.inf, -0.0])
    assert np.array_equal(nn.polygamma(10**9 + 1, x).data, [np.inf, np.inf, 0.0])
    assert np.array_equal(nn.polygamma(10**400, x).data, [-np.inf, -np.inf, -0.0])


def test_polygamma_gradient_is_the_next_order_at_high_orders():
    x = np.array([-2.3, 0.7, 25.0, 300.0])
    g = nn.grad(lambda t: nn.sum(nn.polygamma(80, t)))(nn.Tensor(x))
    theirs = mpmath_polygamma(81, x)
    assert np.all(np.abs(g.data - theirs) <= 1e-12 * np.abs(theirs))


def test_logaddexp_matches_numpy_with_infinities():
    a = np.array([0.0, 1000.0, -1000.0, -np.inf, np.inf, -np.inf, np.inf, 3.0, np.nan])
    b = np.array([0.0, 1000.0, -999.0, -np.inf, np.inf, 2.0, 2.0, -np.inf, 1.0])
    with np.errstate(invalid="ignore"):
        assert np.array_equal(nn.logaddexp(a, b).data, np.logaddexp(a, b), equal_nan=True)
    assert np.array_equal(nn.logaddexp([[1.0], [2.0]], [0.5, -3.0, 7.0]).data,
                          np.logaddexp([[1.0], [2.0]], [0.5, -3.0, 7.0]))


# --- derivatives ------------------------------------------------------------------------------------

TORCH = {} if torch is None else {
    "gammaln": (torch.special.gammaln, [0.3, 1.0, 2.5, 7.0, 25.0, -0.5, -2.3]),
    "digamma": (torch.special.digamma, [0.3, 1.0, 2.5, 7.0, 25.0, -0.5, -2.3]),
    "erfc": (torch.special.erfc, [-2.0, -0.1, 0.0, 0.7, 3.0]),
    "logit": (torch.logit, [0.01, 0.3, 0.5, 0.9]),
    "expit": (torch.sigmoid, [-30.0, -1.0, 0.0, 2.0, 30.0]),
    "arccosh": (torch.acosh, [1.1, 2.0, 30.0]),
}


def _derivatives(f, x, order):
    """d^k/dx^k of f at each point (f elementwise), k = 1..order, by nested torch.autograd.grad."""
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    out, ders = f(xt), []
    for _ in range(order):
        out = torch.autograd.grad(out.sum(), xt, create_graph=True)[0]
        ders.append(out.detach().numpy())
    return ders


def _ours(f, x, order):
    ders, g = [], f
    for _ in range(order):
        g = nn.grad(lambda t, g=g: nn.sum(g(t)))
        ders.append(g(nn.Tensor(np.array(x))).data)
    return ders


@needs_torch
@pytest.mark.parametrize("name", sorted(TORCH))
def test_first_second_and_third_derivatives_match_torch(name):
    torch_f, points = TORCH[name]
    # torch's trigamma and higher polygammas are good to ~1e-10 only (ours match SciPy and mpmath to
    # 1e-13, tested above), so the gamma family is compared at 1e-9
    rtol = 1e-9 if name in ("gammaln", "digamma") else 1e-12
    for ours, theirs in zip(_ours(getattr(nn, name), points, 3), _derivatives(torch_f, points, 3),
                            strict=True):
        assert np.allclose(ours, theirs, rtol=rtol, atol=1e-13), (ours, theirs)


@needs_torch
def test_logaddexp_gradients_and_hessian_match_torch():
    a, b = np.array([0.5, -3.0, 10.0, -np.inf]), np.array([1.0, 2.0, -10.0, 0.0])
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.logaddexp(at, bt).sum().backward()
    ga, gb = nn.grad(lambda x, y: nn.sum(nn.logaddexp(x, y)), (0, 1))(nn.Tensor(a), nn.Tensor(b))
    assert np.allclose(ga.data, at.grad.numpy(), rtol=1e-15)
    assert np.allclose(gb.data, bt.grad.numpy(), rtol=1e-15)
    fin = a[:3]
    ours = nn.hessian(lambda x: nn.sum(nn.logaddexp(x, x * x)))(nn.Tensor(fin)).data
    theirs = torch.autograd.functional.hessian(lambda x: torch.logaddexp(x, x * x).sum(), torch.tensor(fin))
    assert np.allclose(ours, theirs.numpy(), rtol=1e-12, atol=1e-14)


@needs_torch
def test_gradients_at_the_edges_are_torchs():
    # logit at 0 and 1, arccosh at 1: infinite slopes; gammaln at its poles: digamma's -inf and NaN.
    # grad refuses a loss that is itself infinite, so the slopes are read off jacobian's diagonal.
    for name, points in (("logit", [0.0, 1.0]), ("arccosh", [1.0]), ("gammaln", [0.0, -1.0])):
        xt = torch.tensor(points, dtype=torch.float64, requires_grad=True)
        TORCH[name][0](xt).sum().backward()
        with np.errstate(all="ignore"):
            ours = np.diag(nn.jacobian(getattr(nn, name))(nn.Tensor(np.array(points))).data)
        assert np.array_equal(ours, xt.grad.numpy(), equal_nan=True), (name, ours, xt.grad)
