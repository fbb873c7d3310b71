"""Graph layers on node features [N, F] with ctx.graph (edges [2, E], row 0 sources, row 1 targets).

A message flows along each edge from its source to its target; each layer sums or averages what
arrives at a node (ops.scatter_add over the edges' targets).
"""

import math

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import Layer, fmt, positive_int
from .core import activation_fn
from .registry import parity_cases, register


def _features(layer, shape):
    if not isinstance(shape, tuple) or len(shape) != 1 or shape[0] is None:
        layer.fail(f"expects node features [nodes, features] (per node: [features]), got {fmt(shape)}")
    return shape[0]


def _check(layer, x, w):
    if len(x.shape) != 2 or x.shape[1] != w.shape[0]:
        layer.fail(f"expects node features [nodes, {w.shape[0]}], got shape {list(x.shape)}")


def _glorot(rng, shape):
    return rng.uniform(shape, math.sqrt(6.0 / (shape[0] + shape[-1])))


class GraphLayer(Layer):
    def __init__(self, units, activation=None, name=None, **options):
        super().__init__(name, None, activation=activation, **options)
        self.units = positive_int(self.kind, "units", units)
        self.act = activation_fn(self.kind, activation)

    def positional(self):
        return [self.units]

    def finish(self, ctx, y):
        return self.act(ctx.ops, y) if self.act else y


class Gcn(GraphLayer):
    """Kipf & Welling's graph convolution: D^-1/2 (A + I) D^-1/2 X W + b."""

    kind = "gcn_layer"

    def build(self, rng, input_shape):
        f = _features(self, input_shape)
        return Record(w=_glorot(rng, (f, self.units)), b=rng.zeros((self.units,))), (self.units,)

    def apply(self, params, x, ctx):
        g = ctx.need_graph(self)
        _check(self, x, params.w)
        ops = ctx.ops
        h = ops.matmul(x, params.w)
        msg = ops.take(h, g.loop_src, axis=0) * g.gcn_norm
        return self.finish(ctx, ops.scatter_add(msg, g.loop_dst, g.n) + params.b)


class Sage(GraphLayer):
    """GraphSAGE with mean aggregation: x W_self + mean(neighbours) W_neigh + b."""

    kind = "sage_layer"

    def build(self, rng, input_shape):
        f = _features(self, input_shape)
        return Record(w_self=_glorot(rng, (f, self.units)), w_neigh=_glorot(rng, (f, self.units)),
                      b=rng.zeros((self.units,))), (self.units,)

    def apply(self, params, x, ctx):
        g = ctx.need_graph(self)
        _check(self, x, params.w_self)
        ops = ctx.ops
        mean = ops.scatter_add(ops.take(x, g.src, axis=0), g.dst, g.n) / g.in_degree
        return self.finish(ctx, ops.matmul(x, params.w_self) + ops.matmul(mean, params.w_neigh) + params.b)


class Gat(GraphLayer):
    """Graph attention (Veličković et al.): per head, softmax over each node's in-edges (self-loop
    included) of leaky_relu(a_src · z_j + a_dst · z_i); heads concatenated (or averaged)."""

    kind = "gat_layer"

    def __init__(self, units, heads=1, concat=True, slope=0.2, activation=None, name=None):
        super().__init__(units, activation, name, heads=None if heads == 1 else heads,
                         concat=None if concat else False, slope=None if slope == 0.2 else slope)
        self.heads = positive_int("gat_layer", "heads", heads)
        self.concat = bool(concat)
        if not isinstance(slope, int | float) or slope < 0:
            raise ApsiError(f"gat_layer: slope must be a number >= 0, got {show(slope, True)}")
        self.slope = float(slope)

    def build(self, rng, input_shape):
        f = _features(self, input_shape)
        h, u = self.heads, self.units
        out = h * u if self.concat else u
        return Record(w=_glorot(rng, (f, h * u)), a_src=_glorot(rng, (h, u)), a_dst=_glorot(rng, (h, u)),
                      b=rng.zeros((out,))), (out,)

    def apply(self, params, x, ctx):
        g = ctx.need_graph(self)
        _check(self, x, params.w)
        ops = ctx.ops
        n, h, u = x.shape[0], self.heads, self.units
        z = ops.reshape(ops.matmul(x, params.w), (n, h, u))
        s_src = ops.sum(z * params.a_src, axis=-1)                 # [N, H]
        s_dst = ops.sum(z * params.a_dst, axis=-1)
        e = ops.leaky_relu(ops.take(s_src, g.loop_src, axis=0) + ops.take(s_dst, g.loop_dst, axis=0),
                           self.slope)                               # [E + N, H]
        alpha = ops.segment_softmax(e, g.loop_dst, n)
        msg = ops.take(z, g.loop_src, axis=0) * ops.expand_dims(alpha, -1)
        y = ops.scatter_add(msg, g.loop_dst, n)                      # [N, H, U]
        y = ops.reshape(y, (n, h * u)) if self.concat else ops.mean(y, axis=1)
        return self.finish(ctx, y + params.b)


class Gin(GraphLayer):
    """Graph isomorphism network (Xu et al.): mlp((1 + eps) x + sum(neighbours)), the mlp
    dense(hidden) -> relu -> dense(units); eps learned when train_eps=true."""

    kind = "gin_layer"

    def __init__(self, units, hidden=None, eps=0.0, train_eps=False, activation=None, name=None):
        super().__init__(units, activation, name, hidden=hidden, eps=eps or None,
                         train_eps=train_eps or None)
        self.hidden = positive_int("gin_layer", "hidden", hidden, allow_none=True)
        if not isinstance(eps, int | float) or isinstance(eps, bool):
            raise ApsiError(f"gin_layer: eps must be a number, got {show(eps, True)}")
        self.eps = float(eps)
        self.train_eps = bool(train_eps)

    def build(self, rng, input_shape):
        f = _features(self, input_shape)
        hid = self.hidden or self.units
        b1, b2 = 1.0 / math.sqrt(f), 1.0 / math.sqrt(hid)
        p = {"w1": rng.uniform((f, hid), b1), "b1": rng.uniform((hid,), b1),
             "w2": rng.uniform((hid, self.units), b2), "b2": rng.uniform((self.units,), b2)}
        if self.train_eps:
            p["eps"] = rng.full((1,), self.eps)
        return Record(**p), (self.units,)

    def apply(self, params, x, ctx):
        g = ctx.need_graph(self)
        _check(self, x, params.w1)
        ops = ctx.ops
        agg = ops.scatter_add(ops.take(x, g.src, axis=0), g.dst, g.n)
        scale = (1.0 + params.eps) if self.train_eps else 1.0 + self.eps
        h = ops.relu(ops.dense(x * scale + agg, params.w1, params.b1))
        return self.finish(ctx, ops.dense(h, params.w2, params.b2))


@register()
def gcn_layer(units, activation=None, name=None):
    return Gcn(units, activation, name)


@register()
def sage_layer(units, activation=None, name=None):
    return Sage(units, activation, name)


@register()
def gat_layer(units, heads=1, concat=True, slope=0.2, activation=None, name=None):
    return Gat(units, heads, concat, slope, activation, name)


@register()
def gin_layer(units, hidden=None, eps=0.0, train_eps=False, activation=None, name=None):
    return Gin(units, hidden, eps, train_eps, activation, name)


@parity_cases
def _cases(L, d):
    seq_of = L.sequential
    return [
        dict(name="sage", model=seq_of(L.sage_layer(6, activation="relu"), L.sage_layer(3)), x=d.x(7, 5),
             input_shape=[5], graph=d.graph),
        dict(name="gat", model=seq_of(L.gat_layer(4, heads=2), L.gat_layer(3, heads=2, concat=False)),
             x=d.x(7, 5), input_shape=[5], graph=d.graph),
        dict(name="gin", model=seq_of(L.gin_layer(6, train_eps=True), L.gin_layer(3)), x=d.x(7, 5),
             input_shape=[5], graph=d.graph),
        dict(name="gcn_layer", model=seq_of(L.gcn_layer(6, activation="relu"), L.gcn_layer(3)), x=d.x(7, 5),
             input_shape=[5], graph=d.graph),
    ]
