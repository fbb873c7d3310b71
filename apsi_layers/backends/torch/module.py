"""torch_module(net, params) -> ApsiModule, a real torch.nn.Module; params_from_torch(net, m) back.

The module holds each trainable weight as a torch.nn.Parameter and each running statistic (leaves
under `state`) as a buffer, registered under the tree's own dotted name (submodules per record or
list level), so state_dict() keys read `dense.w`, `batch_norm.state.mean` and checkpoints load by
name. `m.names[i]` is the dotted name of the i-th leaf, `m.weights` the trainable ones in tree order.
parameters(), state_dict(), to(...), train()/eval(), DDP and export behave as for any module.
forward(x, graph=, mask=) runs the Apsi model on the torch op set.
"""

import torch

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd import tree

from . import convert, view
from .devices import select

DTYPES = {"float32": torch.float32, "float64": torch.float64, "fp32": torch.float32, "fp64": torch.float64}


class _Level(torch.nn.Module):
    """One record or list level of the parameter tree: it only holds names (ApsiModule runs the model)."""

    def forward(self, *args, **kwargs):
        raise TypeError("this is one level of an ApsiModule's parameter tree; call the ApsiModule itself")


class ApsiModule(torch.nn.Module):
    # what Apsi's type() says; also makes print() show the module, not a callable's <fn>
    __apsi_type__ = "torch module"

    def __init__(self, net, params, device="cpu", dtype=torch.float32, seed=0):
        super().__init__()
        self.net = net
        self._view = view.torch_view(net)      # custom and lambda layers' torch versions
        self._like = params
        self.seed = seed
        self.names = []
        self._slots = []                   # per leaf in tree order: ("w" or "s", its key in the module)
        for name, t in convert.leaves_to_torch(params, device, dtype):
            self.names.append(name)
            node, key, last = self._place(name)
            if convert.is_state(name) or not t.is_floating_point():
                node.register_buffer(last, t)
                self._slots.append(("s", key))
            else:
                node.register_parameter(last, torch.nn.Parameter(t))
                self._slots.append(("w", key))
        self._graph = None                 # (edges object, node count, Graph) of the last call
        self._rng = None

    def _place(self, name):
        """(submodule, module key, attribute) for a leaf's dotted name, making the levels on the way.
        A part that is already an attribute of torch.nn.Module (a layer named "eval") gets a "_"."""
        parts = [p if not hasattr(ApsiModule, p) and p not in vars(self) else p + "_"
                 for p in (name or "value").split(".")]
        node = self
        for part in parts[:-1]:
            if part not in node._modules:
                node.add_module(part, _Level())
            node = node._modules[part]
        return node, ".".join(parts), parts[-1]

    def leaves(self):
        """The tensors in tree order (weights and buffers)."""
        return [self.get_parameter(k) if kind == "w" else self.get_buffer(k) for kind, k in self._slots]

    @property
    def weights(self):
        """The trainable weights (torch.nn.Parameter) in tree order."""
        return [self.get_parameter(k) for kind, k in self._slots if kind == "w"]

    def tree(self):
        """The parameter tree with this module's tensors as leaves."""
        return convert.rebuild(self._like, self.leaves())

    def forward(self, x, graph=None, mask=None):
        from apsi_layers.layers.context import Ctx
        from apsi_layers.layers.training.state import replace_states

        ops = self._ops()
        ctx = Ctx(ops, training=self.training, rng=self._random(ops) if self.training else None,
                  graph=self._graph_for(ops, graph, x), mask=None if mask is None else ops._bool(mask))
        params = self.tree()
        y = self._view.apply(params, _cast(x, ops), ctx)
        if ctx.updates:                # batch norm's running statistics, as fit keeps them
            with torch.no_grad():
                new = tree.leaves(replace_states(params, ctx.updates))
                for (kind, key), t in zip(self._slots, new, strict=True):
                    if kind == "s":
                        self.get_buffer(key).copy_(t)
        return y

    def _graph_for(self, ops, graph, x):
        if graph is None:
            return None
        from apsi_layers.layers.context import Graph, graph_arg

        n = _first(x).shape[0]
        cached = self._graph
        if cached is not None and cached[0] is graph and (cached[1], cached[2].src.device) == (n, ops.device):
            return cached[2]
        edges = graph.detach().cpu().numpy() if isinstance(graph, torch.Tensor) else graph
        edges, n = graph_arg("forward", edges, n)
        g = Graph(ops, edges, n)
        self._graph = (graph, n, g)
        return g

    def _ops(self):
        from apsi_layers.backends.torch.ops import TorchOps

        ref = next(iter(self.leaves()))
        return TorchOps(ref.device, ref.dtype)

    def _random(self, ops):
        if self._rng is None or self._rng.device != ops.device:
            self._rng = ops.rng(self.seed)
        return self._rng

    def __repr__(self):
        leaves = self.leaves()
        count = sum(t.numel() for t in leaves)
        ref = leaves[0] if leaves else torch.empty(0)
        width = max((len(n) for n in self.names), default=0)
        lines = [f"  {n.ljust(width)}  {list(t.shape)}{'' if kind == 'w' else '  (buffer)'}"
                 for n, t, (kind, _) in zip(self.names, leaves, self._slots)]
        head = (f"ApsiModule({self.net!r}, {count:,} numbers in {len(leaves)} tensors, "
                f"{ref.device}, {str(ref.dtype).removeprefix('torch.')}")
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


def _first(x):
    return x[0] if isinstance(x, list | tuple) else x


def _cast(x, ops):
    """Float inputs in the module's dtype (a float64 array meets float32 weights); ids stay ints."""
    if isinstance(x, list | tuple):
        return [_cast(v, ops) for v in x]
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x.data if hasattr(x, "data") and not callable(x.data) else x)
    if x.is_floating_point() and (x.dtype != ops.dtype or x.device != ops.device):
        return x.to(device=ops.device, dtype=ops.dtype)
    return x if x.device == ops.device else x.to(ops.device)


def torch_module(net, params, device="cpu", dtype="float32", seed=0):
    """A torch.nn.Module running `net` with `params` (copied) on `device` ("auto", "cpu", "cuda", ...)."""
    from apsi_layers.layers.base import Layer

    if not isinstance(net, Layer):
        raise ApsiError(f"torch_module: the first argument must be a model (like mlp(4, 2)), not {net!r}")
    if dtype not in DTYPES:
        raise ApsiError(f"torch_module: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    target = select(torch, device)
    if target.type == "mps" and DTYPES[dtype] == torch.float64:
        raise ApsiError('precision="fp64" is not supported on Apple MPS: use dtype="float32" there')
    _check_params(net, params)
    return ApsiModule(net, params, target, DTYPES[dtype], seed)


def params_from_torch(net, m):
    """The parameter tree (float64 nn tensors) of an ApsiModule made from `net`."""
    if not isinstance(m, ApsiModule):
        raise ApsiError("params_from_torch: the second argument must be a module made by torch_module, "
                        f"not {type(m).__name__}")
    if m.net is not net and repr(m.net) != repr(net):
        raise ApsiError(f"params_from_torch: the module runs {m.net!r}, not {net!r}")
    return convert.to_nn(m._like, m.leaves())


def _check_params(net, params):
    """The tree must fit the model (names the parameter and both shapes), when the input size is known."""
    import numpy as np

    from apsi_layers.layers.training.data_checks import Data
    from apsi_layers.layers.training.model_checks import check_params

    shape = net.input_shape
    if shape is None:
        return
    shapes = shape if isinstance(shape, list) and shape and isinstance(shape[0], list | tuple) else [shape]
    if any(s is None for sh in shapes for s in sh):
        return
    check_params("torch_module", net, params, Data(inputs=[np.zeros((1, *sh)) for sh in shapes], targets=None,
                                                    n=1))
