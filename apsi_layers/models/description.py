"""A model's description as JSON, and the model rebuilt from it.

Derived from each layer's own description (what prints it: `positional()`, the options in `settings`,
`name`, its input shape), so a layer type needs no writer of its own: a node is
    {"kind": "dense", "args": [8], "options": {"activation": "relu"}, "name": "enc", "inputs": [3]}
and the model is rebuilt by calling the constructor `use layers` binds to that kind. Three shapes are
not calls of one constructor: a zoo model (a sequential of its layers that prints as the zoo call), a
dag (named nodes) and a vae; they are written from the same fields. A layer used at several places is
one node, referred to by its index ({"layer": i}), so shared weights stay shared. Values are JSON with
tags for what JSON lacks ({"tuple": …}, {"record": …}, {"float": "nan"}, {"fn": i}: an Apsi function,
stored as source by functions.py).
"""

import math

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers.layers.base import Layer

MAX_TENSOR = 100_000        # numbers a function may capture as a constant tensor


class Writer:
    """Layers and values to JSON nodes; functions go to a FunctionTable."""

    def __init__(self, functions):
        self.nodes, self.index, self.functions = [], {}, functions

    def layer(self, layer, where="model"):
        if id(layer) in self.index:
            return self.index[id(layer)]
        node = self._node(layer, where)
        self.index[id(layer)] = len(self.nodes)
        self.nodes.append(node)
        return self.index[id(layer)]

    def _node(self, layer, where):
        from apsi_layers.layers.compose import Dag
        from apsi_layers.layers.zoo import Vae, Zoo

        here = f"{where} ({layer.label()})"
        node = {"kind": layer.kind}
        if isinstance(layer, Zoo):
            node["zoo"] = {"text": layer.call_args, "options": self.value(layer.settings, here),
                           "extra": {k: getattr(layer, k) for k in ("context", "vocab") if hasattr(layer, k)}}
            node["layers"] = [self.layer(child, f"{here}.{key}") for key, child in layer.pairs]
        elif isinstance(layer, Dag):
            node["dag"] = {"inputs": layer.input_names, "outputs": layer.outputs if layer.several_outputs
                           else layer.outputs[0],
                           "nodes": [[n, self.layer(child, f"{here}.{n}"), refs if several else refs[0]]
                                     for n, child, refs, several in layer.nodes]}
        elif isinstance(layer, Vae):
            node["args"] = [layer.n_in, layer.latent]
            node["options"] = {"hidden": list(layer.hidden)}
        else:
            if getattr(layer, "torch_fn", None) is not None:
                raise ApsiError(f"save_model: {here} has a torch_fn (a Python function), which a model "
                                "file cannot hold; save a model whose lambda layers are Apsi functions only")
            node["args"] = [self.value(v, here) for v in layer.positional()]
            node["options"] = {k: self.value(v, here) for k, v in layer.settings.items()}
            plugin = _plugin_of(layer)
            if plugin:
                node["plugin"] = plugin
        if layer.name != layer.kind:
            node["name"] = layer.name
        written = layer.written_input()     # as written: the root's init(input_shape=) is input_shape
        if written is not None:
            node["inputs"] = self.value(written, here)
        return node

    def value(self, v, where):
        if v is None or type(v) in (bool, int, str):
            return v
        if type(v) is float:
            return v if math.isfinite(v) else {"float": repr(v)}
        if type(v) is list:
            return [self.value(x, where) for x in v]
        if type(v) is tuple:
            return {"tuple": [self.value(x, where) for x in v]}
        if type(v) is Record:
            return {"record": {k: self.value(x, where) for k, x in vars(v).items()}}
        if type(v) is dict:
            return {"map": [[self.value(k, where), self.value(x, where)] for k, x in v.items()]}
        if isinstance(v, Layer):
            return {"layer": self.layer(v, where)}
        if callable(v) and not isinstance(v, type):
            return {"fn": self.functions.add(v, where, self)}
        shape = getattr(v, "shape", None)
        if shape is not None:
            return {"tensor": _tensor(v, where)}
        raise ApsiError(f"save_model: {where} holds {show(v, True)}, which a model file cannot store "
                        "(it stores numbers, text, lists, records, tensors, layers and Apsi functions)")


def _tensor(v, where):
    import numpy as np

    a = np.asarray(getattr(v, "data", v))
    if a.dtype.kind not in "biuf" or a.size > MAX_TENSOR:
        raise ApsiError(f"save_model: {where} holds a tensor of {a.size} {a.dtype} values; a model file "
                        f"stores constant tensors of up to {MAX_TENSOR} numbers inside its functions")
    kind = "int64" if a.dtype.kind in "biu" else "float64"
    flat = [x if kind == "int64" or math.isfinite(x) else repr(x) for x in a.astype(kind).ravel().tolist()]
    return {"dtype": kind, "shape": list(a.shape), "data": flat}


def _plugin_of(layer):
    """{"name": entry point, "package": distribution} for a layer class a Python plug-in gives."""
    from apsi_layers.layers.registry import constructors

    if layer.kind in constructors() or type(layer).__module__.startswith("apsi_layers."):
        return None
    from apsi_lang.installed import entry_points
    from apsi_layers.layers.exports import GROUP

    for name, ep in entry_points(GROUP).items():
        if ep.value.split(":")[0].split(".")[0] == type(layer).__module__.split(".")[0]:
            dist = getattr(ep, "dist", None)
            return {"name": name, "package": getattr(dist, "name", None) or ep.value.split(":")[0]}
    return {"name": None, "package": type(layer).__module__.split(".")[0]}


class Reader:
    """JSON nodes back to layers, each error naming the file and the node."""

    def __init__(self, shown, nodes, functions):
        self.shown, self.nodes, self.functions = shown, nodes, functions
        self.built, self.building = {}, set()
        self._ctors = None

    def fail(self, where, message):
        raise ApsiError(f"load_model: {self.shown}: {where}: {message}")

    def layer(self, i, where="the model"):
        if type(i) is not int or not 0 <= i < len(self.nodes):
            self.fail(where, f"refers to layer {show(i, True)}, which the file does not have")
        if i in self.built:
            return self.built[i]
        if i in self.building:
            self.fail(where, "the layers refer to each other in a cycle")
        self.building.add(i)
        node = self.nodes[i]
        if type(node) is not dict or type(node.get("kind")) is not str:
            self.fail(f"layers[{i}]", "is not a layer description (an object with a kind)")
        here = f"layers[{i}] ({node['kind']})"
        try:
            layer = self._make(node, here)
        except ApsiError as e:
            if e.message.startswith(f"load_model: {self.shown}"):
                raise
            self.fail(here, e.message)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            self.fail(here, f"cannot be rebuilt ({_why(e)})")
        self.building.discard(i)
        self.built[i] = layer
        return layer

    def _make(self, node, here):
        known = {"kind", "args", "options", "name", "inputs", "zoo", "dag", "plugin", "layers"}
        extra = [k for k in node if k not in known]
        if extra:
            self.fail(here, f"unknown field {extra[0]!r}")
        name = node.get("name")
        if "zoo" in node:
            layer = self._zoo(node, here)
        elif "dag" in node:
            layer = self._dag(node, here, name)
        else:
            layer = self._call(node, here, name)
        if "inputs" in node and layer.declared_input is None:
            from apsi_layers.layers.base import shape_arg

            layer.declared_input = shape_arg(node["kind"], "inputs", self.value(node["inputs"], here))
        return layer

    def _call(self, node, here, name):
        ctor = self.constructors().get(node["kind"])
        if ctor is None:
            plugin = node.get("plugin")
            if plugin:
                self.fail(here, f"the layer {node['kind']!r} comes from the Python plug-in "
                                f"{plugin.get('package')!r}, which is not installed: install it "
                                f"(python -m pip install {plugin.get('package')}) and load the file again")
            self.fail(here, f"unknown layer kind {node['kind']!r}; this Apsi has no such layer (a newer "
                            "Apsi's, or the file was changed)")
        args = node.get("args", [])
        options = node.get("options", {})
        if type(args) is not list or type(options) is not dict:
            self.fail(here, "args must be a list and options an object")
        args = [self.value(a, here) for a in args]
        options = {k: self.value(v, here) for k, v in options.items()}
        if name is not None:
            options["name"] = name
        import inspect

        try:
            params = inspect.signature(ctor).parameters
        except (TypeError, ValueError):
            params = {}
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        if "inputs" in node and "inputs" in params:      # as written, so the layer prints it
            options["inputs"] = _plain_shape(self.value(node["inputs"], here))
        for key in options:
            if params and key not in params and not takes_any:
                self.fail(here, f"unknown option {key!r} for {node['kind']} (it takes "
                                f"{', '.join(k for k in params if k not in ('args', 'kwargs'))})")
        layer = ctor(*args, **options)
        if not isinstance(layer, Layer):                # a plug-in's function may return anything
            self.fail(here, f"{node['kind']} did not make a layer")
        return layer

    def _zoo(self, node, here):
        from apsi_layers.layers.compose import Sequential
        from apsi_layers.layers.zoo import Zoo

        zoo = node["zoo"]
        if type(zoo) is not dict or type(zoo.get("text")) is not str or type(node.get("layers")) is not list:
            self.fail(here, "a zoo model needs its text and its layers")
        layers = [self.layer(j, f"{here}.layers[{k}]") for k, j in enumerate(node["layers"])]
        model = object.__new__(Zoo)
        model.kind = node["kind"]
        Sequential.__init__(model, layers, None, None)
        model.call_args = zoo["text"]
        model.settings = self.value(zoo.get("options") or {}, here) if "options" in zoo else {}
        if type(model.settings) is not dict:
            model.settings = {}
        for key, v in (zoo.get("extra") or {}).items():
            if key in ("context", "vocab") and type(v) is int:
                setattr(model, key, v)
        return model

    def _dag(self, node, here, name):
        from apsi_layers.layers.compose import dag

        spec = node["dag"]
        if type(spec) is not dict or type(spec.get("nodes")) is not list:
            self.fail(here, "a dag needs its nodes")
        nodes = {}
        for k, item in enumerate(spec["nodes"]):
            if type(item) is not list or len(item) != 3 or type(item[0]) is not str:
                self.fail(here, f"node {k} must be [name, layer, inputs]")
            nodes[item[0]] = [self.layer(item[1], f"{here}.{item[0]}"), item[2]]
        inputs = spec.get("inputs")
        shapes = self.value(node["inputs"], here) if "inputs" in node else None
        if shapes is not None and type(inputs) is list:
            per = [shapes] if len(inputs) == 1 else shapes
            inputs = Record(**{n: list(s) if isinstance(s, tuple) else s for n, s in zip(inputs, per,
                                                                                          strict=True)})
        return dag(inputs, Record(**nodes), spec.get("outputs"), name=name)

    def constructors(self):
        # An allow-list of layer constructors, never all of `use layers`: a file's "kind" is the
        # file's author's choice, and save_model, fit, load_model… as kinds ran at load time with
        # the loading program's permissions (a model file overwrote another model in its folder).
        if self._ctors is None:
            from apsi_layers.layers import dual, registry
            from apsi_layers.layers.exports import plugin_layers

            self._ctors = {**plugin_layers(), **registry.constructors()}
            self._ctors.update(flatten=dual.flatten, vae=dual.vae)     # as `use layers` binds them
        return self._ctors

    def value(self, v, where):
        if v is None or type(v) in (bool, int, float, str):
            return v
        if type(v) is list:
            return [self.value(x, where) for x in v]
        if type(v) is not dict or len(v) != 1:
            self.fail(where, f"holds a value that is not one of the file's kinds: {show(v, True)[:60]}")
        (tag, inner), = v.items()
        if tag == "tuple" and type(inner) is list:
            return tuple(self.value(x, where) for x in inner)
        if tag == "record" and type(inner) is dict:
            from apsi_lang.values import field_name_problem

            bad = [k for k in inner if field_name_problem(k)]
            if bad:
                self.fail(where, f"a record field is named {bad[0]!r}, which is not a field name")
            return Record(**{k: self.value(x, where) for k, x in inner.items()})
        if tag == "map" and type(inner) is list and all(type(p) is list and len(p) == 2 for p in inner):
            return {self.value(k, where): self.value(x, where) for k, x in inner}
        if tag == "float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
        if tag == "layer":
            return self.layer(inner, where)
        if tag == "fn":
            return self.functions.get(inner, where)
        if tag == "tensor" and type(inner) is dict:
            return _read_tensor(inner, lambda m: self.fail(where, m))
        self.fail(where, f"holds an unknown kind of value {tag!r}")


def _read_tensor(spec, fail):
    import numpy as np

    from apsi_layers.nn.autograd.tensor import Tensor

    dtype, shape, data = spec.get("dtype"), spec.get("shape"), spec.get("data")
    if dtype not in ("int64", "float64") or type(shape) is not list or type(data) is not list \
            or not all(type(s) is int and s >= 0 for s in shape) or math.prod(shape) != len(data) \
            or len(data) > MAX_TENSOR:
        fail("holds a damaged tensor")
    try:
        a = np.array([float(x) if type(x) is str else x for x in data], dtype=dtype).reshape(shape)
    except (TypeError, ValueError):
        fail("holds a damaged tensor")
    return Tensor(a)


def _plain_shape(shape):
    if isinstance(shape, tuple):
        return list(shape)
    if isinstance(shape, list):
        return [_plain_shape(s) for s in shape]
    return shape


def _why(e):
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
