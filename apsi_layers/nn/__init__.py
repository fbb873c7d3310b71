"""The NumPy backend: float64 tensors with reverse-mode autodiff, and the training pieces.

Usable from Python directly (`from apsi_layers import nn`); apsi_modules.py declares what Apsi sees.
"""
# ruff: noqa: F401  (this file re-exports the package's public names)

from . import foreign
from . import graph as _graph  # installs Tensor's operators
from . import heap as _heap
from .autodiff import grad, hessian, jacobian, value_and_grad
from .creation import (
    arange,
    array,
    eye,
    full,
    linspace,
    one_hot,
    ones,
    ones_like,
    permutation,
    rand,
    randint,
    randn,
    zeros,
    zeros_like,
)
from .csv_io import load_csv
from .extend import defop
from .linalg import (
    cholesky,
    cond,
    det,
    diag,
    dot,
    eigh,
    eigvalsh,
    einsum,
    inner,
    inv,
    kron,
    lstsq,
    matrix_power,
    norm,
    outer,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    tensordot,
    trace,
    tril,
    triu,
    vdot,
)
from .losses import bce, cross_entropy, huber, mae, mse, vae
from .ops import (
    abs,
    add,
    clip,
    cos,
    div,
    exp,
    gelu,
    log,
    log1p,
    matmul,
    maximum,
    minimum,
    mul,
    neg,
    power,
    relu,
    sigmoid,
    sin,
    softplus,
    sqrt,
    sub,
    tanh,
    where,
)
from .optim import adagrad, adam, adamw, nadam, radam, rmsprop, sgd
from .params_io import load_params, save_params
from .reduce import argmax, argmin, log_softmax, logsumexp, max, mean, min, softmax, sum
from .schedules import cosine_lr, exp_lr, step_lr, warmup_lr
from .shape import broadcast_to, concat, expand_dims, reshape, stack, take_along, transpose
from .tensor import Tensor, as_tensor
from .tree import clip_by_global_norm, flatten, global_norm, param_count, tree_map, unflatten


def round_values(x, ndigits=0):
    """x rounded to `ndigits` decimals (values only: rounding has no useful gradient)."""
    import numpy as np

    return np.round(as_tensor(x, "round").data, ndigits)

__all__ = [name for name in dir() if not name.startswith("_")]

_heap.keep_freed_memory()
