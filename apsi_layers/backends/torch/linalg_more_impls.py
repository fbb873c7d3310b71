"""Torch versions of nn/numlib/linalg_more.py (issue 35), with NumPy's and SciPy's meanings, so an Apsi loss
or lambda layer calling them runs under fit(backend="torch"). nn_dispatch.py merges MORE_IMPLS."""

import torch

from apsi_lang.errors import ApsiError

from . import spectral_fns
from .linalg_impls import _errors, _pair, _t

TL = torch.linalg


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a, b = _pair(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = a.movedim(axisa, -1), b.movedim(axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ApsiError("cross: the cross product needs 3-vectors (on the torch backend)")
    a, b = torch.broadcast_tensors(a, b)
    return TL.cross(a, b, dim=-1).movedim(-1, axisc)


def _multi_dot(arrays):
    ref = next(x for x in arrays if isinstance(x, torch.Tensor))
    return TL.multi_dot([_t(x, ref) for x in arrays])


def _matrix_rank(A, tol=None, hermitian=False, rtol=None):  # noqa: N803
    if A.ndim < 2:
        return int(bool((A != 0).any()))
    s = TL.svdvals(A.detach())
    biggest = s.amax(-1, keepdim=True)
    if tol is None:
        limit = biggest * (max(A.shape[-2:]) * torch.finfo(A.dtype).eps if rtol is None else float(rtol))
    else:
        limit = torch.full_like(biggest, float(tol))
    ranks = (s > limit).sum(-1)
    return int(ranks) if ranks.ndim == 0 else ranks


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    a, b = _pair(a, b)
    t = torch.tril(a) if lower else torch.triu(a)
    upper = not lower
    if trans in (1, 2, "T", "C"):
        t, upper = t.transpose(-1, -2), lower
    vector = b.ndim == 1
    x = TL.solve_triangular(t, b.unsqueeze(-1) if vector else b, upper=upper,
                            unitriangular=bool(unit_diagonal))
    return x[..., 0] if vector else x


def _cho_solve(c_and_lower, b):
    c, lower = c_and_lower
    c, b = _pair(c, b)
    vector = b.ndim == 1
    x = torch.cholesky_solve(b.unsqueeze(-1) if vector else b, torch.tril(c) if lower else torch.triu(c),
                             upper=not lower)
    return x[..., 0] if vector else x


def _lu(a, permute_l=False, p_indices=False):
    p, low, up = TL.lu(a)
    if permute_l:
        return p @ low, up
    if p_indices:
        return p.argmax(-1), low, up
    return p, low, up


class _ScipyMatrixFunction(torch.autograd.Function):
    """logm or sqrtm (torch has neither): values from scipy on the host, the derivative by the block
    formula of nn's rule, itself through this Function, so it differentiates again."""

    @staticmethod
    def forward(ctx, a, name):
        from apsi_layers.nn.numlib.matrix_functions import RAW_FUNCTIONS

        ctx.name = name
        ctx.save_for_backward(a)
        out = RAW_FUNCTIONS[name](a.detach().cpu().double().numpy())
        return torch.as_tensor(out, dtype=a.dtype, device=a.device)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        from apsi_layers.nn.numlib.matrix_functions import singular

        host = a.detach().cpu().double().numpy().reshape(-1, n, n)
        if ctx.name == "sqrtm" and any(singular(m) for m in host):
            raise ApsiError("sqrtm: the derivative is unbounded at a singular matrix (on the torch "
                            "backend); keep its eigenvalues away from 0")
        at = a.transpose(-1, -2)
        block = torch.cat([torch.cat([at, g], -1), torch.cat([torch.zeros_like(at), at], -1)], -2)
        return _ScipyMatrixFunction.apply(block, ctx.name)[..., :n, n:], None


def _eig(a):
    w, v = TL.eig(a)
    if (w.imag != 0).any():
        i = int(torch.nonzero(w.imag.reshape(-1) != 0)[0]) % a.shape[-1]
        raise ApsiError(f"eig: eigenvalue {i} is complex: nn tensors are real, so eig takes only "
                        "matrices whose eigenvalues are all real (on the torch backend)")
    return w.real, v.real


MORE_IMPLS = {
    "diagonal": lambda a, offset=0, axis1=0, axis2=1: torch.diagonal(a, offset, axis1, axis2),
    "swapaxes": lambda a, axis1, axis2: torch.swapaxes(a, axis1, axis2),
    "cross": _cross, "multi_dot": _multi_dot, "svdvals": spectral_fns.svdvals, "matrix_rank": _matrix_rank,
    "solve_triangular": _errors(_solve_triangular, "solve_triangular"),
    "cho_solve": _errors(_cho_solve, "cho_solve"), "lu": _lu, "expm": TL.matrix_exp,
    "logm": lambda A: _ScipyMatrixFunction.apply(A, "logm"),
    "sqrtm": lambda A: _ScipyMatrixFunction.apply(A, "sqrtm"),
    "eig": _eig, "eigvals": lambda a: _eig(a)[0],
}
