"""SciPy's special functions and NumPy's last elementwise gaps (issue 35): arccosh, logaddexp,
gammaln, erfc, logit, expit, and the polygamma op that carries gammaln's derivatives.

Each is an op with a rule in special_vjps.py, so grad, hessian and higher orders work. Values follow
scipy.special / NumPy at the edges (gammaln is log|Gamma(x)|, inf at 0, -1, -2, ...; logit(0) = -inf,
logit(1) = inf, NaN outside [0, 1]). SciPy is not needed: erfc, and lgamma below 10, come from
Python's math module (libm's, to the last bit or so); lgamma from 10 up is Stirling's series, and the
polygamma functions come from the series in `polygamma_values` (tests/nn/test_special.py holds all
of them to SciPy's and mpmath's digits).
"""

import math

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd.foreign import Foreign
from ..autograd.ops import _binary, _unary, apply, sigmoid
from ..autograd.tensor import as_tensor
from . import hurwitz

# --- values ---------------------------------------------------------------------------------------

# Bernoulli numbers B2, B4, ..., B16 for the asymptotic series of log Gamma and the polygamma functions
_B = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _each(fn, x):
    """A scalar math function over an array (exact libm values; special functions are rare in loops)."""
    x = np.asarray(x, dtype=np.float64)
    if not x.ndim:
        return np.float64(fn(float(x)))
    with np.errstate(invalid="ignore"):         # NaN in, NaN out: no warning
        return np.vectorize(fn, otypes=[np.float64])(x)


def _lgamma(v):
    if v == -math.inf:
        return -math.inf                    # scipy.special.gammaln(-inf)
    if v <= 0 and v == math.floor(v):
        return math.inf                     # a pole: |Gamma| is infinite (math.lgamma raises here)
    try:
        return math.lgamma(v)
    except OverflowError:                   # |Gamma(v)| beyond exp(1.8e308), far in either tail
        return math.inf


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _stirling(y):
    """log Gamma(y) for y >= 10 by Stirling's series (8 terms: exact to double precision there),
    vectorized, so large arrays of counts do not pay a Python call per element."""
    out = (y - 0.5) * np.log(y) - y + _HALF_LOG_2PI
    for k, b in enumerate(_B, 1):
        out = out + b / (2 * k * (2 * k - 1) * y ** (2 * k - 1))
    return np.where(y == np.inf, np.inf, out)


def gammaln_values(x):
    x = np.asarray(x, dtype=np.float64)
    big = x >= 10.0
    if not big.any():
        return _each(_lgamma, x)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(big, _stirling(np.where(big, x, 10.0)), 0.0)
    small = ~big
    if small.any():
        out[small] = _each(_lgamma, x[small])
    return out if out.ndim else np.float64(out)


def erfc_values(x):
    return _each(math.erfc, x)


def logit_values(p):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p / (1.0 - p))


_SHIFT = 20.0       # digamma's series is used at x >= 20, where its 8 terms are exact to double precision


def _digamma_positive(x):
    """psi(x) for x > 0: recurrence up to x + m >= 20, then the asymptotic series (DLMF 5.11.2)."""
    m = np.where(x < _SHIFT, np.ceil(_SHIFT - x), 0.0)
    m = np.where(np.isfinite(m), m, 0.0)
    acc = np.zeros_like(x)
    for j in range(int(m.max(initial=0.0))):
        acc = acc + np.where(j < m, 1.0 / (x + j), 0.0)
    y = x + m
    out = np.log(y) - 0.5 / y
    for k, b in enumerate(_B, 1):
        out = out - b / (2 * k * y ** (2 * k))
    return out - acc


def _positive(n, x):
    """psi^(n)(x) for x > 0: digamma's own series for n = 0, the Hurwitz zeta above (hurwitz.py)."""
    return _digamma_positive(x) if n == 0 else hurwitz.positive(n, x)


_COT_ORDERS = 100   # the cot polynomial's coefficients (~ n! pi^n) overflow a double from n = 135


def _reflected(n, x):
    """psi^(n)(x) for negative non-integer x: the reflection psi^(n)(1 - x) and pi cot(pi x)'s n-th
    derivative (DLMF 5.15.6) up to order 100; above, hurwitz.negative's pole pairs."""
    if n > _COT_ORDERS:
        return hurwitz.negative(n, x)
    return hurwitz.sign(n) * _positive(n, 1.0 - x) - math.pi * _cot_derivative(n, x)


def _cot_derivative(n, x):
    """d^n/dx^n cot(pi x), as a polynomial in c = cot(pi x): P0 = c, P_{k+1} = P_k'(c) * -pi (1 + c^2)."""
    poly = np.polynomial.Polynomial([0.0, 1.0])
    step = np.polynomial.Polynomial([-math.pi, 0.0, -math.pi])
    for _ in range(n):
        poly = poly.deriv() * step
    # cot has period 1: reduce to r in [-1/2, 1/2] (exact), and write cos(pi r) as sin(pi (1/2 - |r|)),
    # so cot is exactly 0 at half-integers instead of a rounding error of pi * x
    r = x - np.round(x)
    return poly(np.sin(math.pi * (0.5 - np.abs(r))) / np.sin(math.pi * r))


# orders past 10**300 are taken as 10**300 (of the same parity): n! x^-(n+1) is then +-inf or 0 at every
# double x, as it is for the true n, and n + 1 stays a float
_ORDER_MAX = 10**300


def polygamma_values(n, x):
    """psi^(n)(x), the n-th derivative of digamma (n = 0: digamma itself), as scipy.special.polygamma:
    at 0, -1, -2, ... digamma is -inf at +0 and NaN at the negative integers, the others +-inf."""
    x = np.asarray(x, dtype=np.float64)
    n = min(n, _ORDER_MAX + n % 2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pole = (x <= 0) & (x == np.floor(x))
        neg = (x < 0) & ~pole & np.isfinite(x)
        out = _positive(n, np.where(x > 0, x, 1.0))
        if neg.any():
            out = np.where(neg, _reflected(n, np.where(neg, x, -0.5)), out)
        out = np.where(np.isnan(x) | (x == -np.inf), np.nan, out)
        out = np.where(x == np.inf, np.inf if n == 0 else 0.0, out)
        out = np.where(pole, _pole_value(n, x), out)
    return out if out.ndim else np.float64(out)


def _pole_value(n, x):
    if n == 0:
        return np.where(x == 0, -np.copysign(np.inf, x), np.nan)
    return hurwitz.sign(n + 1) * np.inf


# --- the ops ------------------------------------------------------------------------------------------

arccosh = _unary("arccosh", np.arccosh, "inverse hyperbolic cosine (x >= 1; NaN below)")
erfc = _unary("erfc", erfc_values, "the complementary error function 1 - erf(x), exact in the far tail")
gammaln = _unary("gammaln", gammaln_values, "log|Gamma(x)| (scipy.special.gammaln); inf at 0, -1, -2, ...")
logit = _unary("logit", logit_values, "log(p / (1 - p)) (scipy.special.logit): -inf at 0, inf at 1")
logaddexp = _binary("logaddexp", np.logaddexp, "log(exp(a) + exp(b)) without overflow")


def expit(x):
    """1 / (1 + exp(-x)) (scipy.special.expit): the logistic sigmoid, stable on both tails."""
    try:
        as_tensor(x, "expit")
    except Foreign:
        return foreign.call("expit", x)
    return sigmoid(x)


def polygamma(n, x):
    """psi^(n)(x): digamma for n = 0, trigamma for 1, ... (the derivatives of gammaln)."""
    if type(n) is not int or n < 0:
        raise ApsiError(f"polygamma: n must be an int >= 0, got {n!r}")
    try:
        x = as_tensor(x, "polygamma")
    except Foreign:
        return foreign.call("polygamma", n, x)
    return apply("polygamma", lambda d, n: polygamma_values(n, d), (x,), {"n": n})


def digamma(x):
    """psi(x) = d/dx gammaln(x) (scipy.special.digamma)."""
    try:
        x = as_tensor(x, "digamma")
    except Foreign:
        return foreign.call("digamma", x)
    return polygamma(0, x)
