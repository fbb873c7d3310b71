"""Parameter trees between the backends: float64 nn tensors <-> torch tensors, in the tree's leaf order.

A tree keeps its structure; only its leaves change type. Running statistics sit under record fields
named `state` (layers/base.py): they travel with the weights but are not trained by the optimizer.
"""

import numpy as np
import torch

from apsi_layers.nn.autograd import tree
from apsi_layers.nn.autograd.tensor import Tensor

STATE = "state"


def is_state(name):
    """True for a leaf under a `state` field (running statistics), by its dotted name."""
    return STATE in name.split(".")


# NumPy dtypes for the torch float dtypes NumPy has; bfloat16 goes through float32
_HOST = {torch.float64: np.float64, torch.float32: np.float32, torch.float16: np.float16,
         torch.bfloat16: np.float32}


def host_to_device(a, device, dtype):
    """A NumPy array (or nested list, number) as a torch tensor on `device`: floats in `dtype`, ints and
    booleans as they are. Always a copy (never the caller's memory), and the float cast is made by
    NumPy on the host, so no float64 tensor exists on the torch side unless dtype is float64: some
    devices (Apple MPS) refuse float64 tensors."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        t = torch.from_numpy(np.array(a, dtype=_HOST[dtype]))
        t = t if t.dtype == dtype else t.to(dtype=dtype)
    else:
        t = torch.from_numpy(np.array(a))
    return t.to(device=device)


def to_host(t):
    """A torch tensor as a new float64 (or int/bool) NumPy array; the cast is made by NumPy."""
    t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    a = t.cpu().numpy()
    return a.astype(np.float64) if a.dtype.kind == "f" else a.copy()


def leaves_to_torch(params, device, dtype):
    """[(dotted name, torch tensor)] for every leaf; floating leaves get `dtype`, int leaves stay int.

    Always copies: torch.as_tensor would share the caller's NumPy memory on the CPU at float64, and
    the optimizer's in-place updates would then change the tree the caller passed in."""
    return [(name, host_to_device(leaf.data if type(leaf) is Tensor else leaf, device, dtype))
            for name, leaf in tree.named_leaves(params)]


def to_torch(params, device, dtype):
    """The tree with torch leaves (copies)."""
    return tree.unflatten_like(params, [t for _, t in leaves_to_torch(params, device, dtype)])


def to_nn(params_like, tensors):
    """A tree shaped like `params_like` whose leaves are float64 nn Tensors made from `tensors`."""
    return tree.unflatten_like(params_like, [Tensor(to_host(t)) for t in tensors])


def rebuild(params_like, tensors):
    """The tree shaped like `params_like` with these (torch) leaves."""
    return tree.unflatten_like(params_like, list(tensors))


def whole(t):
    """A whole tensor from one that may be an FSDP slice (a collective: every rank calls it)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def sliced_like(like, t):
    """`t`, a whole tensor, cut as the FSDP slice `like` is (every rank calls it); `t` itself otherwise."""
    if not hasattr(like, "device_mesh"):
        return t
    from torch.distributed.tensor import distribute_tensor

    return distribute_tensor(t, like.device_mesh, like.placements)
