"""The arguments of nn's functions under the torch backend: nn tensors, numbers and lists as torch
tensors on the device of the torch tensor among them. Shared by nn_dispatch.py, nn_numlib.py and
nn_toolbox.py (here, so they need not import each other)."""

import numpy as np
import torch

from apsi_layers.nn.autograd.tensor import Tensor

from .convert import host_to_device


def like(x, ref):
    """x (an nn Tensor, a number, a list) as a torch tensor on ref's device; torch tensors pass."""
    if isinstance(x, torch.Tensor):
        return x
    data = x.data if type(x) is Tensor else x
    if ref.is_floating_point():
        return host_to_device(np.asarray(data, dtype=np.float64), ref.device, ref.dtype)
    return torch.as_tensor(data, device=ref.device)


def ref(*xs):
    return next(x for x in xs if isinstance(x, torch.Tensor))


def binary(fn):
    def op(a, b):
        r = ref(a, b)
        return fn(like(a, r), like(b, r))
    return op
