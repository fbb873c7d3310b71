"""Shape and indexing ops: reshape, transpose, broadcast, indexing, gather/scatter, concat, stack.

Each op's gradient rule is another op of this file (its linear adjoint), so they nest to any order.
"""

import re

import numpy as np

from apsi_lang.errors import ApsiError

from . import foreign
from . import xp as _raw
from .foreign import Foreign
from .ops import apply
from .tensor import Tensor, as_tensor, describe, plain_array
from .vjps import concat_rule


def _shape_arg(fn, shape):
    if isinstance(shape, int):
        return (shape,)
    if type(shape) is Tensor:
        shape = shape.tolist()
    try:
        return tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise ApsiError(f"{fn}: shape must be an int or a list of ints, not {describe(shape)}") from None


def reshape(x, *shape):
    """x with a new shape of the same size; one size may be -1 (inferred). reshape(x, [2, 3])."""
    try:
        x = as_tensor(x, "reshape")
    except Foreign:
        return foreign.call("reshape", x, *shape)
    shape = _shape_arg("reshape", shape[0] if len(shape) == 1 else shape)
    try:
        return apply("reshape", np.reshape, (x,), {"shape": shape})
    except ValueError:
        raise ApsiError(f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} elements) "
                        f"into {shape}") from None


def expand_dims(x, axis):
    """x with a new axis of size 1 at `axis`."""
    try:
        x = as_tensor(x, "expand_dims")
    except Foreign:
        return foreign.call("expand_dims", x, axis)
    n = x.ndim + 1
    if type(axis) is not int or not -n <= axis < n:
        raise ApsiError(f"expand_dims: axis={axis!r} does not fit a tensor of shape {x.shape}: the new "
                        f"axis must be an int from {-n} to {n - 1}")
    shape = list(x.shape)
    shape.insert(axis % n, 1)
    return reshape(x, shape)


def transpose(x, axes=None):
    """Axes permuted (reversed when `axes` is none); `x.T` reverses them."""
    try:
        x = as_tensor(x, "transpose")
    except Foreign:
        return foreign.call("transpose", x, axes)
    axes = tuple(reversed(range(x.ndim))) if axes is None else _shape_arg("transpose", axes)
    out_of_range = [a for a in axes if not -x.ndim <= a < x.ndim]
    if out_of_range:
        raise ApsiError(f"transpose: axis {out_of_range[0]} is out of range for a tensor of shape "
                        f"{x.shape}: axes are ints from {-x.ndim} to {x.ndim - 1}")
    if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)):
        raise ApsiError(f"transpose: axes {list(axes)} are not a permutation of 0..{x.ndim - 1}")
    axes = tuple(a % x.ndim for a in axes)
    return apply("transpose", np.transpose, (x,), {"axes": axes})


def swap_last(x):
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return transpose(x, axes)


def broadcast_to(x, shape):
    """x repeated along new or size-1 axes to `shape`."""
    try:
        x = as_tensor(x, "broadcast_to")
    except Foreign:
        return foreign.call("broadcast_to", x, shape)
    shape = _shape_arg("broadcast_to", shape)
    try:
        return apply("broadcast_to", np.broadcast_to, (x,), {"shape": shape})
    except ValueError:
        raise ApsiError(f"broadcast_to: a tensor of shape {x.shape} cannot be broadcast to {shape}") from None


def sum_to(x, shape):
    """The adjoint of broadcast_to: x summed down to `shape`."""
    return apply("sum_to", _raw.sum_to, (as_tensor(x, "sum_to"),), {"shape": tuple(shape)})


def normalize_index(index):
    """An index with tensors and lists turned into arrays NumPy understands."""
    if isinstance(index, tuple):
        return tuple(normalize_index(i) for i in index)
    if type(index) is Tensor:
        d = index.data
        return d if d.dtype.kind in "bui" else _int_array(d)
    if isinstance(index, list):
        items = [i.item() if type(i) is Tensor else i for i in index]
        return _int_array(plain_array(items, "index", "index"))
    if isinstance(index, float):
        raise ApsiError(f"index: {index} is a float; indices must be ints")
    if not (index is None or index is Ellipsis or type(index) in (int, bool, slice)
            or isinstance(index, np.ndarray | np.integer)):
        raise ApsiError(f"index: a tensor is indexed by ints, slices, lists of ints or int tensors, "
                        f"not {describe(index)}")
    return index


def _int_array(a):
    if a.dtype.kind == "f":
        if not np.all(a == np.round(a)):
            raise ApsiError("index: a float tensor was used as an index; indices must be whole numbers")
        return a.astype(np.int64)
    return a


def getitem(x, index):
    """x[index]: ints, slices, none (new axis), ..., int tensors/lists and boolean masks."""
    index = normalize_index(index)
    try:
        return apply("getitem", lambda d, index: d[index], (x,), {"index": index})
    except IndexError as e:
        raise ApsiError(f"{_index_words(str(e))} (the tensor has shape {x.shape})") from None


_OUT_OF_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")


def _index_words(text):
    """NumPy's 'index 5 is out of bounds for axis 0 with size 1', as Apsi says it for lists."""
    m = _OUT_OF_BOUNDS.fullmatch(text)
    if m:
        return f"index {m.group(1)} is out of range for axis {m.group(2)}, of length {m.group(3)}"
    return "index: " + text.replace("array", "tensor")


def index_add(g, index, shape):
    """Zeros of `shape` with g added at `index`: the adjoint of indexing."""
    return apply("index_add", _raw.index_add, (as_tensor(g, "index_add"),),
                 {"index": index, "shape": tuple(shape)})


def _index_array(idx, fn):
    d = plain_array(idx, fn, "indices")
    if d.dtype.kind not in "iu":
        if d.dtype.kind == "f" and np.all(d == np.round(d)):
            return d.astype(np.int64)
        raise ApsiError(f"{fn}: indices must be integers, got dtype {d.dtype.name}")
    return d


def take_along(x, idx, axis=-1):
    """Elements of x picked along `axis` by the int tensor idx (same ndim as x)."""
    try:
        x = as_tensor(x, "take_along")
    except Foreign:
        return foreign.call("take_along", x, idx, axis=axis)
    idx = _index_array(idx, "take_along")
    try:
        return apply("take_along", lambda d, idx, axis: np.take_along_axis(d, idx, axis), (x,),
                     {"idx": idx, "axis": axis})
    except (ValueError, IndexError) as e:
        raise ApsiError(f"take_along: {e} (x has shape {x.shape}, idx {idx.shape})") from None


def put_along(g, idx, axis, shape):
    """The adjoint of take_along: zeros of `shape` with g added at idx along `axis`."""
    return apply("put_along", _raw.put_along, (as_tensor(g, "put_along"),),
                 {"idx": idx, "axis": axis, "shape": tuple(shape)})


def concat(xs, axis=0):
    """Tensors joined along an existing axis."""
    try:
        xs = [as_tensor(x, "concat", f"xs[{i}]") for i, x in enumerate(_seq(xs, "concat"))]
    except Foreign:
        return foreign.call("concat", xs, axis=axis)
    _check_join_axis("concat", xs, axis, 0)
    ends = np.cumsum([x.shape[axis] if x.ndim else 0 for x in xs]).tolist()
    rules = tuple(concat_rule(e - x.shape[axis], e) for x, e in zip(xs, ends, strict=True))
    try:
        return apply("concat", lambda *ds, axis: np.concatenate(ds, axis=axis), tuple(xs),
                     {"axis": axis}, rules=rules)
    except (ValueError, IndexError) as e:
        shapes = ", ".join(str(x.shape) for x in xs)
        raise ApsiError(f"concat: cannot join shapes {shapes} along axis {axis}: all axes but "
                        f"axis {axis} must match ({e})") from None


def stack(xs, axis=0):
    """Tensors of one shape joined along a new axis."""
    try:
        xs = [as_tensor(x, "stack", f"xs[{i}]") for i, x in enumerate(_seq(xs, "stack"))]
    except Foreign:
        return foreign.call("stack", xs, axis=axis)
    shapes = {x.shape for x in xs}
    if len(shapes) != 1:
        raise ApsiError(f"stack: all tensors must have the same shape, got {sorted(shapes)}")
    _check_join_axis("stack", xs, axis, 1)
    return concat([expand_dims(x, axis) for x in xs], axis=axis)


def _check_join_axis(fn, xs, axis, extra):
    """concat joins along an existing axis, stack along a new one (extra=1)."""
    n = xs[0].ndim + extra
    if type(axis) is not int or not -n <= axis < n:
        what = "a new axis" if extra else "an axis"
        scalars = " (scalars have no axis: use stack)" if n == 0 else ""
        raise ApsiError(f"{fn}: axis={axis!r} does not fit tensors of shape {xs[0].shape}: {what} "
                        f"must be an int from {-n} to {n - 1}{scalars}")


def _seq(xs, fn):
    if not isinstance(xs, list | tuple) or not xs:
        raise ApsiError(f"{fn}: expects a non-empty list of tensors, like {fn}([a, b])")
    return xs
