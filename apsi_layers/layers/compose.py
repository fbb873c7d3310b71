"""Layers made of layers: sequential, residual, parallel, merge and DAG models.

A combinator's parameters are a record with one field per child that has parameters, named after the
child (its name= or its kind, numbered when repeated: dense, dense_1, ...). The same layer value used
at two places is one set of weights (siamese sharing): it appears once in the tree.
"""

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import EMPTY, Layer, build_child, field, fmt, has_params, leaf_shapes
from .init_rng import ShapeRng
from .registry import parity_cases, register
from .suggest import unknown


def as_layer(kind, value, what="argument"):
    if isinstance(value, Layer):
        return value
    raise ApsiError(f"{kind}: each {what} must be a layer (like dense(8)), got {show(value, True)}")


def keyed(kind, layers):
    """[(key, layer)]: unique keys per distinct layer; a layer repeated keeps its first key."""
    out, seen, used = [], {}, set()
    for layer in layers:
        if id(layer) in seen:
            out.append((seen[id(layer)], layer))
            continue
        key = layer.name
        if key in used and layer.name != layer.kind:
            raise ApsiError(f"{kind}: two different layers are named {key!r}; names must be unique "
                            "(use the same layer value twice to share its weights)")
        n = 1
        while key in used:
            key = f"{layer.name}_{n}"
            n += 1
        used.add(key)
        seen[id(layer)] = key
        out.append((key, layer))
    return out


def shape_only(layer, input_shape):
    """(placeholder params, output shape) without drawing numbers or recording a summary row."""
    return layer.build(ShapeRng(), input_shape)


def build_keyed(owner, rng, run):
    """Build children in order; `run(key, layer, build)` decides each child's input shape. A shared
    layer met again is checked against its first build instead of drawing new weights."""
    params, built = {}, {}

    def build(key, layer, input_shape):
        if key in built:
            spec, out = shape_only(layer, input_shape)
            _same_shapes(owner, key, built[key], spec)
            return out
        p, out = build_child(rng, layer, key, input_shape)
        built[key] = p
        if has_params(p):
            params[key] = p
        return out

    out = run(build)
    return Record(**params), out


def _same_shapes(owner, key, first, again):
    a, b = leaf_shapes(first), leaf_shapes(again)
    if a != b:
        owner.fail(f"the shared layer {key!r} is used with inputs that need other weight shapes "
                   f"({a[:2]} vs {b[:2]}); a shared layer needs the same input size at every use")


class Sequential(Layer):
    kind = "sequential"
    several_inputs = True

    def __init__(self, layers, name=None, inputs=None):
        super().__init__(name, inputs)
        flat = []
        for item in layers:
            flat.extend(item if isinstance(item, list | tuple) else [item])
        if not flat:
            raise ApsiError("sequential: needs at least one layer, like sequential(dense(8), dense(1))")
        self.pairs = keyed("sequential", [as_layer("sequential", v) for v in flat])

    def children(self):
        return list(self.pairs)

    def positional(self):
        return [layer for _, layer in self.pairs]

    def build(self, rng, input_shape):
        def run(build):
            shape = input_shape
            for key, layer in self.pairs:
                shape = build(key, layer, shape)
            return shape
        return build_keyed(self, rng, run)

    def apply(self, params, x, ctx):
        for key, layer in self.pairs:
            x = layer.apply(field(params, key), x, ctx)
        return x

    def present(self, y, ops):
        return self.pairs[-1][1].present(y, ops)


class Residual(Layer):
    kind = "residual"

    def __init__(self, layer, name=None):
        super().__init__(name)
        self.inner = as_layer("residual", layer)

    def children(self):
        return [("", self.inner)]

    def positional(self):
        return [self.inner]

    def build(self, rng, input_shape):
        params, out = build_child(rng, self.inner, "", input_shape)
        if out != input_shape:
            self.fail(f"the inner layer maps {fmt(input_shape)} to {fmt(out)}; x + layer(x) needs the "
                      "same shape (give the inner layer as many outputs as inputs)")
        return params, out

    def apply(self, params, x, ctx):
        return x + self.inner.apply(params, x, ctx)


MERGES = ("concat", "add", "mean", "mul", "sub")


def merge_values(owner, kind, axis, xs, ops):
    if kind == "concat":
        return ops.concat(list(xs), axis)
    y = xs[0]
    if kind == "sub":
        return xs[0] - xs[1]
    for x in xs[1:]:
        y = y * x if kind == "mul" else y + x
    return y * (1.0 / len(xs)) if kind == "mean" else y


def merge_shapes(owner, kind, axis, shapes):
    if kind == "sub" and len(shapes) != 2:
        owner.fail(f"merge=\"sub\" takes exactly 2 inputs, got {len(shapes)}")
    if kind != "concat":
        if any(s != shapes[0] for s in shapes):
            owner.fail(f"merge=\"{kind}\" needs inputs of one shape, got {', '.join(fmt(s) for s in shapes)}")
        return shapes[0]
    ranks = {len(s) for s in shapes}
    if len(ranks) != 1:
        owner.fail(f"merge=\"concat\" needs inputs with the same number of axes, got "
                   f"{', '.join(fmt(s) for s in shapes)}")
    rank = ranks.pop()
    a = axis if axis < 0 else axis - 1            # axis counts the batch axis; shapes do not
    if not -rank <= a < rank:
        owner.fail(f"axis={axis} is outside per-sample shapes of {rank} axes")
    a %= rank
    rest = [s[:a] + s[a + 1:] for s in shapes]
    if any(r != rest[0] for r in rest):
        owner.fail(f"merge=\"concat\" on axis {axis} needs the other axes equal, got "
                   f"{', '.join(fmt(s) for s in shapes)}")
    sizes = [s[a] for s in shapes]
    total = None if None in sizes else sum(sizes)
    return shapes[0][:a] + (total,) + shapes[0][a + 1:]


def _merge_kind(fn, merge, axis):
    if merge not in MERGES:
        raise ApsiError(f"{fn}: {unknown('merge', merge, MERGES)}")
    if not isinstance(axis, int) or isinstance(axis, bool) or axis == 0:
        raise ApsiError(f"{fn}: axis must be a non-zero int (axis 0 is the batch), got {show(axis, True)}")
    return merge


class Parallel(Layer):
    kind = "parallel"
    several_inputs = True

    def __init__(self, branches, merge="concat", axis=-1, name=None):
        super().__init__(name, None, merge=merge, axis=None if axis == -1 else axis)
        if len(branches) < 2:
            raise ApsiError("parallel: needs at least two layers, like parallel(dense(8), dense(8))")
        self.merge = _merge_kind("parallel", merge, axis)
        self.axis = axis
        self.pairs = keyed("parallel", [as_layer("parallel", b) for b in branches])

    def children(self):
        return list(self.pairs)

    def positional(self):
        return [layer for _, layer in self.pairs]

    def build(self, rng, input_shape):
        def run(build):
            shapes = [build(key, layer, input_shape) for key, layer in self.pairs]
            return merge_shapes(self, self.merge, self.axis, shapes)
        return build_keyed(self, rng, run)

    def apply(self, params, x, ctx):
        ys = [layer.apply(field(params, key), x, ctx) for key, layer in self.pairs]
        return merge_values(self, self.merge, self.axis, ys, ctx.ops)


class Merge(Layer):
    kind = "merge"
    several_inputs = True

    def __init__(self, merge="concat", axis=-1, name=None):
        super().__init__(name, None, axis=None if axis == -1 else axis)
        self.merge = _merge_kind("merge", merge, axis)
        self.axis = axis

    def positional(self):
        return [self.merge]

    def build(self, rng, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) < 2:
            self.fail("takes several inputs: in a dag, give the node a list of input names")
        return EMPTY, merge_shapes(self, self.merge, self.axis, input_shape)

    def apply(self, params, x, ctx):
        return merge_values(self, self.merge, self.axis, list(x), ctx.ops)


class Dag(Layer):
    """Named nodes, each a layer applied to named inputs or earlier nodes; several inputs and outputs."""

    kind = "dag"
    several_inputs = True

    def __init__(self, inputs, nodes, outputs, name=None):
        super().__init__(name)
        self.written = (inputs, outputs)
        self.input_names, shapes = _dag_inputs(inputs)
        self.written_shapes = None
        if shapes is not None:
            self.declared_input = self.written_shapes = shapes[0] if len(shapes) == 1 else shapes
        if not isinstance(nodes, Record) or not vars(nodes):
            raise ApsiError("dag: nodes must be a record {name: [layer, inputs], ...}, e.g. "
                            "nodes={h: [dense(8), \"x\"], out: [dense(1), \"h\"]}")
        self.nodes = []                     # (name, layer, [input names], several inputs?)
        known = set(self.input_names)
        for node, spec in vars(nodes).items():
            layer, refs = _dag_node(node, spec)
            for ref in refs[0]:
                if ref not in known:
                    raise ApsiError(f"dag: node {node!r} reads {ref!r}, which is neither an input nor an "
                                    f"earlier node (known so far: {', '.join(sorted(known))})")
            if node in known:
                raise ApsiError(f"dag: the name {node!r} is used twice")
            if node == "state":
                raise ApsiError("dag: the node name \"state\" is reserved for running statistics")
            known.add(node)
            self.nodes.append((node, layer, refs[0], refs[1]))
        outs = [outputs] if isinstance(outputs, str) else outputs
        if not isinstance(outs, list | tuple) or not outs or any(o not in known for o in outs):
            raise ApsiError(f"dag: outputs must name nodes or inputs (known: {', '.join(sorted(known))}), "
                            f"got {show(outputs, True)}")
        self.outputs = list(outs)
        self.several_outputs = not isinstance(outputs, str)
        seen = {}
        self.keys = []
        for node, layer, _, _ in self.nodes:
            seen.setdefault(id(layer), node)
            self.keys.append(seen[id(layer)])

    @property
    def n_inputs(self):
        return len(self.input_names)

    def children(self):
        return [(key, layer) for key, (node, layer, _, _) in zip(self.keys, self.nodes, strict=True)
                if key == node]

    def written_input(self):
        return self.written_shapes

    def __repr__(self):
        """The call that makes it, as written (inputs with their shapes, a node's one input or list)."""
        nodes = ", ".join(f"{n}: [{layer!r}, {show(r if several else r[0], True)}]"
                          for n, layer, r, several in self.nodes)
        inputs, outputs = self.written
        named = "" if self.name == self.kind else f", name={show(self.name, True)}"
        return f"dag({show(inputs, True)}, {{{nodes}}}, {show(outputs, True)}{named})"

    __str__ = __repr__

    def build(self, rng, input_shape):
        shapes = self._input_shapes(input_shape)

        def run(build):
            for key, (node, layer, refs, several) in zip(self.keys, self.nodes, strict=True):
                ins = [shapes[r] for r in refs]
                shapes[node] = build(key, layer, ins if several else ins[0])
            outs = [shapes[o] for o in self.outputs]
            return outs if self.several_outputs else outs[0]

        return build_keyed(self, rng, run)

    def _input_shapes(self, input_shape):
        names = self.input_names
        if isinstance(input_shape, Record):
            missing = [n for n in names if not hasattr(input_shape, n)]
            if missing:
                self.fail(f"input_shape has no entry for {', '.join(missing)}")
            return {n: getattr(input_shape, n) for n in names}
        if len(names) == 1:
            return {names[0]: input_shape}
        if not isinstance(input_shape, list) or len(input_shape) != len(names):
            self.fail(f"has {len(names)} inputs ({', '.join(names)}): give one shape per input, got "
                      f"{fmt(input_shape)}")
        return dict(zip(names, input_shape, strict=True))

    def apply(self, params, x, ctx):
        if len(self.input_names) == 1:
            values = {self.input_names[0]: x}
        else:
            if not isinstance(x, list | tuple) or len(x) != len(self.input_names):
                self.fail(f"has {len(self.input_names)} inputs ({', '.join(self.input_names)}): pass a "
                          "list with one tensor per input")
            values = dict(zip(self.input_names, x, strict=True))
        for key, (node, layer, refs, several) in zip(self.keys, self.nodes, strict=True):
            ins = [values[r] for r in refs]
            values[node] = layer.apply(field(params, key), ins if several else ins[0], ctx)
        outs = [values[o] for o in self.outputs]
        return outs if self.several_outputs else outs[0]


def _dag_inputs(inputs):
    if isinstance(inputs, str):
        return [inputs], None
    if isinstance(inputs, Record):
        from .base import shape_arg

        names = list(vars(inputs))
        return names, [shape_arg("dag", f"inputs.{n}", getattr(inputs, n)) for n in names]
    if isinstance(inputs, list | tuple) and inputs and all(isinstance(n, str) for n in inputs):
        return list(inputs), None
    raise ApsiError(f"dag: inputs must be a name, a list of names or a record {{name: shape}}, "
                    f"got {show(inputs, True)}")


def _dag_node(node, spec):
    if isinstance(spec, list | tuple) and len(spec) == 2 and isinstance(spec[0], Layer):
        layer, refs = spec
        if isinstance(refs, str):
            return layer, ([refs], False)
        if isinstance(refs, list | tuple) and refs and all(isinstance(r, str) for r in refs):
            return layer, (list(refs), True)
    raise ApsiError(f"dag: node {node!r} must be [layer, input] or [layer, [inputs...]], "
                    f"got {show(spec, True)}")


@register()
def sequential(*layers, name=None, inputs=None):
    """Layers applied one after another."""
    return Sequential(layers, name, inputs)


@register()
def residual(layer, name=None):
    """x + layer(x)."""
    return Residual(layer, name)


@register()
def parallel(*branches, merge="concat", axis=-1, name=None):
    """Every branch on the same input, outputs merged ("concat" on the last axis, "add", ...)."""
    return Parallel(branches, merge, axis, name)


@register()
def merge(kind="concat", axis=-1, name=None):
    """A dag node joining several inputs: "concat", "add", "mean", "mul" or "sub"."""
    return Merge(kind, axis, name)


@register()
def dag(inputs, nodes, outputs, name=None):
    """A model as a graph of named nodes: dag(inputs=["x"], nodes={h: [dense(8), "x"]}, outputs="h")."""
    return Dag(inputs, nodes, outputs, name)


@parity_cases
def _cases(L, d):
    from apsi_lang.values import Record

    dense = L.dense
    shared = dense(5, activation="tanh")
    dag_model = L.dag(inputs=d.two, nodes=Record(ha=[dense(5, activation="relu"), "a"], hb=[dense(5), "b"],
                                                  h=[L.merge("concat"), ["ha", "hb"]], out=[dense(2), "h"],
                                                  side=[dense(1), "hb"]), outputs=["out", "side"])
    siamese = L.dag(inputs=d.pair, nodes=Record(ea=[shared, "a"], eb=[shared, "b"],
                                                d=[L.merge("sub"), ["ea", "eb"]], out=[dense(1), "d"]),
                    outputs="out")
    return [
        dict(name="parallel", model=L.sequential(L.parallel(dense(4, inputs=6), dense(3, activation="tanh")),
                                                 L.parallel(dense(7), dense(7), merge="add")), x=d.x(5, 6)),
        dict(name="dag", model=dag_model, x=[d.x(5, 6), d.x(5, 3)], input_shape=d.two),
        dict(name="siamese", model=siamese, x=[d.x(5, 4), d.x(5, 4)], input_shape=d.pair),
        dict(name="residual_layer",
             model=L.sequential(dense(6, inputs=6), L.residual(dense(6, activation="tanh"))), x=d.x(5, 6)),
    ]
