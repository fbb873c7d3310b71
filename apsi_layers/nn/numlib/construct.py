"""Shapes and construction (issue 19): squeeze, flip, roll, tile, repeat, pad, split, meshgrid,
identity, full_like, astype.

Each reshaping one is built from reshape, indexing and broadcasting, whose rules are their linear
adjoints, so gradients (of any order) flow through without rules of their own.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import type_name

from ..autograd import foreign
from ..autograd.foreign import Foreign
from ..autograd.ops import apply
from ..autograd.shape import broadcast_to, getitem, index_add, reshape
from ..autograd.tensor import Tensor, as_tensor, describe, to_plain
from .scans import axes_of, axis_of

# The dtypes a tensor may have. Nothing else is accepted: an object array would hold Python objects.
DTYPES = {"float64": np.float64, "float": np.float64, "float32": np.float32, "int64": np.int64,
          "int": np.int64, "int32": np.int32, "bool": np.bool_}


def _along(x, axis, idx):
    """x indexed by the int array idx along `axis` (an int in range)."""
    return getitem(x, (slice(None),) * axis + (np.asarray(idx, dtype=np.int64),))


def _tensor(name, x, *args, **kwargs):
    try:
        return as_tensor(x, name), None
    except Foreign:
        return None, foreign.call(name, x, *args, **kwargs)


def squeeze(x, axis=None):
    """x without its size-1 axes (or only `axis`, which must have size 1)."""
    x, done = _tensor("squeeze", x, axis=axis)
    if x is None:
        return done
    axes = [a for a in range(x.ndim) if x.shape[a] == 1] if axis is None else axes_of("squeeze", x, axis)
    for a in axes:
        if x.shape[a] != 1:
            raise ApsiError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 (shape {x.shape})")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in axes])


def flip(x, axis=None):
    """x reversed along `axis` (an int, a list, or none for every axis)."""
    x, done = _tensor("flip", x, axis=axis)
    if x is None:
        return done
    axes = axes_of("flip", x, axis)
    return getitem(x, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim)))


def roll(x, shift, axis=None):
    """x shifted by `shift` places along `axis`, wrapping around (none: over the flattened tensor)."""
    x, done = _tensor("roll", x, shift, axis=axis)
    if x is None:
        return done
    if axis is None:
        return reshape(roll(reshape(x, [-1]), shift, 0), list(x.shape))
    shifts = shift if isinstance(shift, list | tuple) else [shift]
    axes = axis if isinstance(axis, list | tuple) else [axis]
    if len(shifts) != len(axes) or not all(type(s) is int for s in shifts):
        raise ApsiError(f"roll: shift must be an int (or a list of ints, one per axis), got {shift!r}")
    for s, a in zip(shifts, axes, strict=True):
        a = axis_of("roll", x, a)
        n = x.shape[a]
        if n:
            x = _along(x, a, (np.arange(n) - s) % n)
    return x


def tile(x, reps):
    """x repeated `reps` times (an int, or a list, one count per axis counted from the last)."""
    x, done = _tensor("tile", x, reps)
    if x is None:
        return done
    reps = [reps] if type(reps) is int else reps
    if not isinstance(reps, list | tuple) or not all(type(r) is int and r >= 0 for r in reps):
        raise ApsiError(f"tile: reps must be an int >= 0 or a list of them, got {reps!r}")
    nd = max(len(reps), x.ndim)
    x = reshape(x, [1] * (nd - x.ndim) + list(x.shape))
    reps = [1] * (nd - len(reps)) + list(reps)
    for a, r in enumerate(reps):
        if r != 1:
            x = _along(x, a, np.tile(np.arange(x.shape[a]), r))
    return x


def repeat(x, repeats, axis=None):
    """Each element repeated `repeats` times (an int, or a list with one count per element) along
    `axis` (none: the flattened tensor)."""
    x, done = _tensor("repeat", x, repeats, axis=axis)
    if x is None:
        return done
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    axis = axis_of("repeat", x, axis)
    counts = _int_values(repeats)           # (checked by to_plain: NumPy never sees an unknown object)
    if counts is None or np.any(counts < 0) or counts.ndim > 1:
        raise ApsiError(f"repeat: repeats must be an int >= 0 or a list of them, got {describe(repeats)}")
    try:
        idx = np.repeat(np.arange(x.shape[axis]), counts)
    except ValueError:
        raise ApsiError(f"repeat: {counts.size} counts for an axis of size {x.shape[axis]}; give one "
                        "count or one per element") from None
    return _along(x, axis, idx)


def _int_values(v):
    """v as an int array if it is an int, a tensor or (nested) lists of ints, else None."""
    try:
        d = np.asarray(to_plain(v))
    except (TypeError, ValueError):
        return None
    return d if d.dtype.kind in "iu" else None


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def pad(x, pad_width, mode="constant", constant_values=0):
    """x with `pad_width` values added before and after each axis: an int, [before, after], or one
    [before, after] per axis. mode: "constant" (constant_values), "edge", "reflect", "symmetric",
    "wrap" (NumPy's meanings)."""
    x, done = _tensor("pad", x, pad_width, mode=mode, constant_values=constant_values)
    if x is None:
        return done
    if mode not in _PAD_MODES:
        raise ApsiError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, not {mode!r}")
    widths = _pad_widths(x, pad_width)
    if mode == "constant":
        if type(constant_values) not in (int, float):
            raise ApsiError(f"pad: constant_values must be a number, got {type_name(constant_values)}")
        shape = tuple(n + b + a for n, (b, a) in zip(x.shape, widths, strict=True))
        inner = tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, widths, strict=True))
        fill = np.full(shape, float(constant_values))
        fill[inner] = 0.0
        return index_add(x, inner, shape) + fill
    for a, (b, af) in enumerate(widths):
        if b or af:
            if x.shape[a] == 0:
                raise ApsiError(f"pad: mode {mode!r} cannot pad the empty axis {a}")
            x = _along(x, a, np.pad(np.arange(x.shape[a]), (b, af), mode=mode))
    return x


def _pad_widths(x, pad_width):
    w = _int_values(pad_width)
    try:
        if w is None or np.any(w < 0):
            raise ValueError
        return np.broadcast_to(w, (x.ndim, 2)).tolist()
    except ValueError:
        raise ApsiError(f"pad: pad_width must be an int >= 0, [before, after], or one [before, after] "
                        f"per axis ({x.ndim}), got {pad_width!r}") from None


def split(x, indices_or_sections, axis=0):
    """A list of pieces of x along `axis`: n equal pieces, or cut at the given indices."""
    x, done = _tensor("split", x, indices_or_sections, axis=axis)
    if x is None:
        return done
    axis = axis_of("split", x, axis)
    n = x.shape[axis]
    s = indices_or_sections
    if type(s) is int:
        if s <= 0 or n % s:
            raise ApsiError(f"split: {n} (the size of axis {axis}) does not split into {s} equal pieces; "
                            "give a number that divides it, or a list of cut indices")
        cuts = list(range(0, n + 1, n // s))
    elif isinstance(s, list | tuple) and all(type(i) is int for i in s):
        cuts = [0] + [min(max(i if i >= 0 else i + n, 0), n) for i in s] + [n]
    else:
        raise ApsiError(f"split: expects an int (pieces) or a list of int indices, not {describe(s)}")
    head = (slice(None),) * axis
    return [getitem(x, head + (slice(a, max(a, b)),)) for a, b in zip(cuts, cuts[1:], strict=False)]


def meshgrid(*xs, indexing="xy"):
    """Coordinate grids from 1-D tensors: NumPy's meshgrid ("xy": the first two axes swapped, as
    for plotting; "ij": matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ApsiError(f'meshgrid: indexing must be "xy" or "ij", not {indexing!r}')
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in xs):
        return foreign.call("meshgrid", *xs, indexing=indexing)
    ts = [as_tensor(v, "meshgrid", f"xs[{i}]") for i, v in enumerate(xs)]
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ApsiError(f"meshgrid: argument {i} has shape {t.shape}; each must be 1-D")
    order = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        order[0], order[1] = 1, 0
    shape = [0] * len(ts)
    for i, t in enumerate(ts):
        shape[order[i]] = t.shape[0]
    out = []
    for i, t in enumerate(ts):
        s = [1] * len(ts)
        s[order[i]] = t.shape[0]
        out.append(broadcast_to(reshape(t, s), shape))
    return out


def identity(n):
    """The n x n identity matrix."""
    if type(n) is not int or n < 0:
        raise ApsiError(f"identity: n must be an int >= 0, got {n!r}")
    return Tensor(np.eye(n))


def full_like(x, value):
    """A tensor of x's shape and dtype filled with `value`."""
    if type(value) not in (int, float, bool):
        raise ApsiError(f"full_like: value must be a number or a boolean, got {type_name(value)}")
    if foreign.TYPES and isinstance(x, foreign.TYPES):
        return foreign.call("full_like", x, value)
    d = as_tensor(x, "full_like").data
    return Tensor(np.full(d.shape, value, dtype=d.dtype))


def _converter(dtype):
    def convert(x):
        return astype(x, dtype)

    convert.__name__ = convert.__qualname__ = dtype
    convert.__doc__ = f"x as a {dtype} tensor (NumPy's np.{dtype}(x)); also a dtype: astype(x, {dtype})"
    return convert


# NumPy's dtype names: float32(x) converts, and astype(x, float32) takes them as dtypes. Python's
# (Apsi's) int, float and bool stand for int64, float64 and bool, as in NumPy.
float64, float32, int64, int32 = (_converter(n) for n in ("float64", "float32", "int64", "int32"))
_NAMED = {int: "int64", float: "float64", bool: "bool", float64: "float64", float32: "float32",
          int64: "int64", int32: "int32"}


def dtype_of(name, dtype):
    """A dtype name checked against DTYPES (so "object", "O", "V8", ... are refused)."""
    key = dtype if isinstance(dtype, str) else _NAMED.get(dtype) if callable(dtype) else None
    if key not in DTYPES:
        raise ApsiError(f"{name}: dtype must be one of {', '.join(DTYPES)}, not "
                        f"{repr(dtype) if isinstance(dtype, str) else describe(dtype)}")
    return DTYPES[key]


def promote(x):
    """x as float64 with its gradient kept (an identity on the tape): an int variable of grad must
    get the slope of its values, never a silent 0 from a fresh untracked copy."""
    if x.data.dtype == np.float64:
        return x
    return apply("identity", lambda d: d.astype(np.float64), (x,), {})


def astype(x, dtype):
    """x converted to `dtype` ("float64", "float32", "int64", "int32", "bool"; "float"/"int" mean the
    64-bit ones). To float64 (from a float, int or bool tensor) keeps the gradient, so a variable
    given as ints differentiates as its float values; other conversions give values only."""
    target = dtype_of("astype", dtype)
    if foreign.TYPES and isinstance(x, foreign.TYPES):
        return foreign.call("astype", x, dtype)
    x = as_tensor(x, "astype")
    if x.data.dtype == target:
        return x
    if target is np.float64:
        return promote(x)
    if target is not np.bool_ and x.data.dtype.kind == "f" and not np.all(np.isfinite(x.data)):
        raise ApsiError(f"astype: cannot convert NaN or inf to {dtype}; use nan_to_num first")
    return Tensor(x.data.astype(target))
