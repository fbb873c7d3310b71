"""Batch, layer and RMS normalisation. Composed from nn ops for now."""

import numpy as np

from .. import ops, reduce, shape
from ..tensor import Tensor, as_tensor


def _channel(t, ndim):
    return shape.reshape(t, (1, -1) + (1,) * (ndim - 2))


def batch_norm_train(x, gamma, beta, eps):
    x = as_tensor(x, "batch_norm_train")
    axes = (0,) + tuple(range(2, x.ndim))
    mean = reduce.mean(x, axis=axes, keepdims=True)
    d = x - mean
    var = reduce.mean(d * d, axis=axes, keepdims=True)
    y = d / ops.sqrt(var + eps) * _channel(gamma, x.ndim) + _channel(beta, x.ndim)
    return y, Tensor(np.ravel(mean.data)), Tensor(np.ravel(var.data))


def batch_norm_eval(x, gamma, beta, mean, var, eps):
    x = as_tensor(x, "batch_norm_eval")
    scale = _channel(gamma, x.ndim) / ops.sqrt(_channel(var, x.ndim) + eps)
    return (x - _channel(mean, x.ndim)) * scale + _channel(beta, x.ndim)


def layer_norm(x, gamma, beta, eps):
    x = as_tensor(x, "layer_norm")
    mean = reduce.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = reduce.mean(d * d, axis=-1, keepdims=True)
    y = d / ops.sqrt(var + eps) * gamma
    return y if beta is None else y + beta


def rms_norm(x, gamma, eps):
    x = as_tensor(x, "rms_norm")
    return x / ops.sqrt(reduce.mean(x * x, axis=-1, keepdims=True) + eps) * gamma
