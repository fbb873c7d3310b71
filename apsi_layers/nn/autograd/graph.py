"""GRAPH (the differentiable twin of xp.RAW) and Tensor's operator methods.

Both are wiring only: each name maps to an op defined in ops.py, reduce.py or shape.py.
"""

from types import SimpleNamespace

import numpy as np

from apsi_lang.errors import ApsiError

from . import ops, reduce, shape
from . import xp as _raw
from .tensor import Tensor, as_tensor


def _const(fn):
    """A RAW helper lifted to tensors: its result is a constant (masks and counts)."""
    return lambda *args: Tensor(fn(*(a.data if type(a) is Tensor else a for a in args)))


GRAPH = SimpleNamespace(
    sum_to=shape.sum_to, broadcast_to=shape.broadcast_to, reshape=shape.reshape,
    transpose=shape.transpose, swap_last=shape.swap_last, expand_dims=shape.expand_dims,
    matmul=ops.matmul, sum=reduce.sum, exp=ops.exp, log=ops.log, sigmoid=ops.sigmoid, tanh=ops.tanh,
    sin=ops.sin,
    cos=ops.cos, sign=_const(np.sign), where=ops.where, between=_const(_raw.between),
    share=_const(_raw.share), equal_mask=_const(_raw.equal_mask), count=_const(_raw.count),
    getitem=shape.getitem, index_add=shape.index_add, take_along=shape.take_along,
    put_along=shape.put_along,
)


def _compare(fn, symbol):
    def op(a, b):
        if type(b) is not Tensor and not isinstance(b, float | int | list | tuple | np.ndarray):
            return NotImplemented
        ad = a.data
        bd = b.data if type(b) is Tensor else as_tensor(b, symbol, "b").data
        try:
            return Tensor(fn(ad, bd))
        except ValueError:
            raise ApsiError(ops.broadcast_message(f"comparison {symbol}", ad, bd)) from None
    return op


def _values_only(fn, symbol, reverse=False):
    """// and %: piecewise constant or shifted, so they give values, not gradients."""
    def op(a, b):
        x, y = (b, a) if reverse else (a, b)
        xd = ops.operand(x, symbol, "a")[1]    # numbers stay numbers: int // int stays int
        yd = ops.operand(y, symbol, "b")[1]
        try:
            return Tensor(fn(xd, yd))
        except ValueError:
            raise ApsiError(ops.broadcast_message(symbol, xd, yd)) from None
    return op


def _immutable(self, index, value):
    raise ApsiError("tensors are immutable: build a new one, e.g. with where(mask, new, x) or concat")


def _install():
    T = Tensor
    T.__add__ = T.__radd__ = ops.add          # commutative: order does not change the value
    T.__mul__ = T.__rmul__ = ops.mul
    T.__sub__ = ops.sub
    T.__rsub__ = lambda a, b: ops.sub(b, a)
    T.__truediv__ = ops.div
    T.__rtruediv__ = lambda a, b: ops.div(b, a)
    T.__pow__ = ops.power
    T.__rpow__ = lambda a, b: ops.power(b, a)
    T.__floordiv__ = _values_only(np.floor_divide, "//")
    T.__rfloordiv__ = _values_only(np.floor_divide, "//", reverse=True)
    T.__mod__ = _values_only(np.mod, "%")
    T.__rmod__ = _values_only(np.mod, "%", reverse=True)
    T.__matmul__ = ops.matmul
    T.__rmatmul__ = lambda a, b: ops.matmul(b, a)
    T.__neg__ = ops.neg
    T.__pos__ = lambda a: a
    T.__abs__ = ops.abs
    T.__getitem__ = shape.getitem
    T.__setitem__ = _immutable
    T.__lt__ = _compare(np.less, "<")
    T.__le__ = _compare(np.less_equal, "<=")
    T.__gt__ = _compare(np.greater, ">")
    T.__ge__ = _compare(np.greater_equal, ">=")
    T.__eq__ = _compare(np.equal, "==")
    T.__ne__ = _compare(np.not_equal, "!=")
    T.__hash__ = None
    T.__round__ = lambda a, ndigits=None: Tensor(np.round(a.data, ndigits or 0))  # values only
    T.T = property(lambda a: shape.transpose(a))
    T.reshape = shape.reshape
    T.sum = reduce.sum
    T.mean = reduce.mean
    T.max = reduce.max
    T.min = reduce.min
    T.argmax = reduce.argmax


_install()


def _add_linalg():
    """The linear-algebra rules (linalg_vjps.py) also use xp.inv, xp.solve and xp.einsum."""
    from ..numlib import linalg

    GRAPH.inv, GRAPH.solve, GRAPH.einsum = linalg.inv, linalg.solve, linalg.einsum
    GRAPH.det, GRAPH.stack = linalg.det, shape.stack
    _raw.RAW.det, _raw.RAW.stack = np.linalg.det, np.stack
    _raw.RAW.inv, _raw.RAW.solve, _raw.RAW.einsum = linalg.raw_inv, linalg.raw_solve, linalg.raw_einsum


_add_linalg()


def _install_numlib():
    """numlib (issue 19): GRAPH twins of xp_numlib's helpers and the NumPy-style tensor methods."""
    from ..numlib import construct, elementwise, scans, sorting
    from . import xp_numlib as _xn

    GRAPH.__dict__.update(
        sqrt=ops.sqrt, cosh=elementwise.cosh, sinh=elementwise.sinh, floor=_const(np.floor),
        flip=construct.flip, cumsum=scans.cumsum, cumprod=scans.cumprod, moveaxis=scans.moveaxis,
        has_zero=lambda x: _xn.has_zero(x.data if type(x) is Tensor else x),
        zero_masks=lambda x, axis: _xn.zero_masks(x.data if type(x) is Tensor else x, axis),
        finite_mask=_const(_xn.finite_mask), eye_mask=_xn.eye_mask, tri_mask=_xn.tri_mask,
        recording=True,
        others_prod=scans._others_prod,
    )
    T = Tensor
    T.std, T.var, T.prod = scans.std, scans.var, scans.prod
    T.cumsum, T.cumprod = scans.cumsum, scans.cumprod
    T.all, T.any = scans.all_, scans.any_
    T.astype, T.squeeze, T.flatten = construct.astype, construct.squeeze, lambda a: shape.reshape(a, [-1])
    T.argmin, T.argsort, T.round = reduce.argmin, sorting.argsort, elementwise.round


_install_numlib()


def _install_toolbox():
    """Issue 35: the rules' polygamma and convolve, plain (RAW) and differentiable (GRAPH)."""
    from ..numlib import sequences, special

    _raw.RAW.convolve, _raw.RAW.polygamma = np.convolve, special.polygamma_values
    GRAPH.__dict__.update(polygamma=special.polygamma, convolve=sequences.convolve)


_install_toolbox()
