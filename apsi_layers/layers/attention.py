"""attention (multi-head; self and cross; causal and padding masks), transformer_block, positions."""

import math

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import EMPTY, Layer, build_child, fmt, positive_int, rate_arg
from .core import Dense, dropout
from .norm import LayerNorm
from .registry import parity_cases, register


def _sequence(layer, shape):
    if not isinstance(shape, tuple) or len(shape) != 2 or shape[1] is None:
        layer.fail(f"expects per-sample sequences [steps, features], got {fmt(shape)}")
    return shape


class Attention(Layer):
    """Multi-head scaled dot-product attention. Input x [B, T, F] (self-attention) or [x, memory]
    (cross-attention: queries from x, keys and values from memory [B, S, G]). Output [B, T, F]."""

    kind = "attention"
    several_inputs = True       # [x, memory]

    def __init__(self, heads, dim=None, causal=False, dropout=0.0, bias=True, name=None):
        super().__init__(name, None, dim=dim, causal=causal or None, dropout=dropout or None,
                         bias=None if bias else False)
        self.heads = positive_int("attention", "heads", heads)
        self.dim = positive_int("attention", "dim", dim, allow_none=True)
        self.causal = bool(causal)
        self.rate = rate_arg("attention", "dropout", dropout)
        self.bias = bool(bias)

    def positional(self):
        return [self.heads]

    def build(self, rng, input_shape):
        cross = isinstance(input_shape, list)
        if cross and len(input_shape) != 2:
            self.fail(f"takes x or [x, memory], got {len(input_shape)} inputs")
        xs = _sequence(self, input_shape[0] if cross else input_shape)
        ms = _sequence(self, input_shape[1]) if cross else xs
        f, g = xs[1], ms[1]
        d = self.dim or f
        if d % self.heads:
            self.fail(f"the model dimension {d} must be a multiple of heads={self.heads}")
        p = {}
        for name, fan_in, fan_out in (("q", f, d), ("k", g, d), ("v", g, d), ("o", d, f)):
            bound = 1.0 / math.sqrt(fan_in)
            p["w" + name] = rng.uniform((fan_in, fan_out), bound)
            if self.bias:
                p["b" + name] = rng.uniform((fan_out,), bound)
        return Record(**p), xs

    def apply(self, params, x, ctx):
        ops = ctx.ops
        memory = x
        if isinstance(x, list | tuple):
            x, memory = x
        if len(x.shape) != 3 or x.shape[2] != params.wq.shape[0]:
            self.fail(f"expects inputs [batch, steps, {params.wq.shape[0]} features], got shape "
                      f"{list(x.shape)}")
        b = (lambda n: getattr(params, "b" + n)) if self.bias else (lambda n: None)
        q = self._heads(ops, ops.dense(x, params.wq, b("q")))
        k = self._heads(ops, ops.dense(memory, params.wk, b("k")))
        v = self._heads(ops, ops.dense(memory, params.wv, b("v")))
        mask = ctx.mask
        if mask is not None and tuple(mask.shape) == tuple(memory.shape[:2]):
            mask = mask[:, None, None, :]            # padding: a masked key is never attended to
        else:
            mask = None
        y = ops.attention(q, k, v, mask=mask, causal=self.causal)
        bsz, h, t, dh = y.shape
        y = ops.reshape(ops.transpose(y, (0, 2, 1, 3)), (bsz, t, h * dh))
        return dropout(ctx, ops.dense(y, params.wo, b("o")), self.rate)

    def _heads(self, ops, z):
        bsz, t, d = z.shape
        return ops.transpose(ops.reshape(z, (bsz, t, self.heads, d // self.heads)), (0, 2, 1, 3))


class TransformerBlock(Layer):
    """Pre-norm: x + drop(attention(norm(x))), then x + drop(mlp(norm(x)))."""

    kind = "transformer_block"

    def __init__(self, heads, hidden=None, dropout=0.0, causal=False, activation="gelu", name=None):
        super().__init__(name, None, hidden=hidden, dropout=dropout or None, causal=causal or None,
                         activation=None if activation == "gelu" else activation)
        self.heads = positive_int("transformer_block", "heads", heads)
        self.hidden = positive_int("transformer_block", "hidden", hidden, allow_none=True)
        self.rate = rate_arg("transformer_block", "dropout", dropout)
        self.attn = Attention(heads, causal=causal, dropout=dropout)
        self.norm1, self.norm2 = LayerNorm(), LayerNorm()
        self.activation = activation
        self.fc1 = self.fc2 = None

    def positional(self):
        return [self.heads]

    def children(self):
        return [("norm1", self.norm1), ("attn", self.attn), ("norm2", self.norm2), ("fc1", self.fc1),
                ("fc2", self.fc2)] if self.fc1 else [("norm1", self.norm1), ("attn", self.attn)]

    def build(self, rng, input_shape):
        f = _sequence(self, input_shape)[1]
        self.fc1 = Dense(self.hidden or 4 * f, activation=self.activation)
        self.fc2 = Dense(f)
        p = {}
        shape = input_shape
        for key, layer in self.children():
            p[key], shape = build_child(rng, layer, key, shape)
        return Record(**p), input_shape

    def apply(self, params, x, ctx):
        h = self.attn.apply(params.attn, self.norm1.apply(params.norm1, x, ctx), ctx)
        x = x + h
        h = self.fc1.apply(params.fc1, self.norm2.apply(params.norm2, x, ctx), ctx)
        return x + dropout(ctx, self.fc2.apply(params.fc2, h, ctx), self.rate)


_SINUSOIDS = {}


def sinusoids(steps, dim):
    """The fixed positional table of "Attention Is All You Need" (sin on even, cos on odd features),
    as nested lists; cached, since it depends only on the sizes."""
    key = (steps, dim)
    if key not in _SINUSOIDS:
        rows = []
        for t in range(steps):
            row = []
            for i in range(dim):
                angle = t / 10000.0 ** ((i - i % 2) / dim)
                row.append(math.sin(angle) if i % 2 == 0 else math.cos(angle))
            rows.append(row)
        _SINUSOIDS[key] = rows
    return _SINUSOIDS[key]


class Positions(Layer):
    """Adds a position signal to [B, T, D]: learned (a [context, D] table) or sinusoidal (fixed)."""

    kind = "positions"

    def __init__(self, context, kind="learned", name=None):
        super().__init__(name, None, kind=None if kind == "learned" else kind)
        self.context = positive_int("positions", "context", context)
        if kind not in ("learned", "sinusoidal"):
            raise ApsiError(f"positions: kind must be \"learned\" or \"sinusoidal\", got {show(kind, True)}")
        self.learned = kind == "learned"

    def positional(self):
        return [self.context]

    def build(self, rng, input_shape):
        t, d = _sequence(self, input_shape)
        if t is not None and t > self.context:
            self.fail(f"sequences of {t} steps are longer than context={self.context}")
        if self.learned:
            return Record(table=rng.normal((self.context, d), 0.02)), input_shape
        return EMPTY, input_shape

    def apply(self, params, x, ctx):
        t = x.shape[1]
        if t > self.context:
            self.fail(f"got a sequence of {t} steps, longer than context={self.context}")
        if self.learned:
            return x + params.table[:t]
        return x + ctx.ops.constant(sinusoids(t, x.shape[2]))


@register()
def attention(heads, dim=None, causal=False, dropout=0.0, bias=True, name=None):
    return Attention(heads, dim, causal, dropout, bias, name)


@register()
def transformer_block(heads, hidden=None, dropout=0.0, causal=False, activation="gelu", name=None):
    return TransformerBlock(heads, hidden, dropout, causal, activation, name)


@register()
def positions(context, kind="learned", name=None):
    return Positions(context, kind, name)


@parity_cases
def _cases(L, d):
    seq_of, dense = L.sequential, L.dense
    return [
        dict(name="attention", model=seq_of(dense(8, inputs=[5, 4]), L.attention(2)), x=d.seq),
        dict(name="attention_mask", model=seq_of(dense(8, inputs=[5, 4]), L.attention(2, causal=True)),
             x=d.seq, mask=d.mask),
        dict(name="transformer", model=seq_of(dense(8, inputs=[5, 4]), L.transformer_block(2, hidden=16)),
             x=d.seq),
        dict(name="positions", model=seq_of(L.embedding(11, 8, inputs=[6]), L.positions(6), dense(2)),
             x=d.tokens),
    ]
