"""Ready-made models, each built from the layers (so each runs on every backend): mlp, resnet_mlp,
cnn_classifier, lstm_classifier, transformer_lm, gcn_classifier, vae."""

import functools
import inspect

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .attention import Positions, TransformerBlock
from .base import Layer, build_child, positive_int, rate_arg
from .compose import Residual, Sequential
from .conv import Conv2d, MaxPool2d
from .core import Activation, Dense, Dropout, Embedding, Flatten
from .graph import Gat, Gcn, Gin, Sage
from .norm import BatchNorm, LayerNorm
from .recurrent import Gru, Lstm
from .registry import parity_cases, register


def _sizes(fn, arg, value):
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list | tuple) and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                               for v in value):
        return list(value)
    raise ApsiError(f"{fn}: {arg} must be a list of positive ints, got {show(value, True)}")


class Zoo(Sequential):
    """A zoo model: a sequential model that prints as the call that made it (see _described)."""

    def __init__(self, kind, layers, inputs):
        self.kind = kind
        super().__init__(layers, None, inputs)
        self.call_args = ""

    def __repr__(self):
        return f"{self.kind}({self.call_args})"

    __str__ = __repr__


def _described(make):
    """A zoo constructor whose model prints as the call that made it: its required arguments, then
    every option that differs from its default (issue 28: `mlp(..., activation="tanh")` printed
    without it), so evaluating the text rebuilds the same model; `.options` holds those options."""
    signature = inspect.signature(make)

    @functools.wraps(make)
    def described(*args, **kwargs):
        model = make(*args, **kwargs)
        given = signature.bind(*args, **kwargs).arguments
        required = [v for k, v in given.items() if signature.parameters[k].default is inspect.Parameter.empty]
        options = {k: _as_default(v, signature.parameters[k].default) for k, v in given.items()
                   if signature.parameters[k].default is not inspect.Parameter.empty
                   and not _same(v, signature.parameters[k].default)}
        model.call_args = _args(*required, **options)
        model.settings = options
        return model
    return described


def _same(value, default):
    """True when an option is its default as Apsi sees it ([64, 64] is the default (64, 64))."""
    if isinstance(value, bool) != isinstance(default, bool):
        return False                # false is not 0.0 as an option
    return _plain(value) == _plain(default)


def _as_default(value, default):
    """A list option given as one int (hidden=4) is shown as the list it means (hidden=[4])."""
    one = isinstance(value, int) and not isinstance(value, bool)
    return [value] if one and isinstance(default, tuple) else value


def _plain(v):
    return [_plain(x) for x in v] if isinstance(v, list | tuple) else v


def _args(*positional, **named):
    parts = [show(v, True) for v in positional]
    parts += [f"{k}={show(v, True)}" for k, v in named.items()]
    return ", ".join(parts)


@register()
@_described
def mlp(inputs, outputs, hidden=(64, 64), activation="relu", dropout=0.0, batch_norm=False):
    """Dense layers inputs -> hidden... -> outputs with `activation` between (logits out)."""
    inputs = positive_int("mlp", "inputs", inputs)
    outputs = positive_int("mlp", "outputs", outputs)
    rate = rate_arg("mlp", "dropout", dropout)
    layers = []
    hidden = _sizes("mlp", "hidden", hidden)
    for width in hidden:
        if batch_norm:
            layers += [Dense(width), BatchNorm(), Activation(activation)]
        else:
            layers.append(Dense(width, activation=activation))
        if rate:
            layers.append(Dropout(rate))
    layers.append(Dense(outputs))
    return Zoo("mlp", layers, (inputs,))


@register()
@_described
def resnet_mlp(inputs, outputs, width=128, blocks=4, dropout=0.0):
    """dense(width), then `blocks` residual blocks x + dense(relu(dense(layer_norm(x)))), a final
    layer_norm and dense(outputs)."""
    inputs = positive_int("resnet_mlp", "inputs", inputs)
    outputs = positive_int("resnet_mlp", "outputs", outputs)
    width = positive_int("resnet_mlp", "width", width)
    blocks = positive_int("resnet_mlp", "blocks", blocks)
    rate = rate_arg("resnet_mlp", "dropout", dropout)
    layers = [Dense(width)]
    for i in range(blocks):
        inner = [LayerNorm(), Dense(width, activation="relu")] + ([Dropout(rate)] if rate else [])
        layers.append(Residual(Sequential(inner + [Dense(width)]), name=f"block_{i}"))
    layers += [LayerNorm(), Dense(outputs)]
    return Zoo("resnet_mlp", layers, (inputs,))


@register()
@_described
def cnn_classifier(input_shape, classes, filters=(16, 32), kernel=3, hidden=64, dropout=0.0):
    """Images [C, H, W]: per entry of filters, conv2d(f, kernel, padding="same", relu) and
    max_pool2d(2); then flatten, dense(hidden, relu), dense(classes)."""
    shape = input_shape
    if not (isinstance(shape, list | tuple) and len(shape) == 3
            and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape)):
        raise ApsiError(f"cnn_classifier: input_shape must be [channels, height, width], "
                        f"got {show(shape, True)}")
    classes = positive_int("cnn_classifier", "classes", classes)
    rate = rate_arg("cnn_classifier", "dropout", dropout)
    layers = []
    filters = _sizes("cnn_classifier", "filters", filters)
    for f in filters:
        layers += [Conv2d(f, kernel, padding="same", activation="relu"), MaxPool2d(2)]
    layers += [Flatten(), Dense(positive_int("cnn_classifier", "hidden", hidden), activation="relu")]
    layers += ([Dropout(rate)] if rate else []) + [Dense(classes)]
    return Zoo("cnn_classifier", layers, tuple(shape))


@register()
@_described
def lstm_classifier(inputs, classes, units=64, layers=1, vocab=None, embed=32, cell="lstm", dropout=0.0):
    """Sequences [T, inputs] (or token ids [T] with vocab=V: an embedding of size embed first) ->
    `layers` recurrent layers (cell "lstm" or "gru") -> dense(classes) on the last state."""
    classes = positive_int("lstm_classifier", "classes", classes)
    units = positive_int("lstm_classifier", "units", units)
    n = positive_int("lstm_classifier", "layers", layers)
    if cell not in ("lstm", "gru"):
        raise ApsiError(f"lstm_classifier: cell must be \"lstm\" or \"gru\", got {show(cell, True)}")
    rate = rate_arg("lstm_classifier", "dropout", dropout)
    Cell = Lstm if cell == "lstm" else Gru
    stack = []
    if vocab is not None:
        stack.append(Embedding(positive_int("lstm_classifier", "vocab", vocab),
                               positive_int("lstm_classifier", "embed", embed)))
        shape = (None,)
    else:
        shape = (None, positive_int("lstm_classifier", "inputs", inputs))
    for i in range(n):
        stack.append(Cell(units, return_sequences=i < n - 1))
        if rate and i < n - 1:
            stack.append(Dropout(rate))
    stack.append(Dense(classes))
    return Zoo("lstm_classifier", stack, shape)


@register()
@_described
def transformer_lm(vocab, d=128, heads=4, layers=2, context=128, dropout=0.0, hidden=None,
                   positions="learned"):
    """A decoder-only (GPT-style) language model: token ids [T] -> logits [T, vocab]. Embedding,
    positions, `layers` causal pre-norm transformer blocks, layer_norm, dense(vocab)."""
    vocab = positive_int("transformer_lm", "vocab", vocab)
    d = positive_int("transformer_lm", "d", d)
    heads = positive_int("transformer_lm", "heads", heads)
    n = positive_int("transformer_lm", "layers", layers)
    context = positive_int("transformer_lm", "context", context)
    if d % heads:
        raise ApsiError(f"transformer_lm: d={d} must be a multiple of heads={heads}")
    stack = [Embedding(vocab, d), Positions(context, positions)]
    if dropout:
        stack.append(Dropout(dropout))
    stack += [TransformerBlock(heads, hidden, dropout, causal=True, name=f"block_{i}") for i in range(n)]
    stack += [LayerNorm(), Dense(vocab)]
    model = Zoo("transformer_lm",
                stack, (None,))
    model.context = context
    model.vocab = vocab
    return model


_GRAPH = {"gcn": Gcn, "sage": Sage, "gat": Gat, "gin": Gin}


@register()
@_described
def gcn_classifier(inputs, classes, hidden=(16,), dropout=0.5, kind="gcn"):
    """Node classification: graph layers of `kind` ("gcn", "sage", "gat", "gin") with relu and
    dropout between, the last giving `classes` logits per node. Needs graph= in fit and predict."""
    inputs = positive_int("gcn_classifier", "inputs", inputs)
    classes = positive_int("gcn_classifier", "classes", classes)
    rate = rate_arg("gcn_classifier", "dropout", dropout)
    if kind not in _GRAPH:
        raise ApsiError(f"gcn_classifier: kind must be one of gcn, sage, gat, gin, got {show(kind, True)}")
    cls = _GRAPH[kind]
    stack = [] if not rate else [Dropout(rate)]
    hidden = _sizes("gcn_classifier", "hidden", hidden)
    for width in hidden:
        stack += [cls(width, activation="relu")] + ([Dropout(rate)] if rate else [])
    stack.append(cls(classes))
    return Zoo("gcn_classifier", stack, (inputs,))


class Vae(Layer):
    """A variational autoencoder: encoder mlp -> (mu, logvar); z = mu + exp(logvar / 2) * noise while
    training (the noise from fit's seed), z = mu in predict; decoder mlp -> reconstruction logits.
    The forward pass gives [recon logits, mu, logvar] for loss="vae"; predict gives sigmoid(recon)."""

    kind = "vae"
    __apsi_attrs__ = Layer.__apsi_attrs__ | {"encoder", "decoder", "latent"}

    def __init__(self, inputs, latent, hidden=(128,)):
        super().__init__(None, positive_int("vae", "inputs", inputs))
        self.latent = positive_int("vae", "latent", latent)
        sizes = _sizes("vae", "hidden", hidden)
        self.hidden = sizes
        self.n_in = inputs
        enc = [Dense(w, activation="relu") for w in sizes]
        self.encoder = Sequential(enc + [Dense(2 * self.latent)], "encoder")
        dec = [Dense(w, activation="relu") for w in reversed(sizes)]
        self.decoder = Sequential(dec + [Dense(inputs)], "decoder", inputs=self.latent)

    def __repr__(self):
        if hasattr(self, "call_args"):          # made by vae(): the call, as _described keeps it
            return f"vae({self.call_args})"
        return f"vae({self.n_in}, {self.latent}, hidden={show(self.hidden, True)})"

    __str__ = __repr__

    def children(self):
        return [("encoder", self.encoder), ("decoder", self.decoder)]

    def build(self, rng, input_shape):
        enc, _ = build_child(rng, self.encoder, "encoder", input_shape)
        dec, out = build_child(rng, self.decoder, "decoder", (self.latent,))
        return Record(encoder=enc, decoder=dec), [out, (self.latent,), (self.latent,)]

    def apply(self, params, x, ctx):
        ops = ctx.ops
        h = self.encoder.apply(params.encoder, x, ctx)
        mu, logvar = h[:, :self.latent], h[:, self.latent:]
        z = mu
        if ctx.training:
            z = mu + ops.exp(logvar * 0.5) * ops.normal(tuple(mu.shape), ctx.rng)
        return [self.decoder.apply(params.decoder, z, ctx), mu, logvar]

    def present(self, y, ops):
        return ops.sigmoid(y[0])


@register()
@_described
def vae(inputs, latent, hidden=(128,)):
    return Vae(inputs, latent, hidden)


@parity_cases
def _cases(L, d):
    return [
        dict(name="mlp", model=L.mlp(6, 3, hidden=[8, 8]), x=d.x(5, 6)),
        dict(name="conv2d", model=L.cnn_classifier([2, 8, 8], 3, filters=[4, 6], hidden=8), x=d.img),
        dict(name="batch_norm", model=L.mlp(6, 3, hidden=[8], batch_norm=True), x=d.x(5, 6)),
        dict(name="dropout", model=L.mlp(6, 3, hidden=[16], dropout=0.4), x=d.x(5, 6)),
        dict(name="transformer_lm", model=L.transformer_lm(11, d=8, heads=2, layers=2, context=6),
             x=d.tokens),
        dict(name="residual", model=L.resnet_mlp(6, 3, width=8, blocks=2), x=d.x(5, 6)),
        dict(name="gcn", model=L.gcn_classifier(5, 3, hidden=[8], dropout=0.0), x=d.x(7, 5), graph=d.graph),
        dict(name="vae", model=L.vae(6, 2, hidden=[8]), x=d.x(5, 6)),
        dict(name="lstm_model", model=L.lstm_classifier(4, 3, units=6), x=d.seq),
    ]
