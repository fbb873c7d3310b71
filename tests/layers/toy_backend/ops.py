"""The toy backend's op set: every name of ops/spec.py on `nn` tensors holding float32 data.

Made from NumPy and `nn` directly (not from the NumPy backend's files: a backend imports no sibling).
`nn`'s ops keep float32 inputs float32, so only the ops that make new floats need their own version.
"""

from types import SimpleNamespace

import numpy as np

from apsi_layers import nn
from apsi_layers.nn import fused
from apsi_layers.nn.autograd.tensor import Tensor
from apsi_layers.ops.spec import OPS

F = np.float32


def constant(value):
    return Tensor(np.asarray(value.data if type(value) is Tensor else value, dtype=F))


def indices(value):
    return Tensor(np.asarray(value.data if type(value) is Tensor else value).astype(np.int64))


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)


IMPLS = {
    "constant": constant, "indices": indices,
    "is_tensor": lambda v: type(v) is Tensor,
    "to_numpy": lambda t: np.array(t.data if type(t) is Tensor else t),
    "stop_gradient": lambda x: Tensor(x.data) if type(x) is Tensor else constant(x),
    "zeros": lambda shape: Tensor(np.zeros(_shape(shape), dtype=F)),
    "ones": lambda shape: Tensor(np.ones(_shape(shape), dtype=F)),
    "normal": lambda shape, rng: Tensor(rng.standard_normal(_shape(shape), dtype=F)),
    "rng": np.random.default_rng,
    "dropout": lambda x, rate, rng: fused.dropout(x, rate, rng),
}


def _from_nn(name):
    """The op as `nn` (or its fused kernels) names it."""
    return getattr(fused, name, None) or getattr(nn, name)


OPSET = SimpleNamespace(**{name: IMPLS.get(name) or _from_nn(name) for name in OPS})
