"""Reductions and scans NumPy users reach for (issue 19): prod, var/std, nansum/nanmean, cumsum,
cumprod, diff, median/quantile/percentile, and the boolean all/any/count_nonzero.

cumsum, cumprod and prod are ops with rules in vjps.py; the rest are built from differentiable ops,
so their gradients follow (median and quantile pass theirs to the sorted elements they interpolate,
as torch.quantile does).
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd import reduce as _reduce
from ..autograd.foreign import Foreign
from ..autograd.ops import apply, sqrt, where
from ..autograd.shape import concat, getitem, reshape, transpose
from ..autograd.tensor import Tensor, as_tensor, plain_array
from ..autograd.vjps import keep_shape
from .args import axes_of, axis_of  # noqa: F401  (scans' names, as before)


def moveaxis(x, source, destination):
    """x with axis `source` moved to position `destination` (the others keep their order)."""
    try:
        x = as_tensor(x, "moveaxis")
    except Foreign:
        return foreign.call("moveaxis", x, source, destination)
    src, dst = axis_of("moveaxis", x, source), axis_of("moveaxis", x, destination)
    order = [i for i in range(x.ndim) if i != src]
    order.insert(dst, src)
    return x if order == list(range(x.ndim)) else transpose(x, order)


def _last(name, x, axis):
    """(x with `axis` moved last, the axis); axis none flattens, as NumPy's scans do."""
    if axis is None:
        return reshape(x, [-1]), None
    a = axis_of(name, x, axis)
    return moveaxis(x, a, -1), a


def flip_last(x):
    return getitem(x, (Ellipsis, slice(None, None, -1)))


def scan_input(name, x, axis):
    """(x as a tensor, its axis as an int) for a running function, axis none flattening x; or
    (None, the foreign version's result) for a torch tensor or a quantity."""
    try:
        x = as_tensor(x, name)
    except Foreign:
        return None, foreign.call(name, x, axis=axis)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    return x, axis_of(name, x, axis)


def _scan(name, numpy_fn, doc):
    """A running reduction along `axis` (none: over the flattened tensor) with its rule `name`."""
    def scan(x, axis=None):
        x, axis = scan_input(name, x, axis)
        if x is None:
            return axis
        return apply(name, lambda d, axis: numpy_fn(d, axis=axis), (x,), {"axis": axis})
    scan.__name__ = scan.__qualname__ = name
    scan.__doc__ = doc
    return scan


cumsum = _scan("cumsum", np.cumsum, "Running sums along `axis` (none: over the flattened tensor).")
cumprod = _scan("cumprod", np.cumprod, "Running products along `axis`; the gradient is exact at zeros too.")


def prod(x, axis=None, keepdims=False):
    """Product over `axis` (an int, a list of ints, or none for all); exact gradient at zeros."""
    try:
        x = as_tensor(x, "prod")
    except Foreign:
        return foreign.call("prod", x, axis=axis, keepdims=keepdims)
    axes = axes_of("prod", x, axis)
    kept = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    shape = keep_shape(x.shape, axes) if keepdims else kept
    if not axes:
        return x
    if any(x.shape[a] == 0 for a in axes):
        return Tensor(np.prod(x.data, axis=axes, keepdims=bool(keepdims)))
    rest = [i for i in range(x.ndim) if i not in axes]
    flat = reshape(transpose(x, rest + list(axes)), [x.shape[i] for i in rest] + [-1])
    out = apply("prod", lambda d, axis, keepdims: np.prod(d, axis=axis, keepdims=keepdims), (flat,),
                {"axis": flat.ndim - 1, "keepdims": False})
    return reshape(out, list(shape)) if out.shape != shape else out


def _others_prod(x, axis):
    """GRAPH's others_prod (see xp_numlib): the same exclusive products, with differentiable ops."""
    xm = moveaxis(x, axis, -1)
    one = Tensor(np.ones(xm.shape[:-1] + (1,)))
    left = cumprod(concat([one, getitem(xm, (Ellipsis, slice(None, -1)))], axis=-1), -1)
    right = flip_last(cumprod(flip_last(concat([getitem(xm, (Ellipsis, slice(1, None))), one], axis=-1)), -1))
    return moveaxis(left * right, -1, axis)


def _count(name, x, axes):
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def var(x, axis=None, ddof=0, keepdims=False):
    """Variance over `axis`: sum((x - mean)**2) / (n - ddof); ddof=1 is the sample variance."""
    try:
        x = as_tensor(x, "var")
    except Foreign:
        return foreign.call("var", x, axis=axis, ddof=ddof, keepdims=keepdims)
    axes = axes_of("var", x, axis)
    if type(ddof) is not int or ddof < 0:
        raise ApsiError(f"var/std: ddof must be an int >= 0, got {ddof!r}")
    n = _count("var", x, axes)
    if n - ddof <= 0:
        raise ApsiError(f"var/std: {n} value(s) along axis={axis!r} with ddof={ddof}: need more than "
                        f"{ddof} (shape {x.shape})")
    d = x - _reduce.mean(x, list(axes), keepdims=True)
    return _reduce.sum(d * d, list(axes), keepdims) / float(n - ddof)


def std(x, axis=None, ddof=0, keepdims=False):
    """Standard deviation over `axis`: sqrt(var(x, axis, ddof))."""
    try:
        x = as_tensor(x, "std")
    except Foreign:
        return foreign.call("std", x, axis=axis, ddof=ddof, keepdims=keepdims)
    return sqrt(var(x, axis, ddof, keepdims))


def nansum(x, axis=None, keepdims=False):
    """sum with NaN counted as 0 (no gradient to the NaN entries)."""
    try:
        x = as_tensor(x, "nansum")
    except Foreign:
        return foreign.call("nansum", x, axis=axis, keepdims=keepdims)
    axes = axes_of("nansum", x, axis)
    return _reduce.sum(where(np.isnan(x.data), 0.0, x), list(axes), keepdims)


def nanmean(x, axis=None, keepdims=False):
    """mean over the entries that are not NaN."""
    try:
        x = as_tensor(x, "nanmean")
    except Foreign:
        return foreign.call("nanmean", x, axis=axis, keepdims=keepdims)
    axes = axes_of("nanmean", x, axis)
    kept = np.sum(~np.isnan(x.data), axis=axes, keepdims=bool(keepdims))
    if np.any(kept == 0):
        raise ApsiError(f"nanmean: some slice along axis={axis!r} is all NaN (shape {x.shape})")
    return nansum(x, list(axes), keepdims) / kept.astype(np.float64)


def _bool_reduce(name, fn):
    def op(x, axis=None, keepdims=False):
        try:
            x = as_tensor(x, name)
        except Foreign:
            return foreign.call(name, x, axis=axis, keepdims=keepdims)
        return Tensor(np.asarray(fn(x.data, axis=axes_of(name, x, axis), keepdims=bool(keepdims))))

    op.__name__ = op.__qualname__ = name
    return op


all_ = _bool_reduce("all", np.all)
any_ = _bool_reduce("any", np.any)
count_nonzero = _bool_reduce("count_nonzero", np.count_nonzero)


def diff(x, n=1, axis=-1):
    """x[1:] - x[:-1] along `axis`, `n` times."""
    try:
        x = as_tensor(x, "diff")
    except Foreign:
        return foreign.call("diff", x, n=n, axis=axis)
    if type(n) is not int or n < 0:
        raise ApsiError(f"diff: n must be an int >= 0, got {n!r}")
    a = axis_of("diff", x, axis)
    head = (slice(None),) * a
    for _ in range(n):
        x = getitem(x, head + (slice(1, None),)) - getitem(x, head + (slice(None, -1),))
    return x


def quantile(x, q, axis=None, keepdims=False, method="linear"):
    """The q-th quantile (q in [0, 1], a number or a list) along `axis`. method: "linear" (NumPy's
    default: interpolate between the sorted values), "lower", "higher", "nearest", "midpoint".
    With a list q the result has q's axis first."""
    try:
        x = as_tensor(x, "quantile")
    except Foreign:
        return foreign.call("quantile", x, q, axis=axis, keepdims=keepdims, method=method)
    return _quantile("quantile", x, q, axis, keepdims, method=method)


def percentile(x, q, axis=None, keepdims=False, method="linear"):
    """quantile with q in percent (0 to 100)."""
    try:
        x = as_tensor(x, "percentile")
    except Foreign:
        return foreign.call("percentile", x, q, axis=axis, keepdims=keepdims, method=method)
    qs = plain_array(q, "percentile", "q").astype(np.float64) / 100.0
    return _quantile("percentile", x, qs, axis, keepdims, scale=100.0, method=method)


def median(x, axis=None, keepdims=False):
    """The middle value along `axis` (the mean of the two middle ones for an even count)."""
    try:
        x = as_tensor(x, "median")
    except Foreign:
        return foreign.call("median", x, axis=axis, keepdims=keepdims)
    return _quantile("median", x, 0.5, axis, keepdims)


QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _positions(pos, n, method):
    """(lo, hi, t): the quantile is s[lo] + (s[hi] - s[lo]) * t for each position."""
    lo = np.floor(pos).astype(np.int64)
    if method == "linear":
        return lo, np.minimum(lo + 1, n - 1), pos - lo
    if method == "midpoint":
        return lo, np.ceil(pos).astype(np.int64), np.full(pos.shape, 0.5)
    pick = {"lower": lo, "higher": np.ceil(pos), "nearest": np.round(pos)}[method].astype(np.int64)
    return pick, pick, np.zeros(pos.shape)


def _quantile(name, x, q, axis, keepdims, scale=1.0, method="linear"):
    from .sorting import sort

    if method not in QUANTILE_METHODS:
        raise ApsiError(f"{name}: method must be one of {', '.join(QUANTILE_METHODS)}, not {method!r}")

    qs = plain_array(q, name, "q").astype(np.float64)
    if qs.ndim > 1 or np.any(~(qs >= 0)) or np.any(qs > 1):
        raise ApsiError(f"{name}: q must be a number or a list of numbers from 0 to {scale:g}, "
                        f"got {(qs * scale).tolist()}")
    axes = axes_of(name, x, axis)
    if not axes or any(x.shape[a] == 0 for a in axes):
        raise ApsiError(f"{name}: no values to take a quantile of (shape {x.shape}, axis={axis!r})")
    rest = [i for i in range(x.ndim) if i not in axes]
    flat = reshape(transpose(x, rest + list(axes)), [x.shape[i] for i in rest] + [-1])
    s = sort(flat, axis=-1)
    lo, hi, t = _positions(qs * (s.shape[-1] - 1), s.shape[-1], method)
    a, b = getitem(s, (Ellipsis, lo)), getitem(s, (Ellipsis, hi))
    out = a + (b - a) * t                             # (..., len(q)) or (...) for a scalar q
    nan_rows = np.isnan(s.data[..., -1]) if s.data.dtype.kind == "f" else None   # sort puts NaN last
    if nan_rows is not None and nan_rows.any():       # NumPy: a slice holding NaN has a NaN quantile
        out = where(nan_rows[..., None] if qs.ndim else nan_rows, np.nan, out)
    if keepdims:
        kshape = list(keep_shape(x.shape, axes))
        out = reshape(out, kshape + ([qs.size] if qs.ndim else []))
    if qs.ndim:
        out = moveaxis(out, -1, 0)
    return out
