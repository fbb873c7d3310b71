"""check_torch(): every layer type on NumPy and on PyTorch in float64, outputs and gradients compared.

Each case is a small model with fixed inputs. Both backends run the forward pass in training mode
(batch statistics, dropout, VAE sampling) and differentiate sum(output * fixed random weights) with
respect to every trainable weight. The torch side draws its random numbers (dropout masks, VAE noise)
from the same NumPy stream as the NumPy side, so even those paths must agree. A difference above
TOLERANCE anywhere fails the check and names the culprits.
"""

from dataclasses import dataclass, field

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record

TOLERANCE = 1e-10


@dataclass
class Case:
    name: str
    model: object
    x: object                          # an array, or a list of arrays for several inputs
    input_shape: object = None
    graph: object = None               # (edges [2, E], nodes)
    mask: object = None                # [B, T] bool


@dataclass
class Row:
    name: str
    output: float
    gradient: float

    def line(self):
        return f"{self.name:<14} output {self.output:.2e} gradient {self.gradient:.2e}"


@dataclass
class Result:
    device: str
    rows: list = field(default_factory=list)

    @property
    def largest(self):
        return max((max(r.output, r.gradient) for r in self.rows), default=0.0)

    @property
    def culprits(self):
        return [r for r in self.rows if not max(r.output, r.gradient) <= TOLERANCE]   # NaN fails too

    @property
    def ok(self):
        return not self.culprits

    def summary(self):
        if self.ok:
            return f"OK: largest difference {self.largest:.2e} on {self.device}"
        bad = self.culprits
        names = ", ".join(f"{r.name} (output {r.output:.2e}, gradient {r.gradient:.2e})" for r in bad)
        return (f"FAILED: {len(bad)} of {len(self.rows)} layers differ by more than {TOLERANCE:.0e} "
                f"between NumPy and PyTorch on {self.device}: {names}")


def uncovered():
    """The registered layers (layers/registry.py) no case below builds: a new layer needs a case."""
    from apsi_layers.layers import registry

    return sorted(set(registry.constructors()) - registry.recording(cases))


def cases():
    """The models checked: every layer type, composition and zoo family, as each family file gives them
    (its @parity_cases function, layers/registry.py)."""
    from apsi_layers import nn
    from apsi_layers.layers import registry
    from apsi_layers.layers.exports import layers_exports

    r = np.random.default_rng(0)

    def x(*shape):
        return r.standard_normal(shape)

    edges = np.array([[0, 1, 2, 3, 4, 5, 0, 2, 6, 1], [1, 2, 3, 4, 5, 6, 3, 0, 0, 6]])
    d = Record(x=x, graph=(edges, 7), tokens=r.integers(0, 11, (2, 6)), seq=x(3, 5, 4), img=x(2, 2, 8, 8),
               mask=np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=bool),
               two=Record(a=[6], b=[3]), pair=Record(a=[4], b=[4]), nn=nn)
    return [Case(**case) for case in registry.cases(Record(**layers_exports()), d)]


def check_torch(device="auto", out=print, names=None):
    """Run every case on both backends; `out` gets one line per case and the summary. -> Result."""
    from .runtime import load_torch

    torch = load_torch("check_torch")
    from . import nn_dispatch
    from .devices import name as device_name
    from .devices import select

    nn_dispatch.install()
    dev = select(torch, device)
    if dev.type == "mps":
        raise ApsiError('check_torch compares in float64, and precision="fp64" is not supported on Apple '
                        'MPS: run check_torch(device="cpu") on this machine')
    result = Result(device_name(dev))
    for case in cases():
        if names is not None and case.name not in names:
            continue
        row = compare(torch, case, dev)
        result.rows.append(row)
        out(row.line())
    out(result.summary())
    return result


def compare(torch, case, device):
    """Row(name, largest output difference, largest gradient difference) for one case."""
    from apsi_layers import nn

    params = case.model.init(seed=0, input_shape=case.input_shape)
    outs_np, grads_np, weights = _numpy_side(nn, case, params)
    outs_t, grads_t = _torch_side(torch, case, params, weights, device)
    d_out = max((_diff(a, b) for a, b in zip(outs_np, outs_t, strict=True)), default=0.0)
    if set(grads_np) != set(grads_t):
        return Row(case.name, d_out, float("inf"))
    d_grad = max((_diff(grads_np[name], g) for name, g in grads_t.items()), default=0.0)
    return Row(case.name, d_out, d_grad)


def _diff(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def _outputs(y):
    """The output tensors of a model in a fixed order (lists and records flattened)."""
    from apsi_layers.nn.autograd import tree

    return tree.leaves(y)


def _ctx(ops, case, training=True):
    from apsi_layers.layers.context import Ctx, Graph

    graph = None if case.graph is None else Graph(ops, case.graph[0], case.graph[1])
    mask = None if case.mask is None else ops.indices(case.mask) > 0      # a boolean tensor of the op set
    return Ctx(ops, training=training, rng=ops.rng(1), graph=graph, mask=mask)


def _inputs(ops, x):
    if isinstance(x, list):
        return [_inputs(ops, v) for v in x]
    return ops.indices(x) if np.asarray(x).dtype.kind in "iu" else ops.constant(x)


def _numpy_side(nn, case, params):
    from apsi_layers.backends import registry

    from .convert import is_state

    ops = registry.find("numpy").opset()         # the reference: found by name, not a sibling import
    x = _inputs(ops, case.x)
    outs = _outputs(case.model.apply(params, x, _ctx(ops, case)))
    r = np.random.default_rng(2)
    weights = [r.standard_normal(np.shape(o.data)) for o in outs]

    def loss(p, x):
        ys = _outputs(case.model.apply(p, x, _ctx(ops, case)))
        return sum(nn.sum(y * w) for y, w in zip(ys, weights, strict=True))

    floats = _float_inputs(x)
    if floats:
        g_params, g_x = nn.grad(loss, argnums=(0, 1))(params, x)
    else:
        g_params, g_x = nn.grad(loss)(params, x), None
    grads = {n: g.data for n, g in nn.tree.named_leaves(g_params)
             if not is_state(n)} if nn.tree.leaves(params) else {}
    if floats:
        grads.update({f"input {i}": g.data for i, g in enumerate(_as_list(g_x))})
    return [o.data for o in outs], grads, weights


def _as_list(x):
    return list(x) if isinstance(x, list) else [x]


def _float_inputs(x):
    return all(_is_float(v) for v in _as_list(x))


def _is_float(t):
    return "float" in str(t.dtype)


def _torch_side(torch, case, params, weights, device):
    from . import convert
    from .ops import NumpyStreamOps
    from .view import torch_view

    ops = NumpyStreamOps(device, torch.float64)
    named = convert.leaves_to_torch(params, device, torch.float64)
    trained = {n: t.requires_grad_() for n, t in named if not convert.is_state(n) and t.is_floating_point()}
    tree = convert.rebuild(params, [t for _, t in named]) if named else params
    x = _inputs(ops, case.x)
    if _float_inputs(x):
        trained.update({f"input {i}": v.requires_grad_() for i, v in enumerate(_as_list(x))})
    ys = _outputs(torch_view(case.model).apply(tree, x, _ctx(ops, case)))
    total = sum((y * torch.as_tensor(w, device=device)).sum() for y, w in zip(ys, weights, strict=True))
    grads = torch.autograd.grad(total, list(trained.values()), allow_unused=True)
    return ([ops.to_numpy(y) for y in ys],
            {n: np.zeros(tuple(t.shape)) if g is None else ops.to_numpy(g)
             for (n, t), g in zip(trained.items(), grads, strict=True)})
