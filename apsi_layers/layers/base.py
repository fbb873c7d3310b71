"""Layer: the one shape every layer, combinator and zoo model has.

A layer is a description (its kind and options) with two functions:
    build(rng, input_shape) -> (params, output_shape)   parameters from an init stream, plus shape inference
    apply(params, x, ctx) -> y                          the forward pass, written on ctx.ops only
Shapes leave out the batch axis; None marks a size known only at run time (a sequence length).
Every layer is also a model: `layer.init(seed=0, input_shape=[...])` makes its parameter tree.

Running statistics (batch norm) live in a record field named `state`: fit updates them and the
optimizer never sees them. Names given with name= can therefore not be "state".
"""

from typing import TYPE_CHECKING, Any

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, field_name_problem, show

if TYPE_CHECKING:
    from .context import Ctx

RESERVED = "state"


class Layer:
    # What Apsi code may read on any layer (the sandbox's allow-list).
    __apsi_attrs__ = frozenset({"init", "kind", "name", "options", "input_shape", "layers"})
    __apsi_type__ = "layer"
    kind = "layer"
    several_inputs = False      # true for layers that may take a list of inputs ([x, h0], [x, memory], ...)

    def __init__(self, name=None, inputs=None, **options):
        self.name = check_name(name, self.kind)
        self.settings = {k: v for k, v in options.items() if v is not None}    # those not at default
        self.declared_input = None if inputs is None else shape_arg(self.kind, "inputs", inputs)
        self.given_inputs = inputs      # as written, for the text that rebuilds the layer

    # --- what a layer type defines --------------------------------------------------------------
    def build(self, rng: Any, input_shape: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def apply(self, params: Any, x: Any, ctx: "Ctx") -> Any:
        raise NotImplementedError

    def children(self):
        """[(key, layer)] of the layers inside (combinators), for summary and input shapes."""
        return []

    def present(self, y: Any, ops: Any) -> Any:
        """What predict hands back for the forward output y (a VAE returns probabilities)."""
        return y

    # --- the model interface ------------------------------------------------------------------
    @property
    def input_shape(self):
        """The per-sample input shape the model knows (from inputs=, the zoo, or init), else none."""
        shape = self.known_input()
        return list(shape) if isinstance(shape, tuple) else shape

    def known_input(self):
        """The same in the internal form: a tuple, a list of tuples (several inputs), a record."""
        if self.declared_input is not None:
            return self.declared_input
        kids = self.children()
        return kids[0][1].known_input() if kids else None

    @property
    def options(self):
        """The options given that differ from the defaults, as a record (for Apsi code)."""
        return Record(**self.settings)

    @property
    def layers(self):
        return [layer for _, layer in self.children()]

    def init(self, seed: int = 0, input_shape: Any = None) -> Any:
        """The parameter tree (float64 nn tensors, the same numbers on every machine)."""
        from .init_rng import InitRng

        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ApsiError(f"{self.kind}.init: seed must be an int, got {show(seed, True)}")
        shape = self.resolve_input(input_shape, f"{self.kind}.init")
        params, _ = build_root(self, InitRng(seed), shape)
        return params

    def resolve_input(self, input_shape, fn):
        if input_shape is not None:
            shape = shape_arg(fn, "input_shape", input_shape)
            self.declared_input = shape          # a model takes its input size once
            return shape
        shape = self.known_input()
        if shape is None:
            raise ApsiError(f"{fn}: the model does not know the shape of its inputs; give it once, e.g. "
                            f"init(seed=0, input_shape=[features]) or inputs=N on the first layer")
        return shape

    def written_input(self):
        """The input shape as the program wrote it (inputs=), not one init(input_shape=) added later:
        what the text that rebuilds the layer holds (model files describe it so)."""
        given = getattr(self, "given_inputs", None)
        return None if given is None else shape_arg(self.kind, "inputs", given)

    def __repr__(self):
        args = [show(v, True) for v in self.positional()]
        args += [f"{k}={show(v, True)}" for k, v in self.settings.items()]
        if getattr(self, "given_inputs", None) is not None:
            args.append(f"inputs={show(_one_size(self.given_inputs), True)}")
        if self.name != self.kind:
            args.append(f"name={show(self.name, True)}")
        return f"{self.kind}({', '.join(args)})"

    __str__ = __repr__

    def positional(self):
        return []

    def label(self):
        return self.kind if self.name == self.kind else f"{self.kind} '{self.name}'"

    def fail(self, message):
        raise ApsiError(f"{self.label()}: {message}")


def _one_size(shape):
    """inputs= as the text shows it, one way for one meaning: 3 and [3] both show as 3."""
    if isinstance(shape, list | tuple) and len(shape) == 1 and isinstance(shape[0], int):
        return shape[0]
    return list(shape) if isinstance(shape, tuple) else shape


def check_name(name, kind):
    if name is None:
        return kind
    # the name becomes a field of the parameter record: the rules of record fields (no leading '_')
    if not isinstance(name, str) or field_name_problem(name):
        raise ApsiError(f"{kind}: name must be a name like \"encoder\" (letters, digits and '_', not "
                        f"starting with '_' or a digit), got {show(name, True)}")
    if name == RESERVED:
        raise ApsiError(f"{kind}: the name \"state\" is reserved for running statistics; choose another")
    return name


def shape_arg(fn, arg, value):
    """A per-sample shape from an int, a list of ints or a record of them (several named inputs)."""
    if isinstance(value, Record):
        return Record(**{k: shape_arg(fn, f"{arg}.{k}", v) for k, v in vars(value).items()})
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list | tuple) and value and all(isinstance(v, list | tuple) for v in value):
        return [shape_arg(fn, f"{arg}[{i}]", v) for i, v in enumerate(value)]     # several inputs
    if isinstance(value, list | tuple) and all(
            v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0) for v in value):
        return tuple(value)
    raise ApsiError(f"{fn}: {arg} must be a positive int or a list of them (one per axis, without the "
                    f"batch axis), got {show(value, True)}")


def positive_int(kind, arg, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ApsiError(f"{kind}: {arg} must be a positive int, got {show(value, True)}")


def rate_arg(kind, arg, value):
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value < 1.0:
        return float(value)
    raise ApsiError(f"{kind}: {arg} must be a number in [0, 1), got {show(value, True)}")


def build_root(layer, rng, input_shape):
    """Build a whole model, turning an error inside into one that names the layer path."""
    return build_child(rng, layer, "", input_shape)


def build_child(rng, layer, key, input_shape):
    """Build `layer` as the child `key` of the layer being built (records shapes for summary)."""
    if isinstance(input_shape, list) and not layer.several_inputs:
        layer.fail(f"takes one input but gets {len(input_shape)} ({fmt(input_shape)}): the layer before it "
                   "gives several outputs (like return_state=true); pick one with a lambda_layer, e.g. "
                   "lambda_layer(fn(xs) => xs[0], output_shape=[...]), or wire them in a dag")
    row = rng.enter(key, layer)
    try:
        params, out = layer.build(rng, input_shape)
    finally:
        rng.leave()
    rng.record(row, input_shape, out, params)
    rng.own(row, layer, has_params(params))
    return params, out


def has_params(params):
    """False for the empty record a parameter-free layer gives (it is left out of its parent)."""
    if isinstance(params, Record):
        return any(has_params(v) for v in vars(params).values())
    if isinstance(params, list | tuple):
        return any(has_params(v) for v in params)
    return True


def leaf_shapes(params, prefix=""):
    """[(dotted name, shape)] of a parameter tree's leaves, in order (tensors of any backend, Specs)."""
    if isinstance(params, Record):
        items = vars(params).items()
    elif isinstance(params, list | tuple):
        items = enumerate(params)
    else:
        return [(prefix, tuple(params.shape))]
    return [pair for k, v in items for pair in leaf_shapes(v, f"{prefix}.{k}" if prefix else str(k))]


EMPTY = Record()


def field(params, key):
    """Field `key` of a parent's params, or the empty record when the child has none."""
    return getattr(params, key, EMPTY)


def feature_dim(layer, shape, what="inputs"):
    """The last axis of a per-sample shape, which a layer needs to know at build time."""
    if not isinstance(shape, tuple) or not shape or shape[-1] is None:
        layer.fail(f"needs {what} whose last axis has a known size, got per-sample shape {fmt(shape)}")
    return shape[-1]


def fmt(shape):
    if isinstance(shape, tuple):
        return "[" + ", ".join("?" if s is None else str(s) for s in shape) + "]"
    if isinstance(shape, list):
        return "(" + ", ".join(fmt(s) for s in shape) + ")"
    if isinstance(shape, Record):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in vars(shape).items()) + "}"
    return str(shape)
