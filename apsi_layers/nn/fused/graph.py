"""Gather (take) and the graph ops: scatter_add, segment_softmax, bincount.

Scatter-adds run as one np.bincount over flat positions: measured on this project's graph sizes
(E = 12k-50k edges, 16-64 features) it is 4-7x faster than np.add.at and than sorting the edges for
np.add.reduceat. Each gather's backward is such a scatter, each scatter's backward a gather.

A graph's index arrays are the same every step of a fit, so the flat positions built from them and
their range check are kept for the last few index arrays seen (about half of a scatter's time). An
index array that goes in that cache (only arrays owning their memory do) is made read-only: tensors
are immutable, and a changed index must never meet stale positions.
"""

from collections import OrderedDict

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import Tensor, plain_array
from .record import fused, tensor

_CACHE = OrderedDict()          # (kind, id(index array), size) -> (the array, what was derived)
_CACHE_SIZE = 8


def _cached(kind, idx, size, make):
    if idx.base is not None:                   # a view (made per call): nothing to reuse, nothing to pin
        return make()
    key = (kind, id(idx), size)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is idx:
        _CACHE.move_to_end(key)
        return hit[1]
    value = make()
    idx.flags.writeable = False
    _CACHE[key] = (idx, value)
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def _index(idx, fn, size=None):
    """The int64/int array behind idx, checked to lie in [-size, size)."""
    d = plain_array(idx, fn, "index")
    own = d.dtype.kind in "iu"
    if not own:
        if d.dtype.kind == "f" and np.all(d == np.round(d)):
            d = d.astype(np.int64)
        else:
            raise ApsiError(f"{fn}: indices must be integers (use ops.indices), got dtype {d.dtype.name}")
    if size is not None and d.size:
        check = lambda: _check_range(d, size, fn)          # noqa: E731
        _cached("range", d, size, check) if own else check()
    return d


def _check_range(d, size, fn):
    if d.min() < -size or d.max() >= size:
        bad = d[(d < -size) | (d >= size)].ravel()[0]
        raise ApsiError(f"{fn}: index {bad} is out of range for size {size}")
    return True


def _positive(d, size):
    return d % size if d.size and d.min() < 0 else d


def scatter_rows(src, idx, n):
    """[n, *rest] with row e of src [E, *rest] added into row idx[e] (idx 1-D, non-negative)."""
    rest = src.shape[1:]
    post = int(np.prod(rest))
    if post == 1:
        out = np.bincount(idx, weights=src.reshape(-1), minlength=n)
    else:
        flat = _cached("flat", idx, post, lambda: (idx[:, None] * post + np.arange(post)).reshape(-1))
        out = np.bincount(flat, weights=src.reshape(-1), minlength=n * post)
    return out.reshape((n,) + rest)


def _take_forward(x, training, idx, axis):
    return np.take(x, idx, axis=axis), ((x.shape, idx, axis) if training else None)


def _take_backward(g, saved, needs):
    shape, idx, axis = saved
    size = shape[axis]
    pre = int(np.prod(shape[:axis]))
    post = int(np.prod(shape[axis + 1:]))
    g3 = g.reshape(pre, idx.size, post)
    if pre > 1:
        g3 = np.moveaxis(g3, 1, 0)
    gx = scatter_rows(g3.reshape(idx.size, pre * post), idx, size)     # [size, pre * post]
    return (gx.reshape(shape) if pre == 1 else np.moveaxis(gx.reshape(size, pre, post), 0, 1).reshape(shape)),


_take = fused("take", _take_forward, _take_backward, 1)


def take(x, idx, axis=0):
    """x's slices along `axis` picked by the int tensor idx: shape x[:axis] + idx.shape + x[axis+1:]."""
    x = tensor(x, "take")
    if x.ndim == 0:
        raise ApsiError("take: cannot gather from a scalar")
    if not -x.ndim <= axis < x.ndim:
        raise ApsiError(f"take: axis {axis} does not fit a tensor of shape {x.shape}")
    axis %= x.ndim
    d = _positive(_index(idx, "take", x.shape[axis]), x.shape[axis])
    out = _take(x, idx=d.reshape(-1) if d.ndim != 1 else d, axis=axis)
    if d.ndim == 1:
        return out
    from ..autograd import shape
    return shape.reshape(out, x.shape[:axis] + d.shape + x.shape[axis + 1:])


def _scatter_forward(src, training, idx, n):
    return scatter_rows(src, idx, n), (idx if training else None)


def _scatter_backward(g, idx, needs):
    return np.take(g, idx, axis=0),


_scatter = fused("scatter_add", _scatter_forward, _scatter_backward, 1)


def _edges(fn, src, index, n):
    src = tensor(src, fn)
    idx = _index(index, fn, n)
    if src.ndim < 1 or idx.shape != src.shape[:1]:
        raise ApsiError(f"{fn}: index has shape {idx.shape} but src {src.shape} needs one target per "
                        f"row, shape ({src.shape[0] if src.ndim else 0},)")
    return src, _positive(idx, n)


def scatter_add(src, index, n):
    """[n, ...]: row e of src [E, ...] summed into row index[e]."""
    src, idx = _edges("scatter_add", src, index, n)
    return _scatter(src, idx=idx, n=n)


def _segsoft_forward(s, training, idx, n):
    top = np.full((n,) + s.shape[1:], -np.inf)
    np.maximum.at(top, idx, s)
    e = np.exp(s - top[idx])
    p = e / scatter_rows(e, idx, n)[idx]
    return p, ((p, idx, n) if training else None)


def _segsoft_backward(g, saved, needs):
    p, idx, n = saved
    gp = g * p
    return gp - p * scatter_rows(gp, idx, n)[idx],


_segsoft = fused("segment_softmax", _segsoft_forward, _segsoft_backward, 1)


def segment_softmax(scores, index, n):
    """Softmax of scores [E, ...] over each group of edges with the same target index[e]."""
    scores, idx = _edges("segment_softmax", scores, index, n)
    return _segsoft(scores, idx=idx, n=n)


def bincount(index, n):
    """How many times each of 0..n-1 occurs in index, as float64 (no gradient)."""
    idx = _positive(_index(index, "bincount", n), n)
    return Tensor(np.bincount(idx.reshape(-1), minlength=n).astype(np.float64))
