"""The stream layers draw initial parameters from, and its shape-only twin.

Parameters are made on the NumPy side whatever backend trains them: float64 `nn` tensors from
NumPy's PCG64 generator, whose streams are the same on every platform, so `init(seed=0)` gives the
same numbers everywhere. Layers only call the methods below, never NumPy itself.

ShapeRng has the same methods but makes `Spec` placeholders (a shape, no numbers): fit, predict and
summary build the model with it to learn the shapes the parameters must have without the cost of
drawing them.
"""

import math

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd.tensor import Tensor


class Spec:
    """A parameter that is only a shape (what ShapeRng makes)."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = tuple(shape)

    @property
    def size(self):
        return math.prod(self.shape)


class _Builder:
    """Path bookkeeping shared by both streams: where in the model the layer being built sits."""

    def __init__(self):
        self.path = []
        self.trace = []       # [dotted path, layer, input shape, output shape, params], parents first
        self.owners = {}      # id(layer) -> (layer, dotted path) of each layer that got weights

    def enter(self, key, layer):
        """Start building `layer` as child `key`; returns its row (pre-order: parents first)."""
        self.path.append(str(key))
        self.trace.append([".".join(p for p in self.path if p), layer, None, None, None])
        return len(self.trace) - 1

    def leave(self):
        self.path.pop()

    def record(self, row, input_shape, output_shape, params):
        self.trace[row][2:] = [input_shape, output_shape, params]

    def own(self, row, layer, has_weights):
        """Note that the layer built at `row` got weights; the same layer value given weights twice
        (one use inside each of two different combinators) would silently train two copies."""
        if not has_weights:
            return
        here = self.trace[row][0] or layer.kind
        first = self.owners.setdefault(id(layer), (layer, here))[1]
        if first != here:
            layer.fail(f"the same layer is used at {first} and at {here}, inside two different "
                       "combinators, and would get two sets of weights. Weights are shared only between "
                       "uses inside one combinator: share the combinator itself (s = sequential(d), then "
                       "parallel(s, s)) or wire both uses in one dag")

    def probe(self, fn, input_shape):
        """The per-sample output shape of fn on a batch of zeros (lambda layers cannot say it)."""
        shape = (2,) + tuple(3 if s is None else s for s in input_shape)
        y = fn(Tensor(np.zeros(shape)))
        if type(y) is not Tensor and not isinstance(y, np.ndarray):
            # (np.shape would read a record's `shape` field, or give NumPy an unchecked value)
            from apsi_layers.nn.autograd.tensor import describe

            raise ApsiError(f"lambda_layer: the function must return a tensor, but it returned {describe(y)}")
        out = tuple((y.data if type(y) is Tensor else y).shape)[1:]
        if len(out) == len(input_shape):    # an unknown axis that kept its place stays unknown
            out = tuple(None if i is None else o for i, o in zip(input_shape, out, strict=True))
        return out


class InitRng(_Builder):
    def __init__(self, seed):
        super().__init__()
        self.gen = np.random.default_rng(seed)

    def uniform(self, shape, bound):
        return Tensor(self.gen.uniform(-bound, bound, size=tuple(shape)))

    def normal(self, shape, std=1.0):
        return Tensor(self.gen.standard_normal(size=tuple(shape)) * std)

    def zeros(self, shape):
        return Tensor(np.zeros(tuple(shape)))

    def ones(self, shape):
        return Tensor(np.ones(tuple(shape)))

    def full(self, shape, value):
        return Tensor(np.full(tuple(shape), float(value)))


class ShapeRng(_Builder):
    def uniform(self, shape, bound):
        return Spec(shape)

    def normal(self, shape, std=1.0):
        return Spec(shape)

    def zeros(self, shape):
        return Spec(shape)

    ones = zeros

    def full(self, shape, value):
        return Spec(shape)
