"""Torch versions of nn's linear algebra (nn/numlib/: linalg.py, einsum_op.py), with NumPy's meanings, so an
Apsi loss or lambda layer that calls them runs under fit(backend="torch"). nn_dispatch.py merges
LINALG_IMPLS into its table."""

import torch

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd.tensor import Tensor
from apsi_layers.nn.numlib import einsum_op as _einsum

from . import spectral_fns

TL = torch.linalg


def _t(x, ref=None):
    """x as a torch tensor (on ref's device and float dtype when given)."""
    if isinstance(x, torch.Tensor):
        return x
    t = torch.as_tensor(x.data if type(x) is Tensor else x)
    if ref is not None:
        t = t.to(device=ref.device, dtype=ref.dtype if ref.is_floating_point() else t.dtype)
    return t


def _pair(a, b):
    ref = a if isinstance(a, torch.Tensor) else b
    return _t(a, ref), _t(b, ref)


def _errors(fn, name=None):
    """torch's LinAlgError (singular, not positive definite) in nn's words."""
    name = name or fn.__name__.lstrip("_")

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except torch.linalg.LinAlgError as e:
            raise ApsiError(f"{name}: {e} (on the torch backend)") from None
    wrapper.__name__ = fn.__name__
    return wrapper


def _dot(a, b):
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim <= 2:
        return torch.matmul(a, b)
    return torch.tensordot(a, b, dims=([a.ndim - 1], [b.ndim - 2]))


def _inner(a, b):
    a, b = _pair(a, b)
    return a * b if a.ndim == 0 or b.ndim == 0 else torch.inner(a, b)


def _einsum_t(subscripts, *operands):
    ref = next(x for x in operands if isinstance(x, torch.Tensor))
    ts = [_t(x, ref) for x in operands]
    wide = _einsum.ellipsis_shapes(subscripts, [tuple(t.shape) for t in ts])
    ts = [t if tuple(t.shape) == w else t.broadcast_to(w) for t, w in zip(ts, wide, strict=True)]
    inputs, output = _einsum.parse(subscripts, [tuple(t.shape) for t in ts])   # the same strict checks
    return torch.einsum(_einsum.expanded(inputs, output), *ts)


def _tensordot(a, b, axes=2):
    a, b = _pair(a, b)
    if not isinstance(axes, int):
        axes = [[v] if isinstance(v, int) else list(v) for v in axes]
    return torch.tensordot(a, b, dims=axes)


def _norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis is None and ord is not None and x.ndim > 2:
        raise ApsiError(f"norm: ord={ord!r} needs axis for a tensor of shape {tuple(x.shape)}")
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    return TL.norm(x, ord, dim=axis, keepdim=bool(keepdims))


@_errors
def _solve(a, b):
    a, b = _pair(a, b)
    if b.ndim == 1:
        return TL.solve(a, b.unsqueeze(-1))[..., 0]
    return TL.solve(a, b)


def _pinv(a, rcond=None, hermitian=False):
    return TL.pinv(a, rtol=rcond, hermitian=bool(hermitian))


def _lstsq(a, b, rcond=None):
    a, b = _pair(a, b)
    m, n = a.shape
    rcond = max(m, n) * torch.finfo(a.dtype).eps if rcond is None else float(rcond)
    s = TL.svdvals(a)
    rank = int((s > rcond * s.max()).sum()) if s.numel() else 0
    x = TL.pinv(a, rtol=rcond) @ b
    if rank == n and m > n:
        residuals = ((a @ x - b) ** 2).sum(0)
        residuals = residuals.reshape(1) if b.ndim == 1 else residuals
    else:
        residuals = a.new_zeros(0)
    return x, residuals, rank, s


@_errors
def _slogdet(a):
    sign, logabs = TL.slogdet(a)
    return sign.detach(), logabs


def _qr(a, mode="reduced"):
    q, r = TL.qr(a, mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else (q, r)


@_errors
def _eigh(a, UPLO="L"):  # noqa: N803
    # the values from their own Function, so a function of them alone has its hessian at repeats
    return spectral_fns.eigh(a, UPLO)


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return spectral_fns.svdvals(a)
    return spectral_fns.svd(a, full_matrices)


def _trace(a, offset=0, axis1=0, axis2=1):
    return torch.diagonal(a, offset, axis1, axis2).sum(-1)


def _cond(x, p=None):
    if p is None or p in (2, -2):
        s = TL.svdvals(x)
        big, small = s.amax(-1), s.amin(-1)
        return big / small if p != -2 else small / big
    return TL.matrix_norm(x, p) * TL.matrix_norm(TL.inv(x), p)


LINALG_IMPLS = {
    "dot": _dot, "vdot": lambda a, b: (lambda x, y: (x.reshape(-1) * y.reshape(-1)).sum())(*_pair(a, b)),
    "inner": _inner, "outer": lambda a, b: (lambda x, y: torch.outer(x.reshape(-1), y.reshape(-1)))(
        *_pair(a, b)),
    "einsum": _einsum_t, "tensordot": _tensordot, "trace": _trace,
    "diag": lambda v, k=0: torch.diag(v, k), "tril": lambda m, k=0: torch.tril(m, k),
    "triu": lambda m, k=0: torch.triu(m, k), "kron": lambda a, b: torch.kron(*_pair(a, b)),
    "norm": _norm, "inv": _errors(TL.inv, "inv"), "pinv": _pinv, "solve": _solve, "lstsq": _lstsq,
    "det": TL.det, "slogdet": _slogdet, "cholesky": _errors(TL.cholesky, "cholesky"), "qr": _qr,
    "eigh": _eigh,
    "eigvalsh": _errors(spectral_fns.eigvalsh, "eigvalsh"), "svd": _svd,
    "matrix_power": lambda a, n: TL.matrix_power(a, n), "cond": _cond,
}
