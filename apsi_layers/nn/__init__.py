"""The NumPy backend: float64 tensors with reverse-mode autodiff, and the training pieces.

Usable from Python directly (`from apsi_layers import nn`); apsi_modules.py declares what Apsi sees.
"""
# ruff: noqa: F401  (this file re-exports the package's public names)

from apsi_layers.data.csv_shards import csv_to_npy  # noqa: E402  (issue 32: data larger than memory)
from apsi_layers.data.memmap import load_npy, save_npy  # noqa: E402
from apsi_layers.data.sources import dataset  # noqa: E402
from apsi_layers.data.windows import windows  # noqa: E402

from .autograd import foreign
from .autograd import graph as _graph  # installs Tensor's operators
from .autograd import heap as _heap
from .autograd.autodiff import grad, hessian, jacobian, value_and_grad
from .autograd.extend import defop
from .autograd.ops import (
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
from .autograd.reduce import argmax, argmin, log_softmax, logsumexp, max, mean, min, softmax, sum
from .autograd.shape import broadcast_to, concat, expand_dims, reshape, stack, take_along, transpose
from .autograd.tensor import Tensor, as_tensor
from .autograd.tree import clip_by_global_norm, flatten, global_norm, param_count, tree_map, unflatten
from .io.csv_io import load_csv
from .io.params_io import load_params, save_params

# numlib (issue 19): NumPy's elementwise, scan, sorting, shape, comparison and random functions
from .numlib.compare import allclose, array_equal, isclose
from .numlib.construct import (
    astype,
    flip,
    float32,
    float64,
    full_like,
    identity,
    int32,
    int64,
    meshgrid,
    pad,
    repeat,
    roll,
    split,
    squeeze,
    tile,
)
from .numlib.creation import (
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
from .numlib.elementwise import (
    arccos,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    ceil,
    cosh,
    erf,
    expm1,
    floor,
    hypot,
    isfinite,
    isinf,
    isnan,
    log2,
    log10,
    mod,
    nan_to_num,
    sign,
    sinh,
    tan,
    trunc,
)
from .numlib.elementwise import round as round_

# issue 35: NumPy/SciPy's statistics, special functions, sequences and index finders (toolbox.py lists them)
from .numlib.indices import argwhere, digitize, nonzero
from .numlib.linalg import (
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
from .numlib.linalg_more import (
    cho_solve,
    cross,
    diagonal,
    eig,
    eigvals,
    expm,
    logm,
    lu,
    matrix_rank,
    multi_dot,
    solve_triangular,
    sqrtm,
    svdvals,
    swapaxes,
)
from .numlib.random_gen import Rng, bernoulli, choice, normal, rng, shuffle, spawn, uniform
from .numlib.scans import all_ as all  # noqa: A004
from .numlib.scans import any_ as any  # noqa: A004
from .numlib.scans import (
    count_nonzero,
    cumprod,
    cumsum,
    diff,
    median,
    moveaxis,
    nanmean,
    nansum,
    percentile,
    prod,
    quantile,
    std,
    var,
)
from .numlib.sequences import convolve, cummax, cummin, geomspace, interp, logspace, trapezoid
from .numlib.sorting import argsort, bincount, histogram, isin, searchsorted, sort, topk, unique
from .numlib.special import arccosh, digamma, erfc, expit, gammaln, logaddexp, logit, polygamma
from .numlib.statistics import (
    average,
    corrcoef,
    cov,
    nanargmax,
    nanargmin,
    nanmax,
    nanmedian,
    nanmin,
    nanquantile,
    nanstd,
    nanvar,
    ptp,
)
from .train.losses import bce, cross_entropy, huber, mae, mse, vae
from .train.optim import adagrad, adam, adamw, nadam, radam, rmsprop, sgd
from .train.schedules import cosine_lr, exp_lr, step_lr, warmup_lr

__all__ = [name for name in dir() if not name.startswith("_")]

from .train.metrics import accuracy, confusion_matrix, precision_recall_f1, r2_score, roc_auc  # noqa: E402,F401

_heap.keep_freed_memory()


# nn's modules by their names before they moved into autograd/, numlib/, train/ and io/
# (`nn.tree.leaves`, `from apsi_layers.nn import linalg`): loaded on first use, so importing nn
# loads nothing more
_MOVED = {
    **dict.fromkeys(("tensor tape graph ops vjps autodiff xp xp_numlib extend nonfinite foreign reduce shape "
                     "tree heap").split(), "autograd"),
    **dict.fromkeys(("args compare construct creation einsum_op elementwise hurwitz indices lapack linalg "
                     "linalg_more linalg_more_vjps linalg_vjps matrix_functions nested random_gen scans "
                     "sequences sorting special spectral statistics toolbox toolbox_vjps").split(), "numlib"),
    **dict.fromkeys(("optim optim_inplace blockwise schedules losses metrics").split(), "train"),
    **dict.fromkeys(("params_io csv_io").split(), "io"),
}


def __getattr__(name):
    if name in _MOVED:
        from importlib import import_module

        return import_module(f"{__name__}.{_MOVED[name]}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
