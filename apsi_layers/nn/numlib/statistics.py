"""NumPy's NaN-skipping reductions and summary statistics (issue 35): nanmax, nanmin, nanargmax,
nanargmin, nanvar, nanstd, nanmedian, nanquantile, average, ptp, cov, corrcoef.

Each is built from differentiable ops (where, sum, take_along, matmul), so grad and hessian follow
without rules of their own. NaN entries never receive gradient. As in NumPy, a slice with no
values left (all NaN, or fewer than ddof + 1 for nanvar) gives NaN, not an error; nanargmax and
nanargmin refuse an all-NaN slice, as NumPy does (there is no index to give).
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd import reduce as _reduce
from ..autograd.foreign import Foreign
from ..autograd.ops import clip, sqrt, where
from ..autograd.shape import concat, getitem, reshape, take_along, transpose
from ..autograd.tensor import Tensor, as_tensor, plain_array
from ..autograd.vjps import keep_shape
from .scans import QUANTILE_METHODS, _positions, axes_of, moveaxis
from .sorting import sort, values_only


def _tensor(name, x, *args, **kwargs):
    """(x as a Tensor, None), or (None, the foreign version's result) for a torch tensor/quantity."""
    try:
        return as_tensor(x, name), None
    except Foreign:
        return None, foreign.call(name, x, *args, **kwargs)


def _nan_mask(x):
    return np.isnan(x.data) if x.data.dtype.kind in "fc" else np.zeros(x.shape, dtype=bool)


def _refuse_empty(name, x, axes):
    if x.size == 0 or any(x.shape[a] == 0 for a in axes):
        raise ApsiError(f"{name}: no values to reduce (shape {x.shape}); NumPy refuses an empty "
                        "reduction too")


# --- nanmax, nanmin, nanargmax, nanargmin ----------------------------------------------------------

def _nan_input(name, x, axis, keepdims):
    """(x, its reduced axes, its NaN mask) for a NaN-skipping extreme; (the foreign version's
    result, None, None) for a torch tensor or a quantity."""
    x, done = _tensor(name, x, axis=axis, keepdims=keepdims)
    if x is None:
        return done, None, None
    axes = axes_of(name, x, axis)
    _refuse_empty(name, x, axes)
    return x, axes, _nan_mask(x)


def _nan_extreme(name, reduce, fill):
    def op(x, axis=None, keepdims=False):
        x, axes, nan = _nan_input(name, x, axis, keepdims)
        if axes is None:
            return x
        if not nan.any():
            return reduce(x, list(axes), keepdims)
        out = reduce(where(nan, fill, x), list(axes), keepdims)
        empty = np.all(nan, axis=axes, keepdims=bool(keepdims))
        return where(empty, np.nan, out) if empty.any() else out

    op.__name__ = op.__qualname__ = name
    return op


nanmax = _nan_extreme("nanmax", _reduce.max, -np.inf)
nanmax.__doc__ = ("Largest element over `axis`, NaN skipped (an all-NaN slice gives NaN); ties share "
                  "the gradient.")
nanmin = _nan_extreme("nanmin", _reduce.min, np.inf)
nanmin.__doc__ = ("Smallest element over `axis`, NaN skipped (an all-NaN slice gives NaN); ties share "
                  "the gradient.")


def _nan_arg(name, numpy_fn, fill):
    def op(x, axis=None, keepdims=False):
        x, axes, nan = _nan_input(name, x, axis, keepdims)
        if axes is None:
            return x
        if np.any(np.all(nan, axis=axes)):
            raise ApsiError(f"{name}: a slice along axis={axis!r} is all NaN, so it has no index "
                            f"(NumPy refuses it too); drop those rows or use nan_to_num first")
        d = np.where(nan, fill, x.data)
        return Tensor(np.asarray(numpy_fn(d, axis=axis, keepdims=bool(keepdims)), dtype=np.int64))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Index of the {'largest' if fill < 0 else 'smallest'} element, NaN skipped (ints)."
    return values_only(op)


nanargmax = _nan_arg("nanargmax", np.argmax, -np.inf)
nanargmin = _nan_arg("nanargmin", np.argmin, np.inf)


# --- nanvar, nanstd ------------------------------------------------------------------------------------

def _ddof(name, ddof):
    if type(ddof) is not int or ddof < 0:
        raise ApsiError(f"{name}: ddof must be an int >= 0, got {ddof!r}")


def nanvar(x, axis=None, ddof=0, keepdims=False):
    """Variance over `axis` of the values that are not NaN: sum((x - mean)**2) / (count - ddof);
    NaN where count - ddof <= 0 (an all-NaN slice), as NumPy."""
    x, done = _tensor("nanvar", x, axis=axis, ddof=ddof, keepdims=keepdims)
    if x is None:
        return done
    _ddof("nanvar", ddof)
    return _nanvar("nanvar", x, axis, ddof, keepdims)


def _nanvar(name, x, axis, ddof, keepdims):
    axes = list(axes_of(name, x, axis))
    ok = ~_nan_mask(x)
    count = np.sum(ok, axis=tuple(axes), keepdims=True).astype(np.float64)
    # the counts that can be 0 are replaced by 1 where they divide, so a dead slice's zero cotangent
    # stays 0 (0 * inf would make NaN gradients for every other slice's neighbours)
    mean = _reduce.sum(where(ok, x, 0.0), axes, keepdims=True) / np.maximum(count, 1.0)
    d = where(ok, x - mean, 0.0)
    dof = count - ddof if keepdims else np.squeeze(count - ddof, axis=tuple(axes))
    out = _reduce.sum(d * d, axes, keepdims) / np.where(dof > 0, dof, 1.0)
    return where(dof <= 0, np.nan, out) if np.any(dof <= 0) else out


def nanstd(x, axis=None, ddof=0, keepdims=False):
    """sqrt(nanvar(x, axis, ddof)): the standard deviation of the values that are not NaN."""
    x, done = _tensor("nanstd", x, axis=axis, ddof=ddof, keepdims=keepdims)
    if x is None:
        return done
    _ddof("nanstd", ddof)
    return sqrt(_nanvar("nanstd", x, axis, ddof, keepdims))


# --- nanmedian, nanquantile ----------------------------------------------------------------------------

def nanquantile(x, q, axis=None, keepdims=False, method="linear"):
    """The q-th quantile (q in [0, 1], a number or a list) of the values that are not NaN, along
    `axis`; an all-NaN slice gives NaN. Methods as quantile; a list q puts its axis first."""
    x, done = _tensor("nanquantile", x, q, axis=axis, keepdims=keepdims, method=method)
    if x is None:
        return done
    return _nan_quantile("nanquantile", x, q, axis, keepdims, method)


def nanmedian(x, axis=None, keepdims=False):
    """The median of the values that are not NaN along `axis` (the mean of the two middle ones for an
    even count); an all-NaN slice gives NaN."""
    x, done = _tensor("nanmedian", x, axis=axis, keepdims=keepdims)
    if x is None:
        return done
    return _nan_quantile("nanmedian", x, 0.5, axis, keepdims, "median")


def _numpy_empty(d, qs, axes, keepdims, method):
    import warnings

    with warnings.catch_warnings():      # NumPy's "All-NaN slice" / "Mean of empty slice"
        warnings.simplefilter("ignore", RuntimeWarning)
        if method == "median":
            return np.asarray(np.nanmedian(d, axis=axes, keepdims=bool(keepdims)))
        return np.asarray(np.nanquantile(d, qs, axis=axes, keepdims=bool(keepdims), method=method))


def _rows(name, x, axis):
    """x with the reduced axes flattened into the last one, and those axes."""
    axes = axes_of(name, x, axis)
    if not axes:
        raise ApsiError(f"{name}: no values to take a quantile of (shape {x.shape}, axis={axis!r})")
    rest = [i for i in range(x.ndim) if i not in axes]
    return reshape(transpose(x, rest + list(axes)), [x.shape[i] for i in rest] + [-1]), axes


def _q_values(name, q):
    qs = plain_array(q, name, "q").astype(np.float64)
    if qs.ndim > 1 or np.any(~(qs >= 0)) or np.any(qs > 1):
        raise ApsiError(f"{name}: q must be a number or a list of numbers from 0 to 1, got {qs.tolist()}")
    return qs


def _nan_quantile(name, x, q, axis, keepdims, method):
    if method not in QUANTILE_METHODS + ("median",):
        raise ApsiError(f"{name}: method must be one of {', '.join(QUANTILE_METHODS)}, not {method!r}")
    qs = _q_values(name, q)
    if x.ndim == 0:                      # one value: its own quantile (NumPy's shapes: () or (len(q),))
        x, axis, keepdims = reshape(x, [1]), None, False
    axes = axes_of(name, x, axis)
    if x.size == 0:                      # nothing left in any slice: NaN, as NumPy (no gradient)
        return Tensor(_numpy_empty(x.data, qs, axes, keepdims, method))
    flat, axes = _rows(name, x, axis)
    s = sort(flat, axis=-1)                               # NaN sorts last
    n = np.sum(~_nan_mask(flat), axis=-1, keepdims=True)  # (..., 1) values per row
    lo, hi, t = _positions(qs.reshape(-1) * (n - 1), n, "linear" if method == "median" else method)
    top = s.shape[-1] - 1
    a = take_along(s, np.clip(lo, 0, top), -1)
    b = take_along(s, np.clip(hi, 0, top), -1)
    if method == "median":                                # NumPy: the mean of the two middle values
        out = where(t == 0, a, (a + b) * 0.5)
    else:                                                 # NumPy's lerp, from the nearer end
        out = where(t >= 0.5, b - (b - a) * (1.0 - t), a + (b - a) * t)
    if np.any(n == 0):
        out = where(n == 0, np.nan, out)
    return _quantile_shape(out, x, axes, qs, keepdims)


def _quantile_shape(out, x, axes, qs, keepdims):
    """(..., k) -> NumPy's layout: q's axis first (a list q), the kept axes as size 1 (keepdims)."""
    if keepdims:
        out = reshape(out, list(keep_shape(x.shape, axes)) + [qs.size])
    if qs.ndim:
        return moveaxis(out, -1, 0)
    return reshape(out, list(out.shape[:-1]))


# --- average, ptp ----------------------------------------------------------------------------------------

def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The weighted mean sum(a * w) / sum(w) over `axis` (no weights: the mean). 1-D weights with
    an axis weigh positions along it; `returned=true` gives [average, sum of weights]. Gradients
    reach both a and the weights."""
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in (a, weights)):
        return foreign.call("average", a, axis=axis, weights=weights, returned=returned, keepdims=keepdims)
    a = as_tensor(a, "average", "a")
    axes = list(axes_of("average", a, axis))
    if weights is None:
        if a.size == 0 or any(a.shape[i] == 0 for i in axes):
            raise ApsiError(f"average: no values to average (shape {a.shape}, axis={axis!r})")
        avg = _reduce.mean(a, axes, keepdims)
        scale = float(np.prod([a.shape[i] for i in axes]))
        return [avg, Tensor(np.full(avg.shape, scale))] if returned else avg
    w = _weights(a, as_tensor(weights, "average", "weights"), axis, axes)
    total = _reduce.sum(w, axes, keepdims)
    if np.any(total.data == 0):
        raise ApsiError("average: the weights sum to 0 along some slice, so they cannot be normalised "
                        "(NumPy refuses too)")
    avg = _reduce.sum(a * w, axes, keepdims) / total
    return [avg, total * np.ones(avg.shape)] if returned else avg


def _weights(a, w, axis, axes):
    """The weights broadcast against a (NumPy's rules: a's shape, or 1-D per axis with axis given)."""
    if w.shape == a.shape:
        return w
    if axis is None:
        raise ApsiError(f"average: weights of shape {w.shape} differ from a's {a.shape}: give axis= "
                        "to say which axis they weigh, or weights of a's shape")
    want = tuple(a.shape[i] for i in axes)
    if w.shape != want:
        raise ApsiError(f"average: weights for axis={axis!r} must have shape {want} (a has shape "
                        f"{a.shape}), got {w.shape}")
    shape = [a.shape[i] if i in axes else 1 for i in range(a.ndim)]
    return reshape(w, shape)


def ptp(a, axis=None, keepdims=False):
    """max - min over `axis` (the range, 'peak to peak'); ties share the gradient, as max's do."""
    a, done = _tensor("ptp", a, axis=axis, keepdims=keepdims)
    if a is None:
        return done
    _refuse_empty("ptp", a, axes_of("ptp", a, axis))
    axes = list(axes_of("ptp", a, axis))
    return _reduce.max(a, axes, keepdims) - _reduce.min(a, axes, keepdims)


# --- cov, corrcoef ---------------------------------------------------------------------------------------

def _variables(name, m, rowvar, arg):
    x = as_tensor(m, name, arg)
    if x.ndim > 2:
        raise ApsiError(f"{name}: {arg} must be 1-D or 2-D (variables by observations), got shape {x.shape}")
    if x.ndim < 2:
        x = reshape(x, [1, -1])
    if not rowvar and x.shape[0] != 1:
        x = transpose(x)
    return x


def _observation_weights(name, values, n, arg, integer):
    if values is None:
        return None
    w = as_tensor(values, name, arg)
    if w.shape != (n,):
        raise ApsiError(f"{name}: {arg} must be 1-D with one weight per observation ({n}), "
                        f"got shape {w.shape}")
    if integer and not np.all(w.data == np.round(w.data)):
        raise ApsiError(f"{name}: {arg} must hold whole numbers (repeat counts)")
    if np.any(w.data < 0):
        raise ApsiError(f"{name}: {arg} must be >= 0")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in m's rows (rowvar=false: its columns), with y's
    variables appended; ddof defaults to 1 (0 with bias=true); fweights (repeat counts) and aweights
    (importance) weigh the observations, as numpy.cov. One variable gives a 0-d tensor."""
    args = (m, y, fweights, aweights)
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in args):
        return foreign.call("cov", m, y=y, rowvar=rowvar, bias=bias, ddof=ddof, fweights=fweights,
                            aweights=aweights)
    x = _variables("cov", m, rowvar, "m")
    if y is not None:
        yv = _variables("cov", y, rowvar, "y")
        if yv.shape[1] != x.shape[1]:
            raise ApsiError(f"cov: m has {x.shape[1]} observations but y has {yv.shape[1]}")
        x = concat([x, yv], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    elif type(ddof) is not int:
        raise ApsiError(f"cov: ddof must be an int or none, got {ddof!r}")
    n = x.shape[1]
    fw = _observation_weights("cov", fweights, n, "fweights", integer=True)
    aw = _observation_weights("cov", aweights, n, "aweights", integer=False)
    w = fw if aw is None else (aw if fw is None else fw * aw)
    return _covariance(x, w, aw, ddof, n)


def _covariance(x, w, aw, ddof, n):
    # numpy.cov's steps, in its order (so the values agree to the last bit)
    total = float(n) if w is None else _reduce.sum(w)
    fact = total - ddof if aw is None else total - ddof * _reduce.sum(w * aw) / total
    if float(fact) <= 0:
        raise ApsiError(f"cov: {n} observation(s) with ddof={ddof} leave no degrees of freedom "
                        "(NumPy gives inf or NaN with a warning here); give more observations or a "
                        "smaller ddof")
    avg = _reduce.mean(x, 1, keepdims=True) if w is None else _reduce.sum(x * w, 1, keepdims=True) / total
    d = x - avg
    c = (d @ transpose(d if w is None else d * w)) * (1.0 / fact)
    return reshape(c, []) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients: cov(x, y, rowvar) / (std_i std_j), clipped to [-1, 1] as
    numpy.corrcoef; a constant variable gives NaN (0 / 0)."""
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in (x, y)):
        return foreign.call("corrcoef", x, y=y, rowvar=rowvar)
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    idx = np.arange(c.shape[0])
    sd = sqrt(getitem(c, (idx, idx)))
    c = c / reshape(sd, [-1, 1])
    c = c / reshape(sd, [1, -1])
    return clip(c, -1.0, 1.0)

