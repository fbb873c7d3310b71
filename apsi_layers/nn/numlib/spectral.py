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

Third order: spectral_vjp's own rules, when recorded (a GRAPH pass), rebuild V and D from tensors
recorded from A and g (eigh's eigenvectors, the divided differences of the recorded g and w), whose
derivatives exist at distinct values, so a third (or higher) derivative is exact there; at repeated
values D holds a limit read off the tape as a constant, and a third derivative is refused by name.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.ops import apply
from .factor_vectors import eigh_vectors, svd_vectors
from .linalg_vjps import GAP_RTOL, values

# --- helpers on raw arrays ---------------------------------------------------------------------------


def _t(x):
    return np.swapaxes(x, -1, -2)


def close_pairs(w):
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
    close = close_pairs(w)
    jac = _tape_jacobian(g, ans, close) if np.any(close) else None
    d = eigvalsh_divided(values(g), w, close, jac)
    return apply("spectral_vjp", _sym_fwd, (a, g), {"v": v, "d": d})


def eigvalsh_divided(g, w, close, jac):
    """Daleckii-Krein's D for eigvalsh's second derivative (ndarrays; jac = dg/dw where close)."""
    return _divided(g, w, close, jac, False, "eigvalsh")


def _sym_fwd(a, g, v=None, d=None):
    return np.matmul(v * g[..., None, :], _t(v))


def _sym_vjp_a(xp, h, ans, a, g, v=None, d=None):
    # dG = V (D o V^T dA V) V^T for symmetric dA; its adjoint, symmetrized
    v, vt, d = _recorded_eig(xp, a, g) if xp.recording else (v, _t(v), d)
    k = _mm(xp, vt, h, v)
    k = 0.5 * (k + xp.swap_last(k))
    return _mm(xp, v, k * d, vt)


def _sym_vjp_g(xp, h, ans, a, g, v=None, d=None):
    v, vt, _ = _recorded_eig(xp, a, g) if xp.recording else (v, _t(v), d)
    k = _mm(xp, vt, h, v)
    return xp.sum(k * np.eye(values(v).shape[-1]), axis=-1)


def _recorded_eig(xp, a, g):
    """V, V^T and D as tensors recorded from a and g, for a third derivative: at distinct values
    each has its derivative (the eigenvectors', the divided differences'); at repeated ones the
    limit D holds is not differentiated, so that is refused by name."""

    w = eigvalsh_op(a)
    if np.any(close_pairs(values(w))):
        raise ApsiError(THIRD_ORDER.format(fn="eigvalsh", vectors="eigenvectors"))
    v = eigh_vectors(a)
    return v, xp.swap_last(v), _recorded_divided(xp, g, w, False)


def _recorded_divided(xp, g, w, plus):
    """(g_i -+ g_j) / (w_i -+ w_j) off the diagonal, 0 on it, as recorded tensors (no two w close)."""
    off = ~np.eye(values(w).shape[-1], dtype=bool)
    gi, gj = xp.expand_dims(g, -1), xp.expand_dims(g, -2)
    wi, wj = xp.expand_dims(w, -1), xp.expand_dims(w, -2)
    num, den = (gi + gj, wi + wj) if plus else (gi - gj, wi - wj)
    return xp.where(off, num / xp.where(off, den, 1.0), 0.0)


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
    m, n = values(a).shape[-2:]
    need = svd_needs(s, m, n)
    jac = _tape_jacobian(g, ans, need) if np.any(need) else np.zeros(s.shape + s.shape[-1:])
    p, q, over = svd_coefficients(values(g), s, m, n, jac)
    return apply("spectral_vjp_svd", _svd_fwd, (a, g), {"u": u, "vh": vh, "p": p, "q": q, "over": over})


def svd_needs(s, m, n):
    """Where the second derivative needs dg/ds (equal values, pairs of zeros, a zero value of a
    non-square matrix); nowhere means the singular vectors' own derivative is defined."""
    minus, plus = close_pairs(s), _both_zero(s)
    return minus | plus | (np.eye(s.shape[-1], dtype=bool) & _zero(s)[..., None] & (m != n))


def svd_coefficients(g, s, m, n, jac):
    """(P, Q, g/s) of svdvals' second derivative (ndarrays; jac = dg/ds where svd_needs says)."""
    minus, plus = close_pairs(s), _both_zero(s)
    p = _divided(g, s, minus, jac, False, "svd")
    q = _divided(g, s, plus & ~np.eye(s.shape[-1], dtype=bool), jac, True, "svd")
    return p, q, (_over_s(g, s, _zero(s), jac) if m != n else None)


def _zero(s):
    return s <= GAP_RTOL * np.maximum(np.max(s, axis=-1, keepdims=True), 1e-300)


def _both_zero(s):
    z = _zero(s)
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
    u, ut, vh, v, p, q, over = (_recorded_svd(xp, a, g) if xp.recording
                                else (u, _t(u), vh, _t(vh), p, q, over))
    k = _mm(xp, ut, h, v)
    kt = xp.swap_last(k)
    cbar = 0.5 * (p * (k + kt)) + 0.5 * (q * (k - kt))
    out = _mm(xp, u, cbar, vh)
    m, n = values(u).shape[-2], values(vh).shape[-1]
    if m > n:
        rest = h - _mm(xp, u, ut, h)
        out = out + _mm(xp, _mm(xp, rest, v) * xp.expand_dims(over, -2), vh)
    elif m < n:
        rest = h - _mm(xp, h, v, vh)
        out = out + _mm(xp, u * xp.expand_dims(over, -2), ut, rest)
    return out


def _svd_vjp_g(xp, h, ans, a, g, u=None, vh=None, p=None, q=None, over=None):
    u, ut, vh, v = (_recorded_svd(xp, a, g) if xp.recording else (u, _t(u), vh, _t(vh)))[:4]
    k = _mm(xp, ut, h, v)
    return xp.sum(k * np.eye(values(u).shape[-1]), axis=-1)


def _recorded_svd(xp, a, g):
    """U, U^T, Vh, V, P, Q and g/s recorded from a and g (as _recorded_eig), at distinct nonzero
    singular values; elsewhere a third derivative is refused by name."""

    s = svdvals_op(a)
    m, n = values(a).shape[-2:]
    if np.any(svd_needs(values(s), m, n)):
        raise ApsiError(THIRD_ORDER.format(fn="svdvals", vectors="singular vectors"))
    u, vh = svd_vectors(a)
    over = g / s if m != n else None
    return (u, xp.swap_last(u), vh, xp.swap_last(vh), _recorded_divided(xp, g, s, False),
            _recorded_divided(xp, g, s, True), over)


def _mm(xp, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = xp.matmul(out, x)
    return out


THIRD_ORDER = ("{fn}: a third derivative at repeated (or, for svdvals, zero) values is not "
               "computed: the hessian there holds the {vectors} as constants, which is exact for it "
               "but not for the next order. Differentiate three times at a point whose values are "
               "distinct, or write the function without the spectrum (sum(eigvalsh(a) ** 2) is "
               "sum(a * a))")


SPECTRAL_RULES = {
    "eigvalsh": (_eigvalsh_grad,),
    "svdvals": (_svdvals_grad,),
    "spectral_vjp": (_sym_vjp_a, _sym_vjp_g),
    "spectral_vjp_svd": (_svd_vjp_a, _svd_vjp_g),
}


def _register():
    from ..autograd.vjps import RULES, register_name

    RULES.update(SPECTRAL_RULES)
    for name, rules in SPECTRAL_RULES.items():
        register_name(name, rules)


_register()
