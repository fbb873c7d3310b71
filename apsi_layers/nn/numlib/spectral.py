"""Functions of eigenvalues or singular values alone (eigvalsh, svdvals): ops of their own, so their
derivatives never pass through the eigenvector derivative, which divides by eigenvalue gaps.

First order: d f(w(A)) = V diag(g) V^T (U diag(g) V^T for singular values), defined at repeated
values too. Second order (hessian, grad of grad): the gradient above is recorded as one more op,
`spectral_vjp`, whose derivative in A is the Daleckii-Krein / Lewis-Sendov formula: between two
values the divided difference (g_i - g_j) / (w_i - w_j), and where they are equal its limit,
J_ii - J_ij with J = dg/dw taken from the tape (Lewis & Sendov, "Twice differentiable spectral
functions", SIAM J. Matrix Anal. Appl. 23 (2001)). That limit exists only when g is symmetric in
the equal values (g_i == g_j, as for any function of the spectrum as a set, such as
sum(eigvalsh(a) ** 2)); otherwise the second derivative does not exist and the rule says so.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.ops import apply
from .linalg_vjps import GAP_RTOL, values

# --- helpers on raw arrays ---------------------------------------------------------------------------


def _t(x):
    return np.swapaxes(x, -1, -2)


def _close(w):
    """close[..., i, j]: w_i and w_j equal to GAP_RTOL relative, i != j."""
    n = w.shape[-1]
    scale = np.max(np.abs(w), axis=-1, keepdims=True)[..., None] if w.size else 1.0
    diff = np.abs(w[..., :, None] - w[..., None, :])
    return (diff <= GAP_RTOL * np.maximum(scale, 1e-300)) & ~np.eye(n, dtype=bool)


def _tape_jacobian(g, w, pairs):
    """J[..., i, j] = d g[..., i] / d w[..., j] for the rows i that `pairs` needs, from the tape (0
    where g does not depend on w). g and w are tensors; a reverse pass per needed row."""
    from ..autograd.autodiff import _backward_raw
    from ..autograd.tape import STATE

    jac = np.zeros(w.shape + w.shape[-1:])
    tape = STATE.tape
    if tape is None or g.tape is not tape or w.tape is not tape or g.node <= w.node:
        return jac
    rows = {idx[:-1] for idx in zip(*np.nonzero(pairs))}
    for row in sorted(rows):
        seed = np.zeros(g.shape)
        seed[row] = 1.0
        grads = _backward_raw(tape.entries, g.node, seed, w.node, w.node + 1)
        if grads[0] is not None:
            jac[row[:-1] + (row[-1],)] = np.broadcast_to(grads[0], w.shape)[row[:-1]]
    return jac


def _limit(jac, plus):
    """The divided difference's limit at equal values: sym(J_ii - J_ij) (or + for sums)."""
    d = np.diagonal(jac, axis1=-2, axis2=-1)
    sign = 1.0 if plus else -1.0
    return 0.5 * (d[..., :, None] + d[..., None, :]) + sign * 0.5 * (jac + _t(jac))


def _divided(g, w, close, jac, plus, fn):
    """D[i, j] = (g_i -+ g_j) / (w_i -+ w_j) off the diagonal; its limit where close; 0 on it."""
    n = w.shape[-1]
    gi, gj = g[..., :, None], g[..., None, :]
    num = gi + gj if plus else gi - gj
    den = w[..., :, None] + w[..., None, :] if plus else w[..., :, None] - w[..., None, :]
    off = ~np.eye(n, dtype=bool)
    bad = close & (np.abs(num) > 1e-8 * max(np.max(np.abs(g), initial=0.0), 1e-300))
    if np.any(bad):
        i, j = (int(v) for v in np.argwhere(bad)[0][-2:])
        raise ApsiError(f"{fn}: the second derivative is undefined here: values {i} and {j} are "
                        f"{'both 0' if plus else 'equal'} but the function's slopes in them differ, "
                        "so it is not smooth there (e.g. the largest value alone, or a norm at 0); a "
                        "function of the values as a set, such as sum(f(values)), is")
    safe = np.where(off & ~close, den, 1.0)
    out = np.where(off & ~close, num / safe, 0.0)
    return np.where(close, _limit(jac, plus), out) if np.any(close) else out


# --- eigvalsh ----------------------------------------------------------------------------------------

def eigvalsh_op(sym):
    """The eigenvalues of the symmetric tensor `sym` (already mirrored), ascending, as one op."""
    return apply("eigvalsh", _eigvalsh_fwd, (sym,), {})


def _eigvalsh_fwd(d):
    from .lapack import _linalg_call

    return _linalg_call("eigvalsh", np.linalg.eigvalsh, d)


def _eigvalsh_grad(xp, g, ans, a):
    w, v = np.linalg.eigh(values(a))
    if not xp.recording:
        return np.matmul(v * g[..., None, :], _t(v))
    gd = values(g)
    close = _close(w)
    jac = _tape_jacobian(g, ans, close) if np.any(close) else None
    d = _divided(gd, w, close, jac, False, "eigvalsh")
    return apply("spectral_vjp", _sym_fwd, (a, g), {"v": v, "d": d})


def _sym_fwd(a, g, v=None, d=None):
    return np.matmul(v * g[..., None, :], _t(v))


def _sym_vjp_a(xp, h, ans, a, g, v=None, d=None):
    # dG = V (D o V^T dA V) V^T for symmetric dA; its adjoint, symmetrized
    k = _mm(xp, _t_const(v), h, v)
    k = 0.5 * (k + xp.swap_last(k))
    return _mm(xp, v, k * d, _t_const(v))


def _sym_vjp_g(xp, h, ans, a, g, v=None, d=None):
    k = _mm(xp, _t_const(v), h, v)
    return xp.sum(k * np.eye(v.shape[-1]), axis=-1)


# --- svdvals -----------------------------------------------------------------------------------------

def svdvals_op(a):
    """The singular values of a, descending, as one op."""
    return apply("svdvals", _svdvals_fwd, (a,), {})


def _svdvals_fwd(d):
    from .lapack import _linalg_call

    return _linalg_call("svd", lambda x: np.linalg.svd(x, compute_uv=False), d)


def _svdvals_grad(xp, g, ans, a):
    u, s, vh = np.linalg.svd(values(a), full_matrices=False)
    if not xp.recording:
        return np.matmul(u * g[..., None, :], vh)
    gd = values(g)
    minus, plus = _close(s), _both_zero(s)
    m, n = values(a).shape[-2:]
    zero = s <= GAP_RTOL * np.maximum(np.max(s, axis=-1, keepdims=True), 1e-300)
    need = minus | plus | (np.eye(s.shape[-1], dtype=bool) & zero[..., None] & (m != n))
    jac = _tape_jacobian(g, ans, need) if np.any(need) else np.zeros(s.shape + s.shape[-1:])
    p = _divided(gd, s, minus, jac, False, "svd")
    q = _divided(gd, s, plus & ~np.eye(s.shape[-1], dtype=bool), jac, True, "svd")
    over = _over_s(gd, s, zero, jac) if m != n else None
    return apply("spectral_vjp_svd", _svd_fwd, (a, g), {"u": u, "vh": vh, "p": p, "q": q, "over": over})


def _both_zero(s):
    z = s <= GAP_RTOL * np.maximum(np.max(s, axis=-1, keepdims=True), 1e-300)
    return z[..., :, None] & z[..., None, :] & ~np.eye(s.shape[-1], dtype=bool)


def _over_s(g, s, zero, jac):
    """g_i / s_i, and its limit J_ii where s_i = 0 (which needs g_i = 0 there)."""
    if np.any(zero & (np.abs(g) > 1e-8 * max(np.max(np.abs(g), initial=0.0), 1e-300))):
        raise ApsiError("svd: the second derivative is undefined here: a singular value of this "
                        "non-square matrix is 0 and the function's slope in it is not (e.g. the "
                        "nuclear norm at a rank-deficient matrix)")
    return np.where(zero, np.diagonal(jac, axis1=-2, axis2=-1), g / np.where(zero, 1.0, s))


def _svd_fwd(a, g, u=None, vh=None, p=None, q=None, over=None):
    return np.matmul(u * g[..., None, :], vh)


def _svd_vjp_a(xp, h, ans, a, g, u=None, vh=None, p=None, q=None, over=None):
    # U^T dG V = P o sym(C) + Q o skew(C) with C = U^T dA V, plus, for a tall a,
    # (I - U U^T) dA V diag(g / s) (a wide a: the mirror image); the adjoint term by term
    k = _mm(xp, _t_const(u), h, _t_const(vh))
    kt = xp.swap_last(k)
    cbar = 0.5 * (p * (k + kt)) + 0.5 * (q * (k - kt))
    out = _mm(xp, u, cbar, vh)
    m, n = u.shape[-2], vh.shape[-1]
    if m > n:
        rest = h - _mm(xp, u, _t_const(u), h)
        out = out + _mm(xp, _mm(xp, rest, _t_const(vh)) * over[..., None, :], vh)
    elif m < n:
        rest = h - _mm(xp, h, _t_const(vh), vh)
        out = out + _mm(xp, u * over[..., None, :], _t_const(u), rest)
    return out


def _svd_vjp_g(xp, h, ans, a, g, u=None, vh=None, p=None, q=None, over=None):
    k = _mm(xp, _t_const(u), h, _t_const(vh))
    return xp.sum(k * np.eye(u.shape[-1]), axis=-1)


def _mm(xp, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = xp.matmul(out, x)
    return out


def _t_const(x):
    return np.swapaxes(x, -1, -2)


def _third_order(rule):
    """The recorded gradients hold the eigen/singular vectors as constants: right for the hessian,
    not for a third derivative, which is refused by name."""
    rule.first_order_only = True
    return rule


SPECTRAL_RULES = {
    "eigvalsh": (_eigvalsh_grad,),
    "svdvals": (_svdvals_grad,),
    "spectral_vjp": (_third_order(_sym_vjp_a), _third_order(_sym_vjp_g)),
    "spectral_vjp_svd": (_third_order(_svd_vjp_a), _third_order(_svd_vjp_g)),
}


def _register():
    from ..autograd.vjps import RULES, register_name

    RULES.update(SPECTRAL_RULES)
    for name, rules in SPECTRAL_RULES.items():
        register_name(name, rules)


_register()
