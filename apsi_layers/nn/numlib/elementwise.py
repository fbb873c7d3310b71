"""NumPy's elementwise functions on tensors (issue 19): rounding, trigonometry, hyperbolics, erf,
two-argument arctan2/hypot/mod, and the NaN/inf tests.

Differentiable ones are ops with a rule in vjps.py (floor, ceil, round, trunc and sign have slope 0,
as in torch); isnan/isinf/isfinite give boolean tensors and no gradient.
"""

import math

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd.foreign import Foreign
from ..autograd.ops import _binary, _unary, apply
from ..autograd.tensor import Tensor, as_tensor


def _erf(x):
    # math.erf is exact to the last bit; np.vectorize is slow but erf is rare in hot loops
    return np.vectorize(math.erf, otypes=[np.float64])(x) if np.ndim(x) else np.float64(math.erf(x))


sign = _unary("sign", np.sign, "-1, 0 or 1 by the sign of x (slope 0)")
floor = _unary("floor", np.floor, "largest whole number <= x (slope 0)")
ceil = _unary("ceil", np.ceil, "smallest whole number >= x (slope 0)")
trunc = _unary("trunc", np.trunc, "x with its fraction dropped, toward 0 (slope 0)")
expm1 = _unary("expm1", np.expm1, "exp(x) - 1, accurate for small x")
log2 = _unary("log2", np.log2, "base-2 logarithm")
log10 = _unary("log10", np.log10, "base-10 logarithm")
tan = _unary("tan", np.tan, "tangent")
arcsin = _unary("arcsin", np.arcsin, "inverse sine, in [-pi/2, pi/2]")
arccos = _unary("arccos", np.arccos, "inverse cosine, in [0, pi]")
arctan = _unary("arctan", np.arctan, "inverse tangent")
sinh = _unary("sinh", np.sinh, "hyperbolic sine")
cosh = _unary("cosh", np.cosh, "hyperbolic cosine")
arcsinh = _unary("arcsinh", np.arcsinh, "inverse hyperbolic sine")
arctanh = _unary("arctanh", np.arctanh, "inverse hyperbolic tangent")
erf = _unary("erf", _erf, "the error function")
arctan2 = _binary("arctan2", np.arctan2, "the angle of the point (x, y): arctan2(y, x), in [-pi, pi]")
hypot = _binary("hypot", np.hypot, "sqrt(a**2 + b**2) without overflow")
mod = _binary("mod", np.mod, "a - floor(a / b) * b: the remainder with b's sign (like % and NumPy)")


def round(x, decimals=0):  # noqa: A001
    """x rounded to `decimals` places, halves to even as NumPy does (slope 0)."""
    if type(decimals) is not int:
        raise ApsiError(f"round: decimals must be an int, got {decimals!r}")
    try:
        x = as_tensor(x, "round")
    except Foreign:
        return foreign.call("round", x, decimals)
    return apply("round", lambda d, decimals: np.round(d, decimals), (x,), {"decimals": decimals})


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by `nan`, inf by `posinf`/`neginf` (none: the largest finite float64);
    the gradient is 0 where x was not finite."""
    for arg, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and (type(v) not in (int, float)):
            raise ApsiError(f"nan_to_num: {arg} must be a number, got {v!r}")
    try:
        x = as_tensor(x, "nan_to_num")
    except Foreign:
        return foreign.call("nan_to_num", x, nan=nan, posinf=posinf, neginf=neginf)
    if x.data.dtype.kind != "f":
        return x
    return apply("nan_to_num", lambda d, **p: np.nan_to_num(d, copy=True, **p), (x,),
                 {"nan": nan, "posinf": posinf, "neginf": neginf})


def _test(name, fn, doc):
    def op(x):
        try:
            x = as_tensor(x, name)
        except Foreign:
            return foreign.call(name, x)
        return Tensor(fn(x.data))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


isnan = _test("isnan", np.isnan, "true where x is NaN (a boolean tensor)")
isinf = _test("isinf", np.isinf, "true where x is +inf or -inf")
isfinite = _test("isfinite", np.isfinite, "true where x is neither NaN nor inf")
