"""Custom layers from Python: subclass CustomLayer, give it a `kind`, and define two methods.

    from apsi_layers.layers import CustomLayer

    class Scale(CustomLayer):
        kind = "scale"

        def __init__(self, init=1.0, name=None):
            super().__init__(name)
            self.start = init

        def params(self, rng, input_shape):          # parameters from the init stream, and the output shape
            return {"s": rng.full((input_shape[-1],), self.start)}, input_shape

        def forward(self, params, x, ctx):           # the forward pass, on ctx.ops only
            return x * params.s

`rng` offers uniform(shape, bound), normal(shape, std), zeros(shape), ones(shape), full(shape, v);
shapes leave out the batch axis. `forward` must compute with `ctx.ops` (never NumPy or torch
directly) so the layer runs on every backend; `ctx.training`, `ctx.rng`, `ctx.graph` and `ctx.mask`
are there when needed. A layer that cannot be written on the op set may define
`torch_forward(params, x, ctx)` too: the torch backend calls it instead of forward.
To offer layers to `use layers`, register an entry point in the group "apsi.layers" naming a
function that returns {name: class}, e.g. {"scale": Scale}.
"""

from apsi_lang.values import Record

from .base import Layer


class CustomLayer(Layer):
    kind = "custom"
    several_inputs = True       # a custom layer checks its own inputs

    def params(self, rng, input_shape):
        raise NotImplementedError(f"{type(self).__name__}.params(rng, input_shape)")

    def forward(self, params, x, ctx):
        raise NotImplementedError(f"{type(self).__name__}.forward(params, x, ctx)")

    def build(self, rng, input_shape):
        params, out = self.params(rng, input_shape)
        if isinstance(params, dict):
            params = Record(**params)
        return params, tuple(out) if isinstance(out, list) else out

    def apply(self, params, x, ctx):
        return self.forward(params, x, ctx)
