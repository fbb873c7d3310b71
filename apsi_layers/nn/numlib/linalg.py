"""Linear algebra under `use nn`, with NumPy's names and signatures, batched over leading axes where
NumPy batches.

A few ops are primitives with their own gradient rule (linalg_vjps.py): inv, solve, det,
logabsdet, pinv, cholesky, qr, eigh, svd, norm2 and einsum. Everything else is written with
differentiable ops (einsum, matmul, reshape, indexing, ...), so its gradient at any order comes
for free. Every function hands a torch tensor to the torch backend's version (foreign.py).
"""

import functools

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign, reduce, shape
from ..autograd.ops import abs as _abs
from ..autograd.ops import apply, matmul
from ..autograd.tensor import Tensor, as_tensor, describe
from . import spectral
from .construct import promote
from .einsum_op import einsum
from .factor_vectors import GRAPH_SLICES, eigh_vectors, svd_vectors
from .lapack import _linalg_call  # noqa: F401  (linalg_more and spectral's name too)
from .linalg_vjps import pack, unpack

# --- plumbing --------------------------------------------------------------------------------------


def _public(fn):
    """Dispatch torch tensors (an Apsi loss run by fit(backend="torch")) to the foreign version."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if foreign.TYPES and any(isinstance(a, foreign.TYPES) for a in args):
            return foreign.call(name, *args, **kwargs)
        return fn(*args, **kwargs)
    return wrapper


def _tensor(x, fn, arg="a", min_ndim=0):
    t = as_tensor(x, fn, arg)
    if t.ndim < min_ndim:
        need = {1: "a vector (1 axis)", 2: "a matrix (2 axes), or a stack of them"}[min_ndim]
        raise ApsiError(f"{fn}: {arg} must be {need}, but it has shape {t.shape}")
    return promote(t)


def _square(x, fn, arg="a"):
    t = _tensor(x, fn, arg, 2)
    if t.shape[-1] != t.shape[-2]:
        raise ApsiError(f"{fn}: {arg} must be square in its last two axes, but it has shape {t.shape}")
    return t


def _finite(t, fn, arg="a"):
    if not np.all(np.isfinite(t.data)):
        raise ApsiError(f"{fn}: {arg} holds NaN or inf; the decomposition needs finite numbers")
    return t


def _int(value, fn, arg):
    if type(value) is bool or not isinstance(value, int | np.integer):
        raise ApsiError(f"{fn}: {arg} must be an int, not {describe(value)}")
    return int(value)


def _rcond(value, fn):
    if value is None:
        return None
    if type(value) is bool or not isinstance(value, int | float) or not 0 <= value < np.inf:
        raise ApsiError(f"{fn}: rcond must be none or a number >= 0 (singular values below rcond times "
                        f"the largest count as 0), not {describe(value)}")
    return float(value)


def _axis_pair(axis, ndim, fn):
    if not (isinstance(axis, list | tuple) and len(axis) == 2):
        raise ApsiError(f"{fn}: axis must be an int or a pair of ints, not {axis!r}")
    a, b = (_norm_axis(_int(x, fn, "axis"), ndim, fn) for x in axis)
    if a == b:
        raise ApsiError(f"{fn}: axis {list(axis)} names one axis twice")
    return a, b


def _norm_axis(a, ndim, fn):
    if not -ndim <= a < ndim:
        raise ApsiError(f"{fn}: axis {a} is out of range for a tensor with {ndim} axes")
    return a % ndim


# --- raw helpers the gradient rules use as xp.inv, xp.solve, xp.einsum (set in graph.py) -------------

def raw_inv(a):
    return _linalg_call("inv", np.linalg.inv, a)


def raw_solve(a, b):
    return _linalg_call("solve", np.linalg.solve, a, b)


def raw_einsum(subscripts, *operands):
    """For the rules only: their subscripts are made by einsum_adjoint, already plain letters."""
    return np.einsum(subscripts, *operands, optimize=len(operands) > 2)


# --- products --------------------------------------------------------------------------------------

@_public
def dot(a, b):
    """NumPy's dot: inner product of vectors, matrix product, sum over a's last and b's
    second-to-last axis for N-d; a number scales."""
    a, b = _tensor(a, "dot"), _tensor(b, "dot", "b")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


@_public
def vdot(a, b):
    """Sum of a * b over all elements, both flattened (equal sizes)."""
    a, b = _tensor(a, "vdot"), _tensor(b, "vdot", "b")
    if a.size != b.size:
        raise ApsiError(f"vdot: a has {a.size} elements and b {b.size}; they must have as many")
    return einsum("i,i->", shape.reshape(a, [-1]), shape.reshape(b, [-1]))


@_public
def inner(a, b):
    """Sum over the last axes of a and b: shape a.shape[:-1] + b.shape[:-1]."""
    a, b = _tensor(a, "inner"), _tensor(b, "inner", "b")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ApsiError(f"inner: the last axes of a {a.shape} and b {b.shape} must have equal sizes")
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


@_public
def outer(a, b):
    """a and b flattened: out[i, j] = a[i] * b[j]."""
    a, b = _tensor(a, "outer"), _tensor(b, "outer", "b")
    return einsum("i,j->ij", shape.reshape(a, [-1]), shape.reshape(b, [-1]))


@_public
def tensordot(a, b, axes=2):
    """Sum over the last `axes` axes of a and the first of b, or over the pairs axes=[[...], [...]]."""
    a, b = _tensor(a, "tensordot"), _tensor(b, "tensordot", "b")
    ax_a, ax_b = _tensordot_axes(axes, a, b)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    if a.ndim + b.ndim - len(ax_a) > 52:
        raise ApsiError("tensordot: more than 52 axes in all")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise ApsiError(f"tensordot: axis {i} of a (size {a.shape[i]}) and axis {j} of b "
                            f"(size {b.shape[j]}) are summed together, so their sizes must match")
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + [c for j, c in enumerate(sb) if j not in ax_b]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def _tensordot_axes(axes, a, b):
    if isinstance(axes, int) and type(axes) is not bool:
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise ApsiError(f"tensordot: axes={axes} but a has {a.ndim} and b {b.ndim} axes")
        return list(range(a.ndim - axes, a.ndim)), list(range(axes))
    if isinstance(axes, list | tuple) and len(axes) == 2:
        xa, xb = ([v] if isinstance(v, int) else list(v) for v in axes)
        if len(xa) != len(xb):
            raise ApsiError(f"tensordot: axes {axes!r} pairs {len(xa)} axes of a with {len(xb)} of b")
        xa = [_norm_axis(_int(v, "tensordot", "axes"), a.ndim, "tensordot") for v in xa]
        xb = [_norm_axis(_int(v, "tensordot", "axes"), b.ndim, "tensordot") for v in xb]
        if len(set(xa)) != len(xa) or len(set(xb)) != len(xb):
            raise ApsiError(f"tensordot: axes {axes!r} names an axis twice")
        return xa, xb
    raise ApsiError(f"tensordot: axes must be an int or a pair of axis lists like [[1], [0]], not {axes!r}")


@_public
def kron(a, b):
    """Kronecker product (block matrix a[i, j] * b), for any numbers of axes."""
    a, b = _tensor(a, "kron"), _tensor(b, "kron", "b")
    nd = max(a.ndim, b.ndim)
    if nd > 13:
        raise ApsiError(f"kron: at most 13 axes, got shapes {a.shape} and {b.shape}")
    a = shape.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = shape.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    la, lb = "abcdefghijklm"[:nd], "nopqrstuvwxyz"[:nd]
    inter = "".join(x + y for x, y in zip(la, lb, strict=True))
    prod = einsum(f"{la},{lb}->{inter}", a, b)
    return shape.reshape(prod, tuple(m * n for m, n in zip(a.shape, b.shape, strict=True)))


# --- diagonals and triangles -------------------------------------------------------------------------

def _diagonal_index(rows, cols, k):
    """Row and column indices of the k-th diagonal of a rows x cols matrix."""
    i = np.arange(max(0, -k), min(rows, cols - k)) if cols - k > 0 and rows + k > 0 else np.arange(0)
    return i, i + k


@_public
def diag(v, k=0):
    """A vector's matrix with v on diagonal k, or a matrix's k-th diagonal (NumPy's diag)."""
    v = _tensor(v, "diag", "v")
    k = _int(k, "diag", "k")
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        rows, cols = _diagonal_index(n, n, k)
        return shape.index_add(v, (rows, cols), (n, n))
    if v.ndim == 2:
        rows, cols = _diagonal_index(*v.shape, k)
        return shape.getitem(v, (rows, cols))
    raise ApsiError(f"diag: v must be a vector or a matrix, but it has shape {v.shape}")


@_public
def trace(a, offset=0, axis1=0, axis2=1):
    """Sum of the `offset` diagonal over axes axis1 and axis2 (NumPy's trace)."""
    return reduce.sum(_diagonal("trace", a, offset, axis1, axis2), axis=-1)


@_public
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The `offset` diagonal over axes axis1 and axis2, as the last axis (NumPy's diagonal)."""
    return _diagonal("diagonal", a, offset, axis1, axis2)


def _diagonal(fn, a, offset, axis1, axis2):
    a = _tensor(a, fn, "a", 2)
    offset = _int(offset, fn, "offset")
    i, j = _axis_pair([axis1, axis2], a.ndim, fn)
    rest = [d for d in range(a.ndim) if d not in (i, j)]
    moved = shape.transpose(a, rest + [i, j])
    rows, cols = _diagonal_index(a.shape[i], a.shape[j], offset)
    return shape.getitem(moved, (Ellipsis, rows, cols))


def _triangle(fn, m, k, lower):
    m = _tensor(m, fn, "m", 2)
    k = _int(k, fn, "k")
    rows, cols = m.shape[-2:]
    mask = np.tri(rows, cols, k if lower else k - 1, dtype=bool)
    return m * (mask if lower else ~mask)


@_public
def tril(m, k=0):
    """m with the elements above diagonal k set to 0 (last two axes)."""
    return _triangle("tril", m, k, True)


@_public
def triu(m, k=0):
    """m with the elements below diagonal k set to 0 (last two axes)."""
    return _triangle("triu", m, k, False)


# --- primitives: inverse, solve, determinants --------------------------------------------------------

@_public
def inv(a):
    """Inverse of a square matrix (or each of a stack)."""
    a = _finite(_square(a, "inv"), "inv")
    return apply("inv", raw_inv, (a,), {})


@_public
def solve(a, b):
    """x with a @ x = b: b is (..., n) when it is 1-d, else (..., n, k) (NumPy 2's rule)."""
    a = _finite(_square(a, "solve"), "solve")
    b = _tensor(b, "solve", "b", 1)
    n = a.shape[-1]
    vector = b.ndim == 1
    if b.shape[0 if vector else -2] != n:
        raise ApsiError(f"solve: a is {a.shape} so b needs {n} rows, but b has shape {b.shape}")
    bm = shape.expand_dims(b, -1) if vector else b
    try:
        np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    except ValueError:
        raise ApsiError(f"solve: the batch axes of a {a.shape} and b {b.shape} do not broadcast") from None
    x = apply("solve", raw_solve, (a, bm), {})
    return shape.getitem(x, (Ellipsis, 0)) if vector else x


@_public
def det(a):
    """Determinant of a square matrix (or each of a stack)."""
    a = _finite(_square(a, "det"), "det")
    return apply("det", np.linalg.det, (a,), {})


@_public
def slogdet(a):
    """(sign, logabsdet) with det(a) = sign * exp(logabsdet); the sign is a constant."""
    a = _finite(_square(a, "slogdet"), "slogdet")
    sign = Tensor(np.linalg.slogdet(a.data)[0])
    return sign, apply("logabsdet", lambda d: np.linalg.slogdet(d)[1], (a,), {})


@_public
def pinv(a, rcond=None, hermitian=False):
    """Moore-Penrose pseudo-inverse; the gradient holds where the rank does not change."""
    a = _finite(_tensor(a, "pinv", "a", 2), "pinv")
    rcond = _rcond(rcond, "pinv")
    kw = {} if rcond is None else {"rcond": rcond}
    return apply("pinv", lambda d: _linalg_call("pinv", lambda x: np.linalg.pinv(
        x, hermitian=bool(hermitian), **kw), d), (a,), {})


@_public
def lstsq(a, b, rcond=None):
    """(x, residuals, rank, s) as NumPy's lstsq: x minimizes |a x - b|; x and residuals are
    differentiable, rank is an int and s the singular values of a."""
    a = _finite(_tensor(a, "lstsq", "a", 2), "lstsq")
    b = _tensor(b, "lstsq", "b", 1)
    if a.ndim != 2 or b.ndim > 2:
        raise ApsiError(f"lstsq: a must be a matrix and b a vector or matrix, got {a.shape} and {b.shape}")
    m, n = a.shape
    if b.shape[0] != m:
        raise ApsiError(f"lstsq: a has {m} rows but b has shape {b.shape}")
    # NumPy's cut-off: singular values below rcond * the largest count as 0
    rcond = _rcond(rcond, "lstsq")
    rcond = max(m, n) * np.finfo(float).eps if rcond is None else rcond
    s_raw = np.linalg.svd(a.data, compute_uv=False)
    rank = int(np.sum(s_raw > rcond * s_raw.max())) if s_raw.size else 0
    x = matmul(pinv(a, rcond=rcond), b)
    if rank == n and m > n:
        r = matmul(a, x) - b
        residuals = reduce.sum(r * r, axis=0)
        residuals = shape.reshape(residuals, [1]) if b.ndim == 1 else residuals
    else:
        residuals = Tensor(np.zeros(0))
    return x, residuals, rank, svd(a, compute_uv=False)


# --- primitives: decompositions ------------------------------------------------------------------------

@_public
def cholesky(a):
    """Lower-triangular L with a = L @ L.T, for a symmetric positive-definite a (or a stack)."""
    a = _finite(_square(a, "cholesky"), "cholesky")
    return apply("cholesky", lambda d: _linalg_call("cholesky", np.linalg.cholesky, d), (a,), {})


@_public
def qr(a, mode="reduced"):
    """(Q, R) with a = Q @ R, Q orthonormal columns, R upper triangular; mode "reduced",
    "complete" or "r" (R alone)."""
    a = _finite(_tensor(a, "qr", "a", 2), "qr")
    if mode not in ("reduced", "complete", "r"):
        raise ApsiError(f"qr: mode must be \"reduced\", \"complete\" or \"r\", not {mode!r}")
    m, n = a.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    rmode = "complete" if mode == "complete" else "reduced"

    def fwd(d, mode):
        q, r = np.linalg.qr(d, mode=mode)
        return pack([(q, 2), (r, 2)])

    packed = apply("qr", fwd, (a,), {"mode": rmode})
    q, r = unpack(GRAPH_SLICES, packed, [(m, k), (k, n)])
    return r if mode == "r" else (q, r)


@_public
def eigh(a, UPLO="L"):  # noqa: N803  (NumPy's argument name)
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric matrix (or a stack)."""
    a = _finite(_square(a, "eigh"), "eigh")
    if UPLO not in ("L", "U"):
        raise ApsiError(f"eigh: UPLO must be \"L\" or \"U\", not {UPLO!r}")
    sym = _symmetric_from(a, UPLO)
    # the values from their own op, so a function of them alone differentiates at repeats too
    return spectral.eigvalsh_op(sym), eigh_vectors(sym)


def _symmetric_from(a, uplo):
    """The symmetric matrix eigh reads: the lower (or upper) triangle mirrored, as NumPy does."""
    n = a.shape[-1]
    low = np.tri(n, n, -1, dtype=bool)
    side = low if uplo == "L" else low.T
    part = a * side
    return part + shape.swap_last(part) + a * np.eye(n, dtype=bool)


@_public
def eigvalsh(a, UPLO="L"):  # noqa: N803
    """Eigenvalues (ascending) of a symmetric matrix; differentiable at repeated eigenvalues too
    (their own op: a smooth function of them has its hessian there, see spectral.py)."""
    a = _finite(_square(a, "eigvalsh"), "eigvalsh")
    if UPLO not in ("L", "U"):
        raise ApsiError(f"eigvalsh: UPLO must be \"L\" or \"U\", not {UPLO!r}")
    return spectral.eigvalsh_op(_symmetric_from(a, UPLO))


@_public
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """(U, S, Vh) with a = U @ diag(S) @ Vh (S descending), or S alone with compute_uv=false.
    For a non-square a, the extra columns of U (rows of Vh) of full_matrices=true have no gradient
    (they are not unique; a gradient through them is refused): use full_matrices=false."""
    a = _finite(_tensor(a, "svd", "a", 2), "svd")
    if not compute_uv:
        return spectral.svdvals_op(a)
    m, n = a.shape[-2:]
    u, vh = svd_vectors(a)
    s = spectral.svdvals_op(a)      # (as eigh's values: their own op)
    if full_matrices and m != n:
        return _full_factors(a, u, s, vh)
    return u, s, vh


def _full_factors(a, u, s, vh):
    """NumPy's full_matrices=true: the extra columns of U (or rows of Vh) are not unique (any
    orthonormal basis of the complement), so they come from an op whose gradient is refused, as
    qr(mode="complete") refuses; S and the first min(m, n) factors stay differentiable."""
    m, n = a.shape[-2:]
    extra = apply("svd_complement", _complement, (a,), {})
    if m > n:
        return shape.concat([u, extra], axis=-1), s, vh
    return u, s, shape.concat([vh, extra], axis=-2)


def _complement(d):
    full_u, _, full_vh = np.linalg.svd(d, full_matrices=True)
    m, n = d.shape[-2:]
    return full_u[..., n:] if m > n else full_vh[..., m:, :]


# --- built from the others -------------------------------------------------------------------------------

@_public
def matrix_power(a, n):
    """a multiplied by itself n times (n may be 0, giving the identity, or negative: inv(a)**-n)."""
    a = _square(a, "matrix_power")
    n = _int(n, "matrix_power", "n")
    if n < 0:
        a, n = inv(a), -n
    if n == 0:
        return Tensor(np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy())
    result, base = None, a
    while n:                               # binary powering: about log2(n) products
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


@_public
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002  (NumPy's argument name)
    """Vector norms (ord 2 by default, inf, -inf, 0, any p) and matrix norms ("fro", "nuc", 1, -1,
    2, -2, inf, -inf) over `axis` (none: all elements, or the matrix for a 2-d x with ord given)."""
    x = _tensor(x, "norm", "x")
    if axis is None:
        if ord is None:
            return _norm2(x, tuple(range(x.ndim)), keepdims)
        if x.ndim == 1:
            axis = 0
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ApsiError(f"norm: ord={ord!r} needs axis for a tensor of shape {x.shape} (an int for "
                            "vector norms, a pair for matrix norms)")
    if isinstance(axis, int) and type(axis) is not bool:
        return _vector_norm(x, ord, _norm_axis(axis, x.ndim, "norm"), keepdims)
    if isinstance(axis, list | tuple) and len(axis) == 1:
        return _vector_norm(x, ord, _norm_axis(_int(axis[0], "norm", "axis"), x.ndim, "norm"), keepdims)
    return _matrix_norm(x, ord, _axis_pair(axis, x.ndim, "norm"), keepdims)


def _norm2(x, axes, keepdims):
    return apply("norm2", lambda d, axis, keepdims: np.sqrt(np.sum(d * d, axis=axis, keepdims=keepdims)),
                 (x,), {"axis": axes, "keepdims": bool(keepdims)})


def _vector_norm(x, ord, axis, keepdims):  # noqa: A002
    if ord is None or ord == 2:
        return _norm2(x, (axis,), keepdims)
    if isinstance(ord, str) or not isinstance(ord, int | float) or type(ord) is bool:
        raise ApsiError(f"norm: ord={ord!r} is not a vector norm: use a number (1, 2, 3.5, ...), inf, "
                        "-inf or 0 (for matrix norms give a pair of axes)")
    a = _abs(x)
    if ord == np.inf:
        return reduce.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return reduce.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:       # how many are non-zero: a count, so no gradient
        return Tensor(np.sum(x.data != 0, axis=axis, keepdims=keepdims).astype(np.float64))
    if ord == 1:
        return reduce.sum(a, axis=axis, keepdims=keepdims)
    return apply("pnorm", _pnorm, (x,), {"p": float(ord), "axis": (axis,), "keepdims": bool(keepdims)})


def _pnorm(d, p, axis, keepdims):
    with np.errstate(divide="ignore"):          # 0 ** p for p < 0: inf, so the norm is 0 (NumPy's)
        return np.sum(np.abs(d) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    r, c = axes
    if ord in (None, "fro"):
        return _norm2(x, axes, keepdims)
    if ord not in ("nuc", 1, -1, 2, -2, np.inf, -np.inf):
        raise ApsiError(f"norm: ord={ord!r} is not a matrix norm: use \"fro\", \"nuc\", 1, -1, 2, -2, "
                        "inf or -inf")
    if ord in (1, -1, np.inf, -np.inf):
        summed, reduced = (r, c) if ord in (1, -1) else (c, r)   # 1: max column sum; inf: max row sum
        sums = reduce.sum(_abs(x), axis=summed, keepdims=True)
        pick = reduce.max if ord > 0 else reduce.min
        out = pick(sums, axis=reduced, keepdims=True)
    else:
        rest = [d for d in range(x.ndim) if d not in axes]
        s = svd(shape.transpose(x, rest + [r, c]), compute_uv=False)
        if ord == "nuc":
            out = reduce.sum(s, axis=-1)
        else:
            out = reduce.max(s, axis=-1) if ord == 2 else reduce.min(s, axis=-1)
        out = shape.expand_dims(shape.expand_dims(out, r if r < c else c), c if r < c else r)
    return out if keepdims else shape.reshape(out, [d for i, d in enumerate(out.shape) if i not in axes])


@_public
def cond(x, p=None):
    """Condition number: largest over smallest singular value (p none or 2), or norm(x, p) *
    norm(inv(x), p) for p in "fro", "nuc", 1, -1, inf, -inf, -2."""
    x = _tensor(x, "cond", "x", 2)
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        big, small = reduce.max(s, axis=-1), reduce.min(s, axis=-1)
        return big / small if p != -2 else small / big
    axes = (x.ndim - 2, x.ndim - 1)
    return norm(x, p, axis=axes) * norm(inv(x), p, axis=axes)
