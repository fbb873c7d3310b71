"""Sorting and sets (issue 19): sort, argsort, topk, unique, bincount, histogram, searchsorted, isin.

sort and topk are differentiable: they pick elements with take_along, whose gradient puts each
cotangent back where its element came from (torch's rule). The others return ints or booleans.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd.foreign import Foreign
from ..autograd.shape import index_add, reshape, take_along
from ..autograd.tensor import Tensor, as_tensor, plain_array
from .args import axis_of


def values_only(fn):
    """A function that returns values, no gradient (unique, histogram, isclose, ...): given a foreign
    tensor (torch), the backend's version runs; torch's computes them with this NumPy code on the
    host (`fn.numpy`), so both backends give NumPy's answer."""
    def run(*args, **kwargs):
        if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in (*args, *kwargs.values())):
            return foreign.call(fn.__name__, *args, **kwargs)
        return fn(*args, **kwargs)
    run.__name__, run.__qualname__, run.__doc__, run.numpy = fn.__name__, fn.__qualname__, fn.__doc__, fn
    return run


def numpy_only(name, *values):
    """A torch tensor given to a NumPy-only function: the Foreign error that says so."""
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in values):
        raise Foreign(name)


def _flat_or(name, x, axis):
    """(x, axis) with axis none meaning the flattened tensor, as NumPy's sort does."""
    if axis is None:
        return reshape(x, [-1]), 0
    return x, axis_of(name, x, axis)


def argsort(x, axis=-1, descending=False):
    """The indices that sort x along `axis` (stable: equal values keep their order)."""
    try:
        x = as_tensor(x, "argsort")
    except Foreign:
        return foreign.call("argsort", x, axis=axis, descending=descending)
    x, axis = _flat_or("argsort", x, axis)
    return Tensor(_argsort(x.data, axis, descending))


def _argsort(d, axis, descending):
    if d.dtype.kind == "b":
        d = d.astype(np.int64)
    if descending:
        # reversing a stable ascending sort would reverse ties; sorting the negation keeps them stable
        return np.argsort(-d, axis=axis, kind="stable")
    return np.argsort(d, axis=axis, kind="stable")


def sort(x, axis=-1, descending=False):
    """x sorted along `axis` (none: flattened); the gradient goes back to each element's place."""
    try:
        x = as_tensor(x, "sort")
    except Foreign:
        return foreign.call("sort", x, axis=axis, descending=descending)
    x, axis = _flat_or("sort", x, axis)
    return take_along(x, _argsort(x.data, axis, descending), axis)


def topk(x, k, axis=-1, largest=True):
    """[values, indices] of the k largest (or smallest) entries along `axis`, largest first."""
    try:
        x = as_tensor(x, "topk")
    except Foreign:
        return foreign.call("topk", x, k, axis=axis, largest=largest)
    axis = axis_of("topk", x, axis)
    n = x.shape[axis]
    if type(k) is not int or not 0 <= k <= n:
        raise ApsiError(f"topk: k must be an int from 0 to {n} (the size of axis {axis}), got {k!r}")
    idx = _argsort(x.data, axis, descending=bool(largest))
    idx = np.take(idx, np.arange(k), axis=axis)
    return [take_along(x, idx, axis), Tensor(idx)]


@values_only
def unique(x, return_counts=False, return_inverse=False):
    """The distinct values of x, sorted (flattened); with return_counts/return_inverse a list
    [values, counts] / [values, inverse] / [values, inverse, counts] as NumPy orders them."""
    try:
        x = as_tensor(x, "unique")
    except Foreign:
        return foreign.call("unique", x, return_counts=return_counts, return_inverse=return_inverse)
    out = np.unique(x.data, return_counts=bool(return_counts), return_inverse=bool(return_inverse))
    if not (return_counts or return_inverse):
        return Tensor(out)
    parts = [Tensor(out[0])]
    if return_inverse:
        parts.append(Tensor(out[1].reshape(x.shape).astype(np.int64)))
    if return_counts:
        parts.append(Tensor(out[-1].astype(np.int64)))
    return parts


def _labels(name, x):
    d = plain_array(x, name, "x")
    if d.ndim != 1:
        raise ApsiError(f"{name}: x must be 1-D (a list of ints), got shape {d.shape}")
    if d.dtype.kind == "f":
        if not np.all(d == np.round(d)):
            raise ApsiError(f"{name}: x must hold whole numbers, got {d[d != np.round(d)][:3].tolist()}")
        d = d.astype(np.int64)
    elif d.dtype.kind not in "iub":
        raise ApsiError(f"{name}: x must hold ints, got dtype {d.dtype.name}")
    if d.size and d.min() < 0:
        raise ApsiError(f"{name}: x must be >= 0, got {int(d.min())}")
    return d.astype(np.int64)


def bincount(x, weights=None, minlength=0):
    """How many times each int 0..max(x) occurs in x; with weights, the sum of the weights that
    fall in each bin (differentiable in the weights)."""
    if foreign.TYPES and (isinstance(x, foreign.TYPES) or isinstance(weights, foreign.TYPES)):
        return foreign.call("bincount", x, weights=weights, minlength=minlength)
    d = _labels("bincount", x)
    if type(minlength) is not int or minlength < 0:
        raise ApsiError(f"bincount: minlength must be an int >= 0, got {minlength!r}")
    n = max(minlength, int(d.max()) + 1 if d.size else 0)
    if weights is None:
        return Tensor(np.bincount(d, minlength=n).astype(np.int64))
    w = as_tensor(weights, "bincount", "weights")
    if w.shape != d.shape:
        raise ApsiError(f"bincount: weights have shape {w.shape} but x has shape {d.shape}; they must match")
    return index_add(w, d, (n,))


@values_only
def histogram(x, bins=10, range=None):  # noqa: A002
    """[counts, edges]: how many values of x fall in each of `bins` equal bins over `range`
    (default: x's min to max) or between the given edges (a list)."""
    numpy_only("histogram", x, bins)
    d = plain_array(x, "histogram", "x").astype(np.float64).ravel()
    if isinstance(bins, list | Tensor):
        bins = plain_array(bins, "histogram", "bins").astype(np.float64)
        if bins.ndim != 1 or bins.size < 2 or np.any(np.diff(bins) <= 0):
            raise ApsiError("histogram: bins as edges must be an increasing list of at least 2 numbers")
    elif type(bins) is not int or bins < 1:
        raise ApsiError(f"histogram: bins must be an int >= 1 or a list of edges, got {bins!r}")
    if range is not None:
        r = plain_array(range, "histogram", "range").astype(np.float64)
        if r.shape != (2,) or not r[0] < r[1]:
            raise ApsiError(f"histogram: range must be [low, high] with low < high, got {r.tolist()}")
        range = (float(r[0]), float(r[1]))
    if not np.all(np.isfinite(d)):
        raise ApsiError("histogram: x holds NaN or inf; drop them first, e.g. x[isfinite(x)]")
    counts, edges = np.histogram(d, bins=bins, range=range)
    return [Tensor(counts.astype(np.int64)), Tensor(edges)]


@values_only
def searchsorted(a, v, side="left"):
    """Where each value of v would be inserted into the sorted 1-D a to keep it sorted (ints)."""
    if side not in ("left", "right"):
        raise ApsiError(f'searchsorted: side must be "left" or "right", not {side!r}')
    numpy_only("searchsorted", a, v)
    ad = plain_array(a, "searchsorted", "a")
    if ad.ndim != 1:
        raise ApsiError(f"searchsorted: a must be 1-D and sorted, got shape {ad.shape}")
    vd = plain_array(v, "searchsorted", "v")
    out = np.searchsorted(ad, vd, side=side)
    return Tensor(np.asarray(out, dtype=np.int64))


@values_only
def isin(x, test):
    """true where an element of x is one of the values in `test` (a boolean tensor of x's shape)."""
    numpy_only("isin", x, test)
    xd = plain_array(x, "isin", "x")
    td = plain_array(test, "isin", "test")
    return Tensor(np.isin(xd, td))
