"""Normalisation: batch_norm (running statistics in a `state` field), layer_norm, rms_norm."""

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import Layer, fmt
from .registry import parity_cases, register


def _eps(kind, eps):
    if isinstance(eps, int | float) and not isinstance(eps, bool) and eps > 0:
        return float(eps)
    raise ApsiError(f"{kind}: eps must be a positive number, got {show(eps, True)}")


class BatchNorm(Layer):
    """Normalises axis 1 (features of [B, F], channels of [B, C, ...]) with the batch's statistics
    while training and the running ones in predict, like torch's BatchNorm1d/2d."""

    kind = "batch_norm"

    def __init__(self, momentum=0.1, eps=1e-5, name=None):
        super().__init__(name, None, momentum=None if momentum == 0.1 else momentum,
                         eps=None if eps == 1e-5 else eps)
        if not (isinstance(momentum, int | float) and 0.0 <= momentum <= 1.0):
            raise ApsiError(f"batch_norm: momentum must be in [0, 1], got {show(momentum, True)}")
        self.momentum = float(momentum)
        self.eps = _eps("batch_norm", eps)

    def build(self, rng, input_shape):
        if not isinstance(input_shape, tuple) or not input_shape or input_shape[0] is None:
            self.fail(f"normalises axis 1 (features or channels) and needs its size, got {fmt(input_shape)}")
        f = input_shape[0]
        state = Record(mean=rng.zeros((f,)), var=rng.ones((f,)))
        return Record(gamma=rng.ones((f,)), beta=rng.zeros((f,)), state=state), input_shape

    def apply(self, params, x, ctx):
        ops = ctx.ops
        if len(x.shape) < 2 or x.shape[1] != params.gamma.shape[0]:
            self.fail(f"expects {params.gamma.shape[0]} features on axis 1, got shape {list(x.shape)}")
        st = params.state
        if not ctx.training:
            return ops.batch_norm_eval(x, params.gamma, params.beta, st.mean, st.var, self.eps)
        y, mean, var = ops.batch_norm_train(x, params.gamma, params.beta, self.eps)
        n = x.shape[0]
        for s in x.shape[2:]:
            n *= s
        unbiased = ops.stop_gradient(var) * (n / max(n - 1, 1))
        m = self.momentum
        ctx.set_state(st, Record(mean=st.mean * (1.0 - m) + ops.stop_gradient(mean) * m,
                                 var=st.var * (1.0 - m) + unbiased * m))
        return y


class LayerNorm(Layer):
    kind = "layer_norm"

    def __init__(self, eps=1e-5, bias=True, name=None):
        super().__init__(name, None, eps=None if eps == 1e-5 else eps, bias=None if bias else False)
        self.eps = _eps("layer_norm", eps)
        self.bias = bool(bias)

    def build(self, rng, input_shape):
        f = _last(self, input_shape)
        p = {"gamma": rng.ones((f,))}
        if self.bias:
            p["beta"] = rng.zeros((f,))
        return Record(**p), input_shape

    def apply(self, params, x, ctx):
        _check_last(self, params.gamma, x)
        return ctx.ops.layer_norm(x, params.gamma, params.beta if self.bias else None, self.eps)


class RmsNorm(Layer):
    kind = "rms_norm"

    def __init__(self, eps=1e-6, name=None):
        super().__init__(name, None, eps=None if eps == 1e-6 else eps)
        self.eps = _eps("rms_norm", eps)

    def build(self, rng, input_shape):
        return Record(gamma=rng.ones((_last(self, input_shape),))), input_shape

    def apply(self, params, x, ctx):
        _check_last(self, params.gamma, x)
        return ctx.ops.rms_norm(x, params.gamma, self.eps)


def _last(layer, shape):
    if not isinstance(shape, tuple) or not shape or shape[-1] is None:
        layer.fail(f"normalises the last axis and needs its size, got {fmt(shape)}")
    return shape[-1]


def _check_last(layer, gamma, x):
    if x.shape[-1] != gamma.shape[0]:
        layer.fail(f"expects {gamma.shape[0]} features on the last axis, got shape {list(x.shape)}")


@register()
def batch_norm(momentum=0.1, eps=1e-5, name=None):
    return BatchNorm(momentum, eps, name)


@register()
def layer_norm(eps=1e-5, bias=True, name=None):
    return LayerNorm(eps, bias, name)


@register()
def rms_norm(eps=1e-6, name=None):
    return RmsNorm(eps, name)


@parity_cases
def _cases(L, d):
    seq_of, dense = L.sequential, L.dense
    return [
        dict(name="batch_norm2d", model=seq_of(L.conv2d(3, 3, inputs=[2, 8, 8]), L.batch_norm()), x=d.img),
        dict(name="layer_norm", model=seq_of(dense(8, inputs=6), L.layer_norm(), dense(3)), x=d.x(5, 6)),
        dict(name="rms_norm", model=seq_of(dense(8, inputs=6), L.rms_norm(), dense(3)), x=d.x(5, 6)),
    ]
