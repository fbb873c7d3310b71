"""Activations beyond nn's (silu, leaky_relu, elu) and inverted dropout."""

from apsi_lang.errors import ApsiError

from .. import ops
from ..tensor import Tensor, as_tensor


def silu(x):
    return x * ops.sigmoid(x)


def leaky_relu(x, slope=0.01):
    x = as_tensor(x, "leaky_relu")
    return ops.where(x.data > 0, x, x * slope)


def elu(x, alpha=1.0):
    x = as_tensor(x, "elu")
    pos = x.data > 0
    return ops.where(pos, x, alpha * (ops.exp(ops.where(pos, 0.0, x)) - 1.0))


def dropout(x, rate, rng):
    """Inverted dropout: each value kept with probability 1 - rate and scaled by 1 / (1 - rate)."""
    if not 0.0 <= rate < 1.0:
        raise ApsiError(f"dropout: rate must be in [0, 1), got {rate!r}")
    x = as_tensor(x, "dropout")
    if rate == 0.0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * Tensor(keep * (1.0 / (1.0 - rate)))

