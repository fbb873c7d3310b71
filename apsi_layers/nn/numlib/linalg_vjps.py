"""Gradient rules of the linear-algebra ops (appended to vjps.RULES).

Same contract as vjps.py: `rule(xp, g, ans, *args, **params)`, written only with operators and `xp.*`
so the RAW pass (ndarrays) and the GRAPH pass (recorded tensors, for hessians) share one rule.

Decompositions with several outputs (qr, eigh, svd) are ONE op whose output packs every factor,
flattened and joined along the last axis; the public functions slice the factors back out with
getitem/reshape (both differentiable). So each factor is its own tensor on the tape, and the rule
receives the cotangents of all factors at once, which is what their joint formulas need.

Where a derivative does not exist (eigenvectors at repeated eigenvalues, log|det| of a singular
matrix) the rule raises an ApsiError naming the op, instead of returning NaN or inf; where it exists
at a degenerate point (det of a singular matrix: the cofactors) the rule computes it.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import Tensor

# Eigenvalues/singular values closer than this (relative to the largest) count as repeated: their
# eigenvector derivatives divide by the gap, so the gradient would be noise or inf.
GAP_RTOL = 1e-10
MAX_EINSUM_OPERANDS = 32


def values(x):
    """The ndarray behind a RAW array or a GRAPH tensor (for checks and constants only)."""
    return x.data if type(x) is Tensor else x


def pack(parts):
    """Factors given as (array, how many trailing axes are the factor's own), flattened and joined
    along one last axis: (..., size_0 + size_1 + ...)."""
    return np.concatenate([a.reshape(a.shape[:a.ndim - nd] + (-1,)) for a, nd in parts], axis=-1)


def unpack(xp, packed, shapes):
    """The factors of `packed` back, as (..., *shape) for each shape in `shapes`."""
    out, start = [], 0
    lead = tuple(values(packed).shape[:-1])
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        part = xp.getitem(packed, (Ellipsis, slice(start, start + size)))
        out.append(xp.reshape(part, lead + tuple(shape)))
        start += size
    return out


def _t(xp, x):
    return xp.swap_last(x)


def _mm(xp, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = xp.matmul(out, x)
    return out


def _diag_embed(xp, v):
    """(..., n) -> (..., n, n) with v on the diagonal (v times a constant identity)."""
    n = values(v).shape[-1]
    return xp.expand_dims(v, -1) * np.eye(n)


def _is_zero(g):
    return not np.any(values(g))


def _sym(xp, x):
    return 0.5 * (x + _t(xp, x))


def _scalar_grad(xp, g):
    return xp.expand_dims(xp.expand_dims(g, -1), -1)


# --- inverse, solve, determinants -----------------------------------------------------------------

def _inv_grad(xp, g, ans, a):
    at = _t(xp, ans)
    return -_mm(xp, at, g, at)


def _solve_a(xp, g, ans, a, b):
    gb = xp.solve(_t(xp, a), g)
    return xp.sum_to(-xp.matmul(gb, _t(xp, ans)), values(a).shape)


def _solve_b(xp, g, ans, a, b):
    return xp.sum_to(xp.solve(_t(xp, a), g), values(b).shape)


def _det_grad(xp, g, ans, a):
    # The cofactor matrix (the adjugate transposed): det(a) inv(a)^T where a is well conditioned,
    # and from the SVD or the minors where it is (nearly) singular, where the derivative still
    # exists (torch gives the same).
    inverse = _well_conditioned_inverse(values(a))
    if inverse is not None:
        inverse = xp.inv(a) if xp.recording else inverse
        return _scalar_grad(xp, g * ans) * _t(xp, inverse)
    return _scalar_grad(xp, g) * (_cofactor_minors(xp, a) if xp.recording else _cofactor_svd(values(a)))


def _well_conditioned_inverse(a):
    """inv(a), or None where a matrix is singular or its reciprocal condition number (1-norm) is
    under 1e-8, where det(a) inv(a) would lose digits."""
    try:
        inverse = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return None
    size = np.max(np.sum(np.abs(a), axis=-2), axis=-1) * np.max(np.sum(np.abs(inverse), axis=-2), axis=-1)
    if not np.all(np.isfinite(size)) or np.any(size * 1e-8 >= 1.0):
        return None
    return inverse


def _cofactor_svd(a):
    # a = U S V^T: cof(a) = det(U) det(V) U diag(prod_{j != i} s_j) V^T, finite at any rank
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], axis=-1)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return sign[..., None, None] * np.matmul(u * others[..., None, :], vh)


def _cofactor_minors(xp, a):
    """cof(a)[i, j] = (-1)^(i+j) det(a without row i and column j), as recorded ops: the path that
    differentiates again at a singular a (n^2 determinants of size n-1)."""
    n = values(a).shape[-1]
    if n == 1:
        return 0.0 * a + 1.0
    keep = [np.delete(np.arange(n), i) for i in range(n)]
    rows = []
    for i in range(n):
        row = [(-1.0) ** (i + j) * xp.det(xp.getitem(a, (Ellipsis, keep[i][:, None], keep[j][None, :])))
               for j in range(n)]
        rows.append(xp.stack(row, -1))
    return xp.stack(rows, -2)


def _logabsdet_grad(xp, g, ans, a):
    _check_nonsingular(np.isfinite(values(ans)), "slogdet")
    return _scalar_grad(xp, g) * _t(xp, xp.inv(a))


def _check_nonsingular(ok, fn):
    if not np.all(ok):
        raise ApsiError(f"{fn}: the gradient is computed through inv(a), and a is singular here "
                        f"(its determinant is 0); keep a invertible, e.g. add a small multiple of eye(n)")


def _pinv_grad(xp, g, ans, a):
    # The derivative of the pseudo-inverse where the rank is locally constant (Golub & Pereyra):
    # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, transposed term by term.
    p = ans
    m, n = values(a).shape[-2:]
    ap = np.eye(m) - xp.matmul(a, p)
    pa = np.eye(n) - xp.matmul(p, a)
    pt = _t(xp, p)
    return (-_mm(xp, pt, g, pt) + _mm(xp, ap, _t(xp, g), p, pt)
            + _mm(xp, pt, p, _t(xp, g), pa))


# --- cholesky, qr ---------------------------------------------------------------------------------

def _cholesky_grad(xp, g, ans, a):
    # A = L L^T: S = L^-T Phi(L^T gL) L^-1 with Phi = lower triangle, diagonal halved; the gradient
    # along symmetric directions is sym(S) (torch gives the same).
    n = values(a).shape[-1]
    phi_mask = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
    linv = xp.inv(ans)
    s = _mm(xp, _t(xp, linv), xp.matmul(_t(xp, ans), g) * phi_mask, linv)
    return _sym(xp, s)


def _qr_grad(xp, g, ans, a, mode="reduced"):
    m, n = values(a).shape[-2:]
    k = min(m, n) if mode == "reduced" else m
    if mode == "complete" and m > n:
        raise ApsiError(f"qr: the gradient of mode 'complete' is undefined for a {m}x{n} matrix (the "
                        "extra columns of Q are not unique); use mode='reduced'")
    q, r = unpack(xp, ans, [(m, k), (k, n)])
    gq, gr = unpack(xp, g, [(m, k), (k, n)])
    if m < n:
        # wide: a = [X Y] with X = Q R1 square and Y = Q R2, R2 = Q^T Y. Y's cotangent is Q gR2,
        # and R2's dependence on Q adds Y gR2^T to gQ; X then follows the square case.
        lead = values(a).shape[:-2]
        left, right = (Ellipsis, slice(0, m)), (Ellipsis, slice(m, n))
        y, gr2 = xp.getitem(a, right), xp.getitem(gr, right)
        gx = _qr_square_grad(xp, q, xp.getitem(r, left), gq + xp.matmul(y, _t(xp, gr2)),
                             xp.getitem(gr, left))
        shape = lead + (m, n)
        return xp.index_add(gx, left, shape) + xp.index_add(xp.matmul(q, gr2), right, shape)
    return _qr_square_grad(xp, q, r, gq, gr)


def _qr_square_grad(xp, q, r, gq, gr):
    k = values(r).shape[-2]
    # A = QR, C = Q^T dQ skew, X = Q^T dA R^-1: the strict lower part of X is C's. Collecting the
    # terms: gA = [gQ + Q (B - Q^T gQ)] R^-T, B = gR R^T + tril(N - N^T, -1), N = Q^T gQ - gR R^T.
    qtgq = xp.matmul(_t(xp, q), gq)
    grrt = xp.matmul(gr, _t(xp, r))
    nn_ = qtgq - grrt
    b = grrt + (nn_ - _t(xp, nn_)) * np.tril(np.ones((k, k)), -1)
    _check_invertible(values(r), "qr", "R has a zero on its diagonal (a has dependent columns)")
    return xp.matmul(gq + xp.matmul(q, b - qtgq), _t(xp, xp.inv(r)))


def _check_invertible(r, fn, why):
    d = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
    if d.size and (not np.all(np.isfinite(d)) or d.min() <= GAP_RTOL * max(d.max(), 1e-300)):
        raise ApsiError(f"{fn}: the gradient is undefined here: {why}")


# --- eigh, svd ------------------------------------------------------------------------------------

_GAP_WORDS = {"eigh": ("eigenvectors", "eigvalsh"), "svd": ("singular vectors", "svd(a, compute_uv=false)"),
              "eig": ("eigenvectors", "eigvals")}


def _gap_inverse(xp, w, fn, what):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it; an error where two w are equal."""
    n = values(w).shape[-1]
    diff = xp.expand_dims(w, -2) - xp.expand_dims(w, -1)
    off = ~np.eye(n, dtype=bool)
    wd = values(w)
    scale = np.max(np.abs(wd), axis=-1, keepdims=True)[..., None] if wd.size else 1.0
    close = off & (np.abs(values(diff)) <= GAP_RTOL * np.maximum(scale, 1e-300))
    if np.any(close):
        idx = np.argwhere(close)[0]
        i, j = int(idx[-2]), int(idx[-1])
        vectors, values_only = _GAP_WORDS[fn]
        raise ApsiError(f"{fn}: {what} {i} and {j} are equal (to {GAP_RTOL:g} relative), so the "
                        f"derivative of the {vectors} is undefined; differentiate a function of the "
                        f"values only ({values_only}), or perturb the input so they separate")
    safe = xp.where(off, diff, 1.0)
    return xp.where(off, 1.0 / safe, 0.0)


def _eigh_grad(xp, g, ans, a):
    n = values(a).shape[-1]
    w, v = unpack(xp, ans, [(n,), (n, n)])
    gw, gv = unpack(xp, g, [(n,), (n, n)])
    inner = _diag_embed(xp, gw)
    if not _is_zero(gv):    # only the eigenvalues are used: their derivative exists at repeats too
        inner = inner + _gap_inverse(xp, w, "eigh", "eigenvalues") * xp.matmul(_t(xp, v), gv)
    return _sym(xp, _mm(xp, v, inner, _t(xp, v)))


def _svd_grad(xp, g, ans, a):
    m, n = values(a).shape[-2:]
    k = min(m, n)
    u, s, vh = unpack(xp, ans, [(m, k), (k,), (k, n)])
    gu, gs, gvh = unpack(xp, g, [(m, k), (k,), (k, n)])
    v, gv = _t(xp, vh), _t(xp, gvh)
    inner = _diag_embed(xp, gs)
    vectors = not (_is_zero(gu) and _is_zero(gvh))
    if vectors:
        # F_ij = 1 / (s_j^2 - s_i^2); J = U^T gU, K = V^T gV (Townsend, "Differentiating the SVD")
        f = _gap_inverse(xp, s * s, "svd", "singular values")
        j = xp.matmul(_t(xp, u), gu)
        kk = xp.matmul(_t(xp, v), gv)
        inner = (inner + xp.matmul(f * (j - _t(xp, j)), _diag_embed(xp, s))
                 + xp.matmul(_diag_embed(xp, s), f * (kk - _t(xp, kk))))
    out = _mm(xp, u, inner, vh)
    if vectors and m != n:
        sd = values(s)
        if sd.size and sd.min() <= GAP_RTOL * max(sd.max(), 1e-300):
            raise ApsiError("svd: the gradient of the singular vectors of a non-square matrix is "
                            "undefined where a singular value is 0 (the matrix is rank-deficient)")
        s_inv = _diag_embed(xp, 1.0 / s)
        if m > n:
            out = out + _mm(xp, gu - _mm(xp, u, _t(xp, u), gu), s_inv, vh)
        else:
            out = out + _mm(xp, u, s_inv, _t(xp, gv - _mm(xp, v, _t(xp, v), gv)))
    return out


def _svd_complement_grad(xp, g, ans, a):
    if _is_zero(g):
        return 0.0 * a
    m, n = values(a).shape[-2:]
    which = "columns of U" if m > n else "rows of Vh"
    raise ApsiError(f"svd: the gradient through the extra {which} of full_matrices=true is undefined "
                    f"for a {m}x{n} matrix (they are any orthonormal basis of the complement, not "
                    "unique); use full_matrices=false (a projector on the complement is eye(m) - "
                    "u @ transpose(u) with the reduced u)")


# --- norms and einsum -------------------------------------------------------------------------------

def _norm2_grad(xp, g, ans, x, axis=None, keepdims=False):
    # x / |x|, and 0 where |x| = 0 (torch's subgradient at the origin).
    shape = values(x).shape
    if not keepdims:
        kept = tuple(1 if i in axis else d for i, d in enumerate(shape))
        g, ans = xp.reshape(g, kept), xp.reshape(ans, kept)
    nonzero = values(ans) != 0
    out = g * x / xp.where(nonzero, ans, 1.0) * nonzero
    if xp.recording and not np.all(nonzero):
        # |x| has a cone point at 0: the first derivative there is torch's 0, the second is
        # unbounded, so a hessian through it is NaN there (as torch's), never a silent 0
        out = out + _cone(x, np.broadcast_to(~nonzero, values(x).shape))
    return out


def _pnorm_grad(xp, g, ans, x, p=None, axis=None, keepdims=False):
    # torch's gradient of a p-norm (p not 0, 1, 2 or inf), term by term: sign(x) |x|^(p-1) times
    # g / |x|_p^(p-1), that factor 0 at the origin (the subgradient), or for p < 1 times
    # g |x|_p^(1-p) with |x_i|^(p-1) taken as 0 where x_i = 0
    shape = values(x).shape
    if not keepdims:
        kept = tuple(1 if i in axis else d for i, d in enumerate(shape))
        g, ans = xp.reshape(g, kept), xp.reshape(ans, kept)
    zero, off = values(ans) == 0, values(x) == 0
    size = xp.sign(x) * x
    if p < 1:
        out = xp.where(off, 0.0, xp.where(off, 1.0, size) ** (p - 1)) * (g * ans ** (1 - p))
    else:
        out = size ** (p - 1) * (g / xp.where(zero, 1.0, ans) ** (p - 1) * ~zero)
    out = xp.sign(x) * out
    if xp.recording:
        # where torch's second derivative meets 0 * inf, NaN as torch's: at the origin for 1 < p < 3,
        # and in the zero entries' columns for p < 1 and 2 < p < 3 (x |x|^(p-2) there)
        nan = (np.broadcast_to(zero, shape) & (1 <= p < 3)) | (off & (p < 1 or 2 < p < 3))
        out = out + _cone(x, nan) if np.any(nan) else out
    return out


def _cone(x, mask):
    from ..autograd.ops import apply  # (ops imports this module's table)

    return apply("norm2_cone", lambda d, mask: np.zeros(d.shape), (x,), {"mask": mask})


def _cone_grad(xp, g, ans, x, mask=None):
    return xp.where(mask, np.nan, 0.0 * x)


def _einsum_rule(k):
    def rule(xp, g, ans, *args, inputs=(), output=""):
        return einsum_adjoint(xp, g, args, inputs, output, k)
    return rule


def einsum_adjoint(xp, g, args, inputs, output, k):
    """The cotangent of operand k of einsum(inputs -> output): an einsum of g with the others, then
    broadcast over letters only operand k has, then put on the diagonals operand k repeats."""
    mine = inputs[k]
    others = [s for j, s in enumerate(inputs) if j != k]
    unique = "".join(dict.fromkeys(mine))
    seen = set(output).union(*others)
    avail = "".join(c for c in unique if c in seen)
    sizes = dict(zip(mine, values(args[k]).shape))
    terms = ",".join([output] + others)
    grad = xp.einsum(f"{terms}->{avail}", g, *[a for j, a in enumerate(args) if j != k])
    if avail != unique:          # avail keeps unique's order, so size-1 axes slot straight in
        kept = tuple(sizes[c] if c in avail else 1 for c in unique)
        grad = xp.broadcast_to(xp.reshape(grad, kept), tuple(sizes[c] for c in unique))
    if len(unique) == len(mine):
        return grad
    return _onto_diagonals(xp, grad, unique, mine, sizes)


def _onto_diagonals(xp, grad, unique, mine, sizes):
    """grad[unique] placed at out[mine] where mine repeats letters: times identity matrices."""
    free = [c for c in _LETTERS if c not in mine]
    renamed, eyes, subs, seen = [], [], [], set()
    for c in mine:
        if c in seen:
            d = free.pop()
            renamed.append(d)
            subs.append(c + d)
            eyes.append(np.eye(sizes[c]))
        else:
            seen.add(c)
            renamed.append(c)
    target = "".join(renamed)
    return xp.einsum(",".join([unique] + subs) + "->" + target, grad, *eyes)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

LINALG_RULES = {
    "inv": (_inv_grad,),
    "solve": (_solve_a, _solve_b),
    "det": (_det_grad,),
    "logabsdet": (_logabsdet_grad,),
    "pinv": (_pinv_grad,),
    "cholesky": (_cholesky_grad,),
    "qr": (_qr_grad,),
    "eigh": (_eigh_grad,),
    "svd": (_svd_grad,),
    "svd_complement": (_svd_complement_grad,),
    "norm2": (_norm2_grad,),
    "pnorm": (_pnorm_grad,),
    "einsum": tuple(_einsum_rule(k) for k in range(MAX_EINSUM_OPERANDS)),
}

# Reached only at a degenerate input (a hessian of norm at 0), so apart from LINALG_RULES, whose every
# rule the torch comparison reaches at generic inputs (tests/nn/test_linalg_torch.py)
EDGE_RULES = {"norm2_cone": (_cone_grad,)}
