"""Making tensors: from lists, filled, ranges, identity, random (every random function takes seed=)."""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import type_name

from ..autograd import foreign
from ..autograd.tensor import Tensor, describe, plain_array, to_plain
from .args import shape_arg as _shape

_DTYPES = {"float": np.float64, "float64": np.float64, "int": np.int64, "int64": np.int64, "bool": bool}


def _dtype(fn, dtype):
    if dtype not in _DTYPES:
        raise ApsiError(f"{fn}: dtype must be one of \"float\", \"int\", \"bool\", not {dtype!r}")
    return _DTYPES[dtype]


def _count(fn, arg, n, least=0):
    """A size argument: an int >= least, or an Apsi error naming the function and the argument."""
    if not isinstance(n, int) or isinstance(n, bool) or n < least:
        got = repr(n) if isinstance(n, int | float) and not isinstance(n, bool) else describe(n)
        raise ApsiError(f"{fn}: {arg} must be an int >= {least}, got {got}")
    return n


def array(data, dtype="float"):
    """A tensor from a number or a nested list (float64 unless dtype="int"/"bool")."""
    try:
        d = np.array(to_plain(data), dtype=_dtype("array", dtype))
    except (TypeError, ValueError, RecursionError):
        raise ApsiError(_array_problem(data)) from None
    return Tensor(d)


def _array_problem(data):
    """array()'s message: where the list stops being numbers (the first none, with what to do)."""
    from .nested import list_problem

    found = list_problem(data, "list") if isinstance(data, list) else None
    if found is None:
        return (f"array: expects a number or a nested list of numbers with equal lengths "
                f"(like [[1, 2], [3, 4]]), not {describe(data)}")
    tip = ""
    if found.endswith(" is none, not a number"):
        tip = ("; fill the gaps first, e.g. [0.0 if v == none else v for v in xs] (or a mean), or leave "
               "those items out")
    return f"array: expects a number or a nested list of numbers with equal lengths; {found}{tip}"


def zeros(*shape):
    """A float64 tensor of zeros: zeros(2, 3)."""
    return Tensor(np.zeros(_shape("zeros", shape)))


def ones(*shape):
    """A float64 tensor of ones: ones(2, 3)."""
    return Tensor(np.ones(_shape("ones", shape)))


def full(shape, value):
    """A float64 tensor of `shape` filled with `value`."""
    shape = _shape("full", (shape,) if isinstance(shape, int) else tuple(shape))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ApsiError(f"full: value must be a number, got {type_name(value)}")
    return Tensor(np.full(shape, float(value)))


def zeros_like(x):
    """Zeros with x's shape."""
    return Tensor(np.zeros(_shape_of(x, "zeros_like")))


def ones_like(x):
    """Ones with x's shape."""
    return Tensor(np.ones(_shape_of(x, "ones_like")))


def _shape_of(x, fn):
    # (np.shape would read a record's `shape` field, or hand NumPy an unchecked value)
    if type(x) is Tensor:
        return x.data.shape
    if foreign.TYPES and isinstance(x, foreign.TYPES):      # a torch tensor (the torch backend)
        return tuple(x.shape)
    return plain_array(x, fn, "x").shape


def arange(start, stop=None, step=1):
    """Evenly spaced values in [start, stop): arange(5), arange(1, 5), arange(0, 1, 0.25).
    Int arguments give an int tensor (usable as indices), floats a float64 one."""
    for arg, value in (("start", start), ("stop", stop), ("step", step)):
        if not (type(value) in (int, float) or (value is None and arg == "stop")):
            raise ApsiError(f"arange: {arg} must be a number, got {describe(value)}")
    if step == 0:
        raise ApsiError("arange: step must not be 0")
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if values.dtype.kind == "f":
        values = values.astype(np.float64)
    return Tensor(values)


def linspace(start, stop, num=50):
    """`num` evenly spaced values from start to stop inclusive."""
    if not isinstance(num, int) or num < 0:
        raise ApsiError(f"linspace: num must be a non-negative int, got {num!r}")
    return Tensor(np.linspace(float(start), float(stop), num))


def eye(n, m=None):
    """The n x m identity matrix (m defaults to n)."""
    _count("eye", "n", n)
    if m is not None:
        _count("eye", "m", m)
    return Tensor(np.eye(n, m))


def _rng(seed):
    from .random_gen import Rng

    if type(seed) is Rng:                 # a generator value from rng(seed) / spawn (numlib)
        return seed.generator()
    if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool)):
        raise ApsiError(f"seed must be an int or a generator from rng(seed), got {seed!r}")
    return np.random.default_rng(seed)


def randn(*shape, seed=None):
    """Standard normal samples; seed=int makes them reproducible on every machine."""
    return Tensor(_rng(seed).standard_normal(_shape("randn", shape)))


def rand(*shape, seed=None):
    """Uniform samples in [0, 1)."""
    return Tensor(_rng(seed).random(_shape("rand", shape)))


def randint(low, high, shape, seed=None):
    """Random ints in [low, high) with the given shape (an int tensor)."""
    if high <= low:
        raise ApsiError(f"randint: high ({high}) must be larger than low ({low})")
    shape = _shape("randint", (shape,) if isinstance(shape, int) else (list(shape),))
    return Tensor(_rng(seed).integers(low, high, size=shape, dtype=np.int64))


def permutation(n, seed=None):
    """The ints 0..n-1 in random order (for shuffling a data set: x[permutation(len(x), seed=s)])."""
    _count("permutation", "n", n)
    return Tensor(_rng(seed).permutation(n).astype(np.int64))


def one_hot(labels, classes):
    """Float64 rows of zeros with a 1 at each label: shape labels.shape + [classes]."""
    _count("one_hot", "classes", classes, least=1)
    lab = labels_array(labels, classes, "one_hot")
    return Tensor(np.eye(classes)[lab])


def labels_array(labels, classes, fn):
    """Integer labels checked to lie in [0, classes)."""
    d = plain_array(labels, fn, "labels")
    if d.dtype.kind == "f":
        if not np.all(d == np.round(d)):
            raise ApsiError(f"{fn}: labels must be whole numbers (class indices), got {d.ravel()[:5]}")
        d = d.astype(np.int64)
    elif d.dtype.kind not in "iu":
        raise ApsiError(f"{fn}: labels must be ints (class indices), got dtype {d.dtype.name}")
    if d.size and (d.min() < 0 or d.max() >= classes):
        bad = d[(d < 0) | (d >= classes)].ravel()[0]
        raise ApsiError(f"{fn}: label {bad} is out of range for {classes} classes; "
                        f"labels must be in 0..{classes - 1}")
    return d
