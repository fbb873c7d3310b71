"""Comparisons of whole tensors (issue 19): isclose, allclose, array_equal. Values only."""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import Tensor, plain_array
from .sorting import numpy_only, values_only


def _tol(name, rtol, atol):
    for arg, v in (("rtol", rtol), ("atol", atol)):
        if type(v) not in (int, float) or not v >= 0:
            raise ApsiError(f"{name}: {arg} must be a number >= 0, got {v!r}")


def _pair(name, a, b):
    numpy_only(name, a, b)
    ad, bd = plain_array(a, name, "a"), plain_array(b, name, "b")
    try:
        np.broadcast_shapes(ad.shape, bd.shape)
    except ValueError:
        raise ApsiError(f"{name}: shapes {ad.shape} and {bd.shape} do not broadcast") from None
    return ad, bd


@values_only
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """true where |a - b| <= atol + rtol * |b| (elementwise, a boolean tensor), as NumPy's isclose."""
    _tol("isclose", rtol, atol)
    ad, bd = _pair("isclose", a, b)
    return Tensor(np.isclose(ad, bd, rtol=rtol, atol=atol, equal_nan=bool(equal_nan)))


@values_only
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """true when isclose(a, b) holds everywhere."""
    _tol("allclose", rtol, atol)
    ad, bd = _pair("allclose", a, b)
    return bool(np.allclose(ad, bd, rtol=rtol, atol=atol, equal_nan=bool(equal_nan)))


@values_only
def array_equal(a, b, equal_nan=False):
    """true when a and b have the same shape and the same elements."""
    numpy_only("array_equal", a, b)
    ad, bd = plain_array(a, "array_equal", "a"), plain_array(b, "array_equal", "b")
    if equal_nan and (ad.dtype.kind not in "fc" or bd.dtype.kind not in "fc"):
        equal_nan = False
    return bool(np.array_equal(ad, bd, equal_nan=bool(equal_nan)))
