"""The NumPy op set: every name of spec.OPS on `nn` tensors (float64, `nn`'s reverse-mode autodiff).

Layers reach it as `ctx.ops` (the namespace OPSET at the bottom). Simple ops are `nn`'s own; the hot
spots are single ops with their own VJP from apsi_layers/nn/fused/. Only layers import this module, so
importing NumPy at the top costs nothing at `apsi` start.
"""

from types import SimpleNamespace

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.nn import fused
from apsi_layers.nn.autograd.tensor import Tensor
from apsi_layers.ops.spec import OPS

# --- conversion and creation -------------------------------------------------------------------


def constant(value):
    """Float64 data with no gradient (a tensor given here is detached)."""
    data = value.data if type(value) is Tensor else value
    return Tensor(np.asarray(data, dtype=np.float64))


def is_tensor(value):
    return type(value) is Tensor


def indices(value):
    """An int64 tensor (labels, token ids, edge lists); floats must be whole numbers."""
    d = np.asarray(value.data if type(value) is Tensor else value)
    if d.dtype.kind == "f":
        if not np.all(d == np.round(d)):
            raise ApsiError("indices: got non-integer values; labels, token ids and edge lists must be "
                            "whole numbers")
    elif d.dtype.kind not in "iub" and d.size:
        raise ApsiError(f"indices: expects integers, got dtype {d.dtype.name}")
    return Tensor(d.astype(np.int64))


def stop_gradient(x):
    """The same values, cut off the tape: no gradient flows back through them."""
    return Tensor(x.data) if type(x) is Tensor else constant(x)


def to_numpy(t):
    return np.array(t.data if type(t) is Tensor else t)


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)


def zeros(shape):
    return Tensor(np.zeros(_shape(shape)))


def ones(shape):
    return Tensor(np.ones(_shape(shape)))


# --- elementwise -------------------------------------------------------------------------------

exp, log, sqrt, abs, relu, softplus = nn.exp, nn.log, nn.sqrt, nn.abs, nn.relu, nn.softplus  # noqa: A001
tanh, sigmoid = fused.tanh, fused.sigmoid
maximum, minimum, where = nn.maximum, nn.minimum, nn.where
gelu, silu, leaky_relu, elu = fused.gelu, fused.silu, fused.leaky_relu, fused.elu


def clip(x, lo, hi):
    return nn.clip(x, lo, hi)


# --- reductions and normalisers ----------------------------------------------------------------


def sum(x, axis=None, keepdims=False):  # noqa: A001
    return nn.sum(x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return nn.mean(x, axis, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return nn.max(x, axis, keepdims)


def logsumexp(x, axis=-1, keepdims=False):
    return nn.logsumexp(x, axis, keepdims)


def softmax(x, axis=-1):
    return nn.softmax(x, axis)


def log_softmax(x, axis=-1):
    return nn.log_softmax(x, axis)


# --- shapes and indexing -----------------------------------------------------------------------


def reshape(x, shape):
    return nn.reshape(x, shape)


def transpose(x, axes):
    return nn.transpose(x, axes)


def concat(xs, axis):
    return nn.concat(xs, axis)


def stack(xs, axis):
    return nn.stack(xs, axis)


def expand_dims(x, axis):
    return nn.expand_dims(x, axis)


take = fused.take

# --- linear algebra and the fused hot spots ----------------------------------------------------

matmul, dense = nn.matmul, fused.dense
conv, max_pool, avg_pool = fused.conv, fused.max_pool, fused.avg_pool
batch_norm_train, batch_norm_eval = fused.batch_norm_train, fused.batch_norm_eval
layer_norm, rms_norm = fused.layer_norm, fused.rms_norm
lstm, gru, attention = fused.lstm, fused.gru, fused.attention
softmax_cross_entropy, bce_with_logits = fused.softmax_cross_entropy, fused.bce_with_logits
scatter_add, segment_softmax, bincount = fused.scatter_add, fused.segment_softmax, fused.bincount


def dropout(x, rate, rng):
    return fused.dropout(x, rate, rng)


def normal(shape, rng):
    return Tensor(rng.standard_normal(_shape(shape)))


def rng(seed):
    return np.random.default_rng(seed)


OPSET = SimpleNamespace(**{name: globals()[name] for name in OPS})
