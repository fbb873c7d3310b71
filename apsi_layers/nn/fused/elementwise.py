"""Activations as single ops (tanh, sigmoid and gelu through fastmath, silu, leaky_relu, elu) and
inverted dropout."""

import numpy as np

from apsi_lang.errors import ApsiError

from . import fastmath
from .batch_threads import in_blocks, over_rows
from .record import fused, tensor

_GC, _GA = float(np.sqrt(2.0 / np.pi)), 0.044715


@np.errstate(over="ignore")
def _gelu_rows(x, t, y):
    in_blocks(_gelu_chain, x, t, y)       # a cache-sized block at a time (batch_threads.BLOCK)


def _gelu_chain(x, t, y):
    # 0.5 x (1 + tanh(c (x + a x^3))), in place on two buffers: a fifth of the passes of the plain form.
    np.multiply(x, x, out=t)
    t *= _GA
    t += 1.0
    t *= x
    t *= _GC
    fastmath.tanh(t, out=t)
    np.add(t, 1.0, out=y)
    y *= x
    y *= 0.5


def _gelu_forward(x, training):
    t, y = np.empty_like(x), np.empty_like(x)
    over_rows(_gelu_rows, x, t, y)
    return y, ((x, t) if training else None)


@np.errstate(over="ignore", invalid="ignore")
def _gelu_grad_rows(g, x, t, d):
    in_blocks(_gelu_grad_chain, g, x, t, d)


def _gelu_grad_chain(g, x, t, d):
    du = x * x
    du *= 3.0 * _GA * _GC
    du += _GC                                 # c (1 + 3 a x^2)
    np.multiply(t, t, out=d)
    np.subtract(1.0, d, out=d)
    d *= du
    d *= x
    d += t
    d += 1.0
    d *= 0.5
    d *= g


def _gelu_backward(g, saved, needs):
    x, t = saved
    d = np.empty_like(x)
    over_rows(_gelu_grad_rows, g, x, t, d)
    return d,


def _tanh_forward(x, training):
    y = fastmath.tanh(x)
    return y, (y if training else None)


def _tanh_backward(g, y, needs):
    d = y * y
    np.subtract(1.0, d, out=d)
    d *= g
    return d,


def _sigmoid_forward(x, training):
    y = fastmath.sigmoid(x)
    return y, (y if training else None)


def _sigmoid_backward(g, y, needs):
    d = 1.0 - y
    d *= y
    d *= g
    return d,


def _silu_forward(x, training):
    s = fastmath.sigmoid(x)
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


_gelu = fused("gelu (fused)", _gelu_forward, _gelu_backward, 1)
_tanh = fused("tanh (fused)", _tanh_forward, _tanh_backward, 1)
_sigmoid = fused("sigmoid (fused)", _sigmoid_forward, _sigmoid_backward, 1)
_silu = fused("silu", _silu_forward, _silu_backward, 1)
_leaky = fused("leaky_relu", _leaky_forward, _leaky_backward, 1)
_elu = fused("elu", _elu_forward, _elu_backward, 1)
_dropout = fused("dropout", _scale_forward, _scale_backward, 1)


def gelu(x):
    """GELU, tanh approximation (torch's approximate='tanh')."""
    return _gelu(tensor(x, "gelu"))


def tanh(x):
    """tanh elementwise."""
    return _tanh(tensor(x, "tanh"))


def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise."""
    return _sigmoid(tensor(x, "sigmoid"))


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
    factor = rng.random(x.shape)                       # kept: 1 / (1 - rate), dropped: 0, in place
    np.greater_equal(factor, rate, out=factor)
    factor *= 1.0 / (1.0 - rate)
    return _dropout(x, factor=factor)
