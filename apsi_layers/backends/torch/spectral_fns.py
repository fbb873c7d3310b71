"""eigvalsh and svdvals on torch tensors, differentiable at repeated values to the second order.

torch's own eigvalsh/svdvals backward is V diag(g) V^T, right at first order, but its double
backward goes through the eigenvectors' derivative, which divides by eigenvalue gaps: the hessian
of sum(eigvalsh(a) ** 2) at 2 * eye(2) comes out NaN. These Functions keep that first order and,
under create_graph, record the gradient as one more Function whose backward is the Daleckii-Krein
formula nn/numlib/spectral.py uses on the NumPy backend (the same coefficients, computed there: exact
divided differences, and their limits at repeated values). That Function's own backward, asked for
a third derivative, rebuilds V and D from recorded tensors at distinct values (exact at every
order) and refuses at repeated ones by name, as on NumPy.
"""

import numpy as np
import torch

from apsi_lang.errors import ApsiError
from apsi_layers.nn.numlib import spectral

TL = torch.linalg


def _np(x):
    return x.detach().cpu().numpy()


def _like(arr, ref):
    return None if arr is None else torch.as_tensor(arr, dtype=ref.dtype, device=ref.device)


def _jacobian(g, w, need):
    """J[..., i, j] = d g[..., i] / d w[..., j] for the rows `need` asks for, from torch's graph (g is
    the incoming gradient; under create_graph it depends on w through the function after it)."""
    jac = np.zeros(tuple(w.shape) + tuple(w.shape[-1:]))
    if not g.requires_grad or not need.any():
        return jac
    for row in sorted({idx[:-1] for idx in zip(*np.nonzero(need), strict=True)}):
        (gw,) = torch.autograd.grad(g[row], w, retain_graph=True, allow_unused=True)
        if gw is not None:
            jac[row] = _np(gw)[row[:-1]]
    return jac


class _Refused(torch.autograd.Function):
    """x, whose derivative in x and in `inputs` (what x was computed from, as constants) is refused
    with `message`: a recorded gradient that is right as a value but whose next derivative is not
    computed (raised only if something asks for it)."""

    @staticmethod
    def forward(ctx, message, x, *inputs):
        ctx.message = message
        return x.clone()

    @staticmethod
    def backward(ctx, h):
        raise ApsiError(ctx.message)


def _guard(grads, fn, vectors):
    message = spectral.THIRD_ORDER.format(fn=fn, vectors=vectors)
    return tuple(_Refused.apply(message, x) for x in grads)


def _second_order(vjp, value, coefficients, inputs):
    """vjp(coefficients) where Daleckii-Krein's coefficients exist, else `value` with its
    derivative in `inputs` refused by their message (raised only when a derivative asks)."""
    try:
        return vjp(*coefficients())
    except ApsiError as e:
        return _Refused.apply(f"{e.message}; a third derivative at repeated values stops here too "
                              "(it is not computed)", value, *inputs)


def _divided(g, w, plus):
    """(g_i -+ g_j) / (w_i -+ w_j) off the diagonal, 0 on it, recorded (no two w close)."""
    off = ~torch.eye(w.shape[-1], dtype=torch.bool, device=w.device)
    gi, gj, wi, wj = g.unsqueeze(-1), g.unsqueeze(-2), w.unsqueeze(-1), w.unsqueeze(-2)
    num, den = (gi + gj, wi + wj) if plus else (gi - gj, wi - wj)
    return torch.where(off, num / torch.where(off, den, torch.ones_like(den)), torch.zeros_like(num))


class _SymVjp(torch.autograd.Function):
    """G = V diag(g) V^T, with V and Daleckii-Krein's D held for the hessian."""

    @staticmethod
    def forward(ctx, a, g, v, d, uplo):
        ctx.uplo = uplo
        ctx.save_for_backward(a, g, v, d)
        return (v * g.unsqueeze(-2)) @ v.mT

    @staticmethod
    def backward(ctx, h):
        a, g, v, d = ctx.saved_tensors
        repeated = False
        if torch.is_grad_enabled():
            # toward a third derivative: V and D recorded from a and g (exact at distinct values)
            w = Eigvalsh.apply(a, ctx.uplo, None)
            repeated = bool(spectral.close_pairs(_np(w)).any())
            if not repeated:
                v, d = TL.eigh(a, UPLO=ctx.uplo)[1], _divided(g, w, False)
        k = v.mT @ h @ v
        grads = (v @ (0.5 * (k + k.mT) * d) @ v.mT, torch.diagonal(k, dim1=-2, dim2=-1))
        return (*(_guard(grads, "eigvalsh", "eigenvectors") if repeated else grads), None, None, None)


class Eigvalsh(torch.autograd.Function):
    """The eigenvalues; `known` is (w, V) when the caller has them already (eigh)."""

    @staticmethod
    def forward(ctx, a, uplo, known):
        if known is not None:
            w, v = known
        elif ctx.needs_input_grad[0]:
            w, v = TL.eigh(a, UPLO=uplo)        # V for the backward: one decomposition
        else:
            w, v = TL.eigvalsh(a, UPLO=uplo), None
        ctx.uplo = uplo
        w = w.clone()             # the output itself is saved: dg/dw is read through it (_jacobian)
        ctx.save_for_backward(a, w, v)
        return w

    @staticmethod
    def backward(ctx, g):
        a, w, v = ctx.saved_tensors
        value = (v * g.unsqueeze(-2)) @ v.mT
        if not torch.is_grad_enabled():
            return value, None, None           # first order (defined at repeated values too)
        close = spectral.close_pairs(_np(w))
        return _second_order(
            lambda d: _SymVjp.apply(a, g, v, _like(d, a), ctx.uplo), value,
            lambda: (spectral.eigvalsh_divided(_np(g), _np(w), close, _jacobian(g, w, close)),),
            (a, g)), None, None


class _SvdVjp(torch.autograd.Function):
    """G = U diag(g) Vh, with U, Vh and the coefficients P, Q, g/s held for the hessian."""

    @staticmethod
    def forward(ctx, a, g, u, vh, p, q, over):
        ctx.save_for_backward(a, g, u, vh, p, q, over)
        return (u * g.unsqueeze(-2)) @ vh

    @staticmethod
    def backward(ctx, h):
        # U^T dG V = P o sym(C) + Q o skew(C), C = U^T dA V, plus the complement's term for a
        # non-square a (nn/numlib/spectral.py's _svd_vjp_a, term by term)
        a, g, u, vh, p, q, over = ctx.saved_tensors
        m, n = a.shape[-2:]
        repeated = False
        if torch.is_grad_enabled():
            s = Svdvals.apply(a, None)                    # toward a third derivative, as _SymVjp
            repeated = bool(spectral.svd_needs(_np(s), m, n).any())
            if not repeated:
                u, _, vh = TL.svd(a, full_matrices=False)
                p, q, over = _divided(g, s, False), _divided(g, s, True), (g / s if m != n else None)
        k = u.mT @ h @ vh.mT
        kt = k.mT
        grad_a = u @ (0.5 * (p * (k + kt)) + 0.5 * (q * (k - kt))) @ vh
        if m > n:
            grad_a = grad_a + ((h - u @ (u.mT @ h)) @ vh.mT * over.unsqueeze(-2)) @ vh
        elif m < n:
            grad_a = grad_a + (u * over.unsqueeze(-2)) @ u.mT @ (h - (h @ vh.mT) @ vh)
        grads = (grad_a, torch.diagonal(k, dim1=-2, dim2=-1))
        return (*(_guard(grads, "svdvals", "singular vectors") if repeated else grads),
                None, None, None, None, None)


class Svdvals(torch.autograd.Function):
    """The singular values; `known` is the reduced (U, S, Vh) when the caller has them (svd)."""

    @staticmethod
    def forward(ctx, a, known):
        if known is not None:
            u, s, vh = known
        elif ctx.needs_input_grad[0]:
            u, s, vh = TL.svd(a, full_matrices=False)
        else:
            u, s, vh = None, TL.svdvals(a), None
        s = s.clone()
        ctx.save_for_backward(a, s, u, vh)
        return s

    @staticmethod
    def backward(ctx, g):
        a, s, u, vh = ctx.saved_tensors
        value = (u * g.unsqueeze(-2)) @ vh
        if not torch.is_grad_enabled():
            return value, None
        m, n = a.shape[-2:]
        need = spectral.svd_needs(_np(s), m, n)
        return _second_order(
            lambda p, q, over: _SvdVjp.apply(a, g, u, vh, _like(p, a), _like(q, a), _like(over, a)),
            value, lambda: spectral.svd_coefficients(_np(g), _np(s), m, n, _jacobian(g, s, need)),
            (a, g)), None


def eigvalsh(a, UPLO="L"):  # noqa: N803  (NumPy's argument name)
    return Eigvalsh.apply(a, UPLO, None)


def svdvals(a):
    return Svdvals.apply(a, None)


def eigh(a, UPLO="L"):  # noqa: N803
    """(w, V): V torch's (its derivative at distinct values), w the Function above's."""
    w, v = TL.eigh(a, UPLO=UPLO)
    return Eigvalsh.apply(a, UPLO, (w.detach(), v.detach())), v


def svd(a, full_matrices=True):
    """(U, S, Vh): U, Vh torch's, S the Function above's (from the same decomposition)."""
    u, s, vh = TL.svd(a, full_matrices=bool(full_matrices))
    k = s.shape[-1]
    reduced = (u[..., :k].detach(), s.detach(), vh[..., :k, :].detach())
    return u, Svdvals.apply(a, reduced), vh
