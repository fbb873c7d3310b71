"""Argument checks the numeric library's files share: a shape, an axis, a set of axes. Here, so the
files that use them (creation and random_gen, scans and sorting, ...) need not import each other."""

from apsi_lang.errors import ApsiError


def shape_arg(fn, shape):
    """zeros(3), zeros(2, 3) and zeros([2, 3]) all work."""
    if len(shape) == 1 and isinstance(shape[0], list | tuple):
        shape = tuple(shape[0])
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ApsiError(f"{fn}: the shape must be non-negative ints, like {fn}(2, 3) or {fn}([2, 3]); "
                        f"got {list(shape)}")
    return shape


def axis_of(name, x, axis):
    """One axis as an int in 0..ndim-1, or an ApsiError naming the function."""
    if type(axis) is not int or not -x.ndim <= axis < x.ndim:
        hint = f"use an int from {-x.ndim} to {x.ndim - 1}" if x.ndim else "a 0-d tensor has no axis"
        raise ApsiError(f"{name}: axis={axis!r} does not fit a tensor of shape {x.shape}; {hint}")
    return axis % x.ndim


def axes_of(name, x, axis):
    """axis none / int / list -> a sorted tuple of distinct axes."""
    if axis is None:
        return tuple(range(x.ndim))
    items = list(axis) if isinstance(axis, list | tuple) else [axis]
    out = sorted({axis_of(name, x, a) for a in items})
    if len(out) != len(items):
        raise ApsiError(f"{name}: axis={axis!r} names an axis twice")
    return tuple(out)
