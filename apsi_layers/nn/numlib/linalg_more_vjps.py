"""Gradient rules of linalg_more.py's ops (the same contract as vjps.py: one rule serves the RAW and
the GRAPH pass, so each differentiates again)."""

import numpy as np

from apsi_lang.errors import ApsiError

from .linalg_vjps import _gap_inverse, _is_zero, _solve_a, _solve_b, _t, unpack, values
from .matrix_functions import RAW_FUNCTIONS, singular


def _triangular_a(xp, g, ans, t, b, lower=False):
    return _solve_a(xp, g, ans, t, b)


def _triangular_b(xp, g, ans, t, b, lower=False):
    return _solve_b(xp, g, ans, t, b)


def _lu_grad(xp, g, ans, a):
    # a = P L U: L^-1 P^T dA U^-1 = X, dL = L tril(X, -1), dU = triu(X) U; the adjoint is
    # P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
    m, n = values(a).shape[-2:]
    if m != n:
        raise ApsiError(f"lu: the gradient of L and U is computed for a square matrix; a is {m}x{n} "
                        "(use qr for a non-square one)")
    low, up = unpack(xp, ans, [(n, n), (n, n)])
    gl, gu = unpack(xp, g, [(n, n), (n, n)])
    d = np.abs(np.diagonal(values(up)))
    if d.size and d.min() <= 1e-12 * max(d.max(), 1e-300):
        raise ApsiError("lu: the gradient is undefined here: U has a zero on its diagonal (a is singular)")
    from scipy.linalg import lu as scipy_lu

    perm = scipy_lu(values(a), check_finite=False)[0]
    inner = (xp.matmul(_t(xp, low), gl) * np.tril(np.ones((n, n)), -1)
             + xp.matmul(gu, _t(xp, up)) * np.triu(np.ones((n, n))))
    left = xp.solve(_t(xp, low), inner)                       # L^-T X
    return xp.matmul(perm, _t(xp, xp.solve(up, _t(xp, left))))     # (.) U^-T


def _block_rule(name):
    """d f(A)^T [G] for a matrix function f with real coefficients: the upper-right block of
    f([[A^T, G], [0, A^T]]) (Higham, "Functions of Matrices", SIAM 2008, thm 3.6 and 3.8)."""
    def rule(xp, g, ans, a):
        n = values(a).shape[-1]
        if name == "sqrtm" and any(singular(m) for m in values(a).reshape(-1, n, n)):
            raise ApsiError("sqrtm: the derivative is unbounded at a singular matrix (the square root's "
                            "slope at an eigenvalue 0 is infinite); keep its eigenvalues away from 0")
        at = _t(xp, a)
        zero = np.zeros(values(a).shape)
        if xp.recording:
            from ..autograd import shape
            from ..autograd.ops import apply

            block = shape.concat([shape.concat([at, g], -1), shape.concat([zero, at], -1)], -2)
            full = apply(name, RAW_FUNCTIONS[name], (block,), {})      # the op itself, recorded again
            return shape.getitem(full, (Ellipsis, slice(0, n), slice(n, 2 * n)))
        block = np.concatenate([np.concatenate([at, g], -1), np.concatenate([zero, at], -1)], -2)
        return RAW_FUNCTIONS[name](block)[..., :n, n:]
    return rule


def _eig_grad(xp, g, ans, a):
    # torch's linalg_eig_backward for real eigenpairs (unit columns):
    # gA = V^-T (diag(gw) + F o (V^T gV - V^T V diag(diag(V^T gV)))) V^T, F_ij = 1 / (w_j - w_i)
    n = values(a).shape[-1]
    w, v = unpack(xp, ans, [(n,), (n, n)])
    gw, gv = unpack(xp, g, [(n,), (n, n)])
    inner = xp.expand_dims(gw, -1) * np.eye(n)
    if not _is_zero(gv):
        vtgv = xp.matmul(_t(xp, v), gv)
        vtv = xp.matmul(_t(xp, v), v)
        diag = xp.sum(vtgv * np.eye(n), axis=-1)
        inner = inner + _gap_inverse(xp, w, "eig", "eigenvalues") * (vtgv - vtv * xp.expand_dims(diag, -2))
    return xp.matmul(_t(xp, xp.inv(v)), xp.matmul(inner, _t(xp, v)))


MORE_RULES = {
    "solve_triangular": (_triangular_a, _triangular_b),
    "lu": (_lu_grad,),
    "expm": (_block_rule("expm"),),
    "logm": (_block_rule("logm"),),
    "sqrtm": (_block_rule("sqrtm"),),
    "eig": (_eig_grad,),
}
