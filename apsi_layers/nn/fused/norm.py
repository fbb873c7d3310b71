"""Batch, layer and RMS normalisation, each one op with the closed-form backward (the three-term
formula for the normalised input), so a norm costs a few passes over x instead of a dozen ops."""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import Tensor
from .batch_threads import over_rows
from .record import fused, tensor


def _stat_axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _channel(a, ndim):
    return a.reshape((1, -1) + (1,) * (ndim - 2))


def _bn_forward(x, gamma, beta, training, mean, var, eps):
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (x - _channel(mean, x.ndim)) * _channel(inv, x.ndim)
    y = xhat * _channel(gamma, x.ndim) + _channel(beta, x.ndim)
    return y, ((xhat, inv, gamma) if training else None)


def _bn_backward(g, saved, needs):
    xhat, inv, gamma = saved
    axes = _stat_axes(g)
    gbeta = g.sum(axis=axes)
    ggamma = (g * xhat).sum(axis=axes)
    gx = None
    if needs[0]:
        m = g.size // g.shape[1]
        scale = _channel(gamma * inv / m, g.ndim)
        gx = (m * g - _channel(gbeta, g.ndim) - xhat * _channel(ggamma, g.ndim)) * scale
    return gx, ggamma, gbeta


_bn_train = fused("batch_norm_train", _bn_forward, _bn_backward, 3)


def _check_channels(fn, x, **per_channel):
    if x.ndim < 2:
        raise ApsiError(f"{fn}: input must be [batch, features, ...], got shape {x.shape}")
    for name, t in per_channel.items():
        if t is not None and t.shape != (x.shape[1],):
            raise ApsiError(f"{fn}: {name} has shape {t.shape} but the input {x.shape} has "
                            f"{x.shape[1]} features on axis 1")


def batch_norm_train(x, gamma, beta, eps):
    """(y, batch_mean, batch_var): x normalised with its own statistics over every axis but 1."""
    x, gamma, beta = (tensor(t, "batch_norm_train", a)
                      for t, a in ((x, "x"), (gamma, "gamma"), (beta, "beta")))
    _check_channels("batch_norm_train", x, gamma=gamma, beta=beta)
    axes = _stat_axes(x.data)
    mean = x.data.mean(axis=axes)
    centred = x.data - _channel(mean, x.ndim)
    var = (centred * centred).mean(axis=axes)
    y = _bn_train(x, gamma, beta, mean=mean, var=var, eps=eps)
    return y, Tensor(mean), Tensor(var)


def _bn_eval_forward(x, gamma, beta, mean, var, training, eps):
    inv = 1.0 / np.sqrt(var + eps)
    scale = gamma * inv
    y = x * _channel(scale, x.ndim) + _channel(beta - mean * scale, x.ndim)
    return y, ((x, gamma, mean, inv) if training else None)


def _bn_eval_backward(g, saved, needs):
    x, gamma, mean, inv = saved
    axes = _stat_axes(g)
    gx = g * _channel(gamma * inv, g.ndim) if needs[0] else None
    gxc = (g * (x - _channel(mean, g.ndim))).sum(axis=axes) if needs[1] or needs[4] else None
    ggamma = gxc * inv if needs[1] else None
    gbeta = g.sum(axis=axes) if needs[2] or needs[3] else None
    gmean = -gbeta * gamma * inv if needs[3] else None
    gvar = -0.5 * gxc * gamma * inv ** 3 if needs[4] else None
    return gx, ggamma, gbeta if needs[2] else None, gmean, gvar


_bn_eval = fused("batch_norm_eval", _bn_eval_forward, _bn_eval_backward, 5)


def batch_norm_eval(x, gamma, beta, mean, var, eps):
    """x normalised on axis 1 with the given (running) mean and variance."""
    args = [tensor(t, "batch_norm_eval", a) for t, a in
            ((x, "x"), (gamma, "gamma"), (beta, "beta"), (mean, "mean"), (var, "var"))]
    _check_channels("batch_norm_eval", args[0], gamma=args[1], beta=args[2], mean=args[3], var=args[4])
    return _bn_eval(*args, eps=eps)


def _ln_rows(x, gamma, beta, eps, xhat, inv, y):
    mean = x.mean(axis=-1, keepdims=True)
    np.subtract(x, mean, out=xhat)
    np.multiply(xhat, xhat, out=y)
    np.add(np.mean(y, axis=-1, keepdims=True), eps, out=inv)
    np.sqrt(inv, out=inv)
    np.divide(1.0, inv, out=inv)
    xhat *= inv
    np.multiply(xhat, gamma, out=y)
    if beta is not None:
        y += beta


def _ln_forward(x, gamma, beta, training, eps):
    xhat, y, inv = np.empty_like(x), np.empty_like(x), np.empty(x.shape[:-1] + (1,))
    over_rows(lambda *rows: _ln_rows(rows[0], gamma, beta, eps, *rows[1:]), x, xhat, inv, y)
    return y, ((xhat, inv, gamma) if training else None)


def _ln_grad_rows(g, xhat, inv, gamma, gx):
    # inv * (gh - mean(gh) - xhat * mean(gh * xhat)), the same operations in the same order,
    # on two buffers instead of six
    np.multiply(g, gamma, out=gx)
    m1 = gx.mean(axis=-1, keepdims=True)
    t = gx * xhat
    m2 = np.mean(t, axis=-1, keepdims=True)
    gx -= m1
    np.multiply(xhat, m2, out=t)
    gx -= t
    gx *= inv


def _ln_backward(g, saved, needs):
    xhat, inv, gamma = saved
    flat_g = g.reshape(-1, g.shape[-1])
    ggamma = np.einsum("ij,ij->j", flat_g, xhat.reshape(flat_g.shape)) if needs[1] else None
    gbeta = flat_g.sum(axis=0) if needs[2] else None
    gx = None
    if needs[0]:
        gx = np.empty(g.shape)
        over_rows(lambda g, xhat, inv, gx: _ln_grad_rows(g, xhat, inv, gamma, gx), g, xhat, inv, gx)
    return gx, ggamma, gbeta


_ln = fused("layer_norm", _ln_forward, _ln_backward, 3)


def _check_last(fn, x, **params):
    for name, t in params.items():
        if t is not None and t.shape != x.shape[-1:]:
            raise ApsiError(f"{fn}: {name} has shape {t.shape} but the input {x.shape} has "
                            f"{x.shape[-1] if x.ndim else 0} features on its last axis")


def layer_norm(x, gamma, beta, eps):
    """x normalised over its last axis, times gamma plus beta (beta may be None)."""
    x, gamma = tensor(x, "layer_norm"), tensor(gamma, "layer_norm", "gamma")
    beta = tensor(beta, "layer_norm", "beta")
    _check_last("layer_norm", x, gamma=gamma, beta=beta)
    return _ln(x, gamma, beta, eps=eps)


def _rms_forward(x, gamma, training, eps):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    xr = x * r
    return xr * gamma, ((x, xr, r, gamma) if training else None)


def _rms_backward(g, saved, needs):
    x, xr, r, gamma = saved
    ggamma = (g * xr).reshape(-1, g.shape[-1]).sum(axis=0) if needs[1] else None
    gx = None
    if needs[0]:
        gh = g * gamma
        gx = r * (gh - xr * np.mean(gh * xr, axis=-1, keepdims=True))
    return gx, ggamma


_rms = fused("rms_norm", _rms_forward, _rms_backward, 2)


def rms_norm(x, gamma, eps):
    """x / sqrt(mean(x**2 over the last axis) + eps) * gamma."""
    x, gamma = tensor(x, "rms_norm"), tensor(gamma, "rms_norm", "gamma")
    _check_last("rms_norm", x, gamma=gamma)
    return _rms(x, gamma, eps=eps)
