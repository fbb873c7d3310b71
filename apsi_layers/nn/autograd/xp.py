"""RAW: the NumPy namespace the gradient rules use in an ordinary backward pass.

Its twin GRAPH (built in ops.py from the differentiable ops) has the same names, so one rule serves
both first-order (fast, ndarrays) and higher-order (recorded, tensors) differentiation.
"""

from types import SimpleNamespace

import numpy as np


def sum_to(x, shape):
    """Sum a broadcast gradient back down to `shape`."""
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and x.shape[i + lead] != 1)
    out = x.sum(axis=axes, keepdims=True)
    return out.reshape(shape) if lead else out


def index_add(g, index, shape):
    """Zeros of `shape` with g added at `index` (repeated indices add up)."""
    out = np.zeros(shape)
    if is_basic_index(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def is_basic_index(index):
    """True when indexing cannot hit one element twice (ints, slices, None, ..., boolean masks)."""
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, int | slice) or i is None or i is Ellipsis
               or (isinstance(i, np.ndarray) and i.dtype == bool) for i in items)


def put_along(g, idx, axis, shape):
    out = np.zeros(shape)
    # take_along_axis with a size-1 index axis picks one element per row, so no collisions
    # except when idx itself repeats along `axis`; add.at handles both.
    if idx.shape[axis] == 1:
        np.put_along_axis(out, idx, g, axis)
    else:
        np.add.at(out, _along_index(idx, axis), g)
    return out


def _along_index(idx, axis):
    axis %= idx.ndim
    grids = np.indices(idx.shape, sparse=True)
    return tuple(idx if i == axis else grids[i] for i in range(idx.ndim))


def sigmoid(x):
    e = np.exp(-np.abs(x))
    r = 1.0 / (1.0 + e)
    return np.where(x >= 0, r, e * r)


def swap_last(x):
    return np.swapaxes(x, -1, -2)


def between(x, lo, hi):
    inside = np.ones(x.shape, dtype=bool)
    if lo is not None:
        inside &= x >= lo
    if hi is not None:
        inside &= x <= hi
    return inside


def share(a, b):
    """Where a wins an elementwise max against b: 1, on ties 0.5 (the gradient is shared)."""
    return (a > b) + 0.5 * (a == b)


def equal_mask(x, y):
    return x == y


def count(mask, axis):
    return mask.sum(axis=axis, keepdims=True)


RAW = SimpleNamespace(
    sum_to=sum_to, broadcast_to=np.broadcast_to, reshape=np.reshape, transpose=np.transpose,
    swap_last=swap_last, expand_dims=np.expand_dims, matmul=np.matmul, sum=np.sum,
    exp=np.exp, log=np.log, sigmoid=sigmoid, tanh=np.tanh, sin=np.sin, cos=np.cos, sign=np.sign,
    where=np.where,
    between=between, share=share, equal_mask=equal_mask, count=count,
    getitem=lambda x, index: x[index], index_add=index_add,
    take_along=np.take_along_axis, put_along=put_along,
)

# numlib (issue 19): the helpers its rules use
from .xp_numlib import RAW_NUMLIB  # noqa: E402

RAW.__dict__.update(RAW_NUMLIB)
