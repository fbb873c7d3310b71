"""Activations beyond nn's (silu, leaky_relu, elu) and inverted dropout, each one op."""

import numpy as np

from apsi_lang.errors import ApsiError

from ..xp import sigmoid
from .record import fused, tensor


def _silu_forward(x, training):
    s = sigmoid(x)
    return x * s, ((x, s) if training else None)


def _silu_backward(g, saved, needs):
    x, s = saved
    return g * s * (1.0 + x * (1.0 - s)),


def _leaky_forward(x, training, slope):
    pos = x > 0
    return np.where(pos, x, x * slope), ((pos, slope) if training else None)


def _leaky_backward(g, saved, needs):
    pos, slope = saved
    return np.where(pos, g, g * slope),


def _elu_forward(x, training, alpha):
    pos = x > 0
    y = np.where(pos, x, alpha * np.expm1(np.minimum(x, 0.0)))
    return y, ((pos, y, alpha) if training else None)


def _elu_backward(g, saved, needs):
    pos, y, alpha = saved
    return np.where(pos, g, g * (y + alpha)),


def _scale_forward(x, training, factor):
    return x * factor, (factor if training else None)


def _scale_backward(g, factor, needs):
    return g * factor,


_silu = fused("silu", _silu_forward, _silu_backward, 1)
_leaky = fused("leaky_relu", _leaky_forward, _leaky_backward, 1)
_elu = fused("elu", _elu_forward, _elu_backward, 1)
_dropout = fused("dropout", _scale_forward, _scale_backward, 1)


def silu(x):
    """x * sigmoid(x)."""
    return _silu(tensor(x, "silu"))


def leaky_relu(x, slope=0.01):
    """x where x > 0, else slope * x."""
    return _leaky(tensor(x, "leaky_relu"), slope=float(slope))


def elu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _elu(tensor(x, "elu"), alpha=float(alpha))


def dropout(x, rate, rng):
    """Inverted dropout: each value kept with probability 1 - rate and scaled by 1 / (1 - rate)."""
    if not (isinstance(rate, int | float) and 0.0 <= rate < 1.0):
        raise ApsiError(f"dropout: rate must be a number in [0, 1), got {rate!r}")
    x = tensor(x, "dropout")
    if rate == 0.0:
        return x
    factor = (rng.random(x.shape) >= rate) * (1.0 / (1.0 - rate))
    return _dropout(x, factor=factor)
