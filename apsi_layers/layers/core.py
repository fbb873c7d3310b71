"""The basic layers: dense, embedding, flatten, dropout, activation, lambda_layer."""

import math

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import EMPTY, Layer, feature_dim, fmt, positive_int, rate_arg
from .registry import parity_cases, register
from .suggest import unknown

ACTIVATIONS = {
    "relu": lambda ops, x: ops.relu(x),
    "gelu": lambda ops, x: ops.gelu(x),
    "tanh": lambda ops, x: ops.tanh(x),
    "sigmoid": lambda ops, x: ops.sigmoid(x),
    "softplus": lambda ops, x: ops.softplus(x),
    "silu": lambda ops, x: ops.silu(x),
    "leaky_relu": lambda ops, x: ops.leaky_relu(x),
    "elu": lambda ops, x: ops.elu(x),
    "softmax": lambda ops, x: ops.softmax(x, axis=-1),
    "log_softmax": lambda ops, x: ops.log_softmax(x, axis=-1),
    "linear": lambda ops, x: x,
}


def tensor_result(kind, ops, value):
    """What an Apsi function gave a layer, checked on every call (by type only: cheap): a tensor, or a
    list of tensors. A check made once, when the model was built, let a later call hand the layers a
    map holding an `__array_interface__` key, which NumPy would then read (issue 15)."""
    if ops.is_tensor(value) or (type(value) in (list, tuple) and value and all(map(ops.is_tensor, value))):
        return value
    raise ApsiError(f"{kind}: the function returned {show(value, True)}; it must return a tensor "
                    "(the layer's output)")


def activation_fn(kind, value):
    """(name, fn(ops, x)) for activation=: a name, none (linear) or an Apsi function of x."""
    if value is None:
        return None
    if isinstance(value, str):
        if value not in ACTIVATIONS:
            raise ApsiError(f"{kind}: {unknown('activation', value, ACTIVATIONS)}")
        return ACTIVATIONS[value]
    if callable(value):
        return lambda ops, x: tensor_result(kind, ops, value(x))
    raise ApsiError(f"{kind}: activation must be a name like \"relu\" or a function fn(x), "
                    f"got {show(value, True)}")


class Dense(Layer):
    kind = "dense"

    def __init__(self, units, activation=None, bias=True, inputs=None, name=None):
        super().__init__(name, inputs, activation=activation, bias=None if bias else False)
        self.units = positive_int("dense", "units", units)
        self.act = activation_fn("dense", activation)
        self.bias = bool(bias)

    def positional(self):
        return [self.units]

    def build(self, rng, input_shape):
        fan_in = feature_dim(self, input_shape)
        bound = 1.0 / math.sqrt(fan_in)              # torch.nn.Linear's default
        p = {"w": rng.uniform((fan_in, self.units), bound)}
        if self.bias:
            p["b"] = rng.uniform((self.units,), bound)
        return Record(**p), input_shape[:-1] + (self.units,)

    def apply(self, params, x, ctx):
        w = params.w
        if x.shape[-1] != w.shape[0]:
            self.fail(f"expects inputs with {w.shape[0]} features on the last axis, got shape "
                      f"{list(x.shape)}")
        y = ctx.ops.dense(x, w, params.b if self.bias else None)
        return self.act(ctx.ops, y) if self.act else y


class Embedding(Layer):
    kind = "embedding"

    def __init__(self, vocab, dim, inputs=None, name=None):
        super().__init__(name, inputs)
        self.vocab = positive_int("embedding", "vocab", vocab)
        self.dim = positive_int("embedding", "dim", dim)

    def positional(self):
        return [self.vocab, self.dim]

    def build(self, rng, input_shape):
        return Record(w=rng.normal((self.vocab, self.dim), 1.0)), tuple(input_shape) + (self.dim,)

    def apply(self, params, x, ctx):
        return ctx.ops.take(params.w, x, axis=0)


class Flatten(Layer):
    kind = "flatten"

    def build(self, rng, input_shape):
        if None in input_shape:
            self.fail(f"cannot flatten a per-sample shape with an unknown size: {fmt(input_shape)}")
        return EMPTY, (math.prod(input_shape),)

    def apply(self, params, x, ctx):
        return ctx.ops.reshape(x, (x.shape[0], -1))


class Dropout(Layer):
    kind = "dropout"

    def __init__(self, rate=0.5, name=None):
        super().__init__(name)
        self.rate = rate_arg("dropout", "rate", rate)

    def positional(self):
        return [self.rate]

    def build(self, rng, input_shape):
        return EMPTY, input_shape

    def apply(self, params, x, ctx):
        return dropout(ctx, x, self.rate)


def dropout(ctx, x, rate):
    if not ctx.training or rate == 0.0:
        return x
    return ctx.ops.dropout(x, rate, ctx.rng)


class Activation(Layer):
    kind = "activation"

    def __init__(self, fn, name=None):
        super().__init__(name)
        self.given = fn                      # a name or the function itself, for printing
        self.fn = activation_fn("activation", fn)
        if self.fn is None:
            raise ApsiError("activation: expects a name like \"relu\" or a function fn(x), got none")

    def positional(self):
        return [self.given]

    def build(self, rng, input_shape):
        return EMPTY, input_shape

    def apply(self, params, x, ctx):
        return self.fn(ctx.ops, x)


class Lambda(Layer):
    kind = "lambda_layer"
    several_inputs = True

    def __init__(self, fn, output_shape=None, torch_fn=None, name=None):
        # output_shape is an option like any other: it prints, and a model file keeps it
        super().__init__(name, None, output_shape=None if output_shape is None else list(output_shape))
        if not callable(fn):
            raise ApsiError(f"lambda_layer: expects a function fn(x), got {show(fn, True)}")
        self.fn = fn
        self.torch_fn = torch_fn             # the torch backend's version, when fn cannot run there
        self.output_shape = None if output_shape is None else tuple(output_shape)

    def positional(self):
        return [self.fn]

    def build(self, rng, input_shape):
        if self.output_shape is not None:
            return EMPTY, self.output_shape
        if isinstance(input_shape, list):
            self.fail("has several inputs: give its per-sample output shape with output_shape=[...]")
        return EMPTY, rng.probe(self.fn, input_shape)

    def apply(self, params, x, ctx):
        return tensor_result(self.name or self.kind, ctx.ops, self.fn(x))


@register()
def dense(units, activation=None, bias=True, inputs=None, name=None):
    """x @ w + b: w [in, out], initialised like torch.nn.Linear."""
    return Dense(units, activation, bias, inputs, name)


@register()
def embedding(vocab, dim, inputs=None, name=None):
    """Rows of a [vocab, dim] table picked by int token ids: [B, T] -> [B, T, dim]."""
    return Embedding(vocab, dim, inputs, name)


@register()
def flatten(name=None):
    """[B, ...] -> [B, features]."""
    return Flatten(name)


@register("dropout")
def dropout_layer(rate=0.5, name=None):
    """Zeroes a fraction `rate` of the values while training (scaling the rest by 1/(1-rate))."""
    return Dropout(rate, name)


@register()
def activation(fn, name=None):
    """An activation by name (relu, gelu, tanh, sigmoid, ...) or any function fn(x)."""
    return Activation(fn, name)


@register()
def lambda_layer(fn, output_shape=None, torch_fn=None, name=None):
    """Any function fn(x) as a layer without parameters; output_shape when several inputs go in."""
    return Lambda(fn, output_shape, torch_fn, name)


@parity_cases
def _cases(L, d):
    seq_of, dense, nn = L.sequential, L.dense, d.nn      # (nn's functions, as an Apsi lambda calls them)
    return [
        dict(name="dense", model=seq_of(dense(4, activation="gelu", inputs=6), dense(3, bias=False)),
             x=d.x(5, 6)),
        dict(name="embedding", model=seq_of(L.embedding(11, 4, inputs=[6]), L.flatten(), dense(2)),
             x=d.tokens),
        dict(name="dropout_layer", model=seq_of(dense(8, inputs=6), L.dropout(0.3), dense(3)), x=d.x(5, 6)),
        dict(name="activation_fn",
             model=seq_of(dense(4, inputs=6), L.activation(lambda v: nn.tanh(v) * 2.0)),
             x=d.x(5, 6)),
        dict(name="lambda_layer",
             model=seq_of(dense(4, inputs=6), L.lambda_layer(lambda v: nn.softmax(v) * v)),
             x=d.x(5, 6)),
    ]
