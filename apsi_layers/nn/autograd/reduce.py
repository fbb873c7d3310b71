"""Reductions (sum, mean, max, min, logsumexp), softmax/log_softmax, argmax/argmin."""

import numpy as np

from apsi_lang.errors import ApsiError

from . import foreign
from .foreign import Foreign
from .ops import apply
from .tensor import Tensor, as_tensor


def _axis(axis):
    if isinstance(axis, list):
        return tuple(axis)
    return axis


def _reduce(name, fwd, x, axis, keepdims):
    try:
        x = as_tensor(x, name)
    except Foreign:
        return foreign.call(name, x, axis=axis, keepdims=keepdims)
    axis = _axis(axis)
    try:
        return apply(name, fwd, (x,), {"axis": axis, "keepdims": bool(keepdims)})
    except (ValueError, IndexError, TypeError):
        raise ApsiError(_axis_message(name, x, axis)) from None


def _axis_message(name, x, axis, lists=True):
    """NumPy's 'axis 5 is out of bounds for array of dimension 2', in nn's words."""
    return (f"{name}: axis={axis!r} does not fit a tensor of shape {x.shape}: an axis is an int from "
            f"{-x.ndim} to {x.ndim - 1}{', a list of them (each once)' if lists else ''}, or none for all")


def sum(x, axis=None, keepdims=False):  # noqa: A001
    """Sum over `axis` (an int, a list of ints, or none for all)."""
    return _reduce("sum", np.sum, x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (an int, a list of ints, or none for all)."""
    try:
        x = as_tensor(x, "mean")
    except Foreign:
        return foreign.call("mean", x, axis=axis, keepdims=keepdims)
    if x.data.size == 0:
        raise ApsiError("mean: the tensor is empty")
    try:
        s = sum(x, axis, keepdims)
    except ApsiError as e:
        raise ApsiError(e.message.replace("sum:", "mean:", 1)) from None
    return s * (s.data.size / x.data.size)


def max(x, axis=None, keepdims=False):  # noqa: A001
    """Largest element over `axis`; ties share the gradient."""
    if _size(x, "max") == 0:
        raise ApsiError("max: the tensor is empty")
    return _reduce("max", np.max, x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    """Smallest element over `axis`; ties share the gradient."""
    if _size(x, "min") == 0:
        raise ApsiError("min: the tensor is empty")
    return _reduce("min", np.min, x, axis, keepdims)


def _size(x, fn):
    try:
        return as_tensor(x, fn).data.size
    except Foreign:
        return -1           # _reduce hands it on to the foreign version


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over `axis`, without overflow."""
    return _reduce("logsumexp", _logsumexp, x, axis, keepdims)


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
    return x - _logsumexp(x, axis=axis, keepdims=True)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis` (stable)."""
    try:
        x = as_tensor(x, "softmax")
    except Foreign:
        return foreign.call("softmax", x, axis=axis)
    _check_axis("softmax", x, axis)
    return apply("softmax", _softmax, (x,), {"axis": axis})


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along `axis` (stable)."""
    try:
        x = as_tensor(x, "log_softmax")
    except Foreign:
        return foreign.call("log_softmax", x, axis=axis)
    _check_axis("log_softmax", x, axis)
    return apply("log_softmax", _log_softmax, (x,), {"axis": axis})


def _check_axis(name, x, axis):
    if not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ApsiError(f"{name}: axis={axis!r} does not fit a tensor of shape {x.shape}; "
                        f"use an int from {-x.ndim} to {x.ndim - 1}")


def argmax(x, axis=None, keepdims=False):
    """Index of the largest element (an int tensor; not differentiable)."""
    return _arg("argmax", np.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    """Index of the smallest element (an int tensor; not differentiable)."""
    return _arg("argmin", np.argmin, x, axis, keepdims)


def _arg(name, np_fn, x, axis, keepdims):
    try:
        x = as_tensor(x, name)
    except Foreign:
        return foreign.call(name, x, axis=axis, keepdims=keepdims)
    try:
        return Tensor(np_fn(x.data, axis=_axis(axis), keepdims=bool(keepdims)))
    except (ValueError, IndexError, TypeError):
        raise ApsiError(_axis_message(name, x, axis, lists=False)) from None
