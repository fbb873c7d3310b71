"""Parameter trees between the backends: float64 nn tensors <-> torch tensors, in the tree's leaf order.

A tree keeps its structure; only its leaves change type. Running statistics sit under record fields
named `state` (layers/base.py): they travel with the weights but are not trained by the optimizer.
"""

import numpy as np
import torch

from apsi_layers.nn import tree
from apsi_layers.nn.tensor import Tensor

STATE = "state"


def is_state(name):
    """True for a leaf under a `state` field (running statistics), by its dotted name."""
    return STATE in name.split(".")


def leaves_to_torch(params, device, dtype):
    """[(dotted name, torch tensor)] for every leaf; floating leaves get `dtype`, int leaves stay int.

    Always copies: torch.as_tensor would share the caller's NumPy memory on the CPU at float64, and
    the optimizer's in-place updates would then change the tree the caller passed in. The cast is
    made on the host, before the move, since some devices (MPS) refuse float64 tensors."""
    out = []
    for name, leaf in tree.named_leaves(params):
        t = torch.tensor(np.asarray(leaf.data if type(leaf) is Tensor else leaf))
        out.append((name, (t.to(dtype=dtype) if t.is_floating_point() else t).to(device=device)))
    return out


def to_torch(params, device, dtype):
    """The tree with torch leaves (copies)."""
    return tree.unflatten_like(params, [t for _, t in leaves_to_torch(params, device, dtype)])


def to_nn(params_like, tensors):
    """A tree shaped like `params_like` whose leaves are float64 nn Tensors made from `tensors`."""
    return tree.unflatten_like(params_like, [Tensor(_array(t)) for t in tensors])


def _array(t):
    t = t.detach()
    if t.is_floating_point():
        return t.to("cpu", torch.float64).numpy().copy()
    return t.cpu().numpy().copy()


def rebuild(params_like, tensors):
    """The tree shaped like `params_like` with these (torch) leaves."""
    return tree.unflatten_like(params_like, list(tensors))
