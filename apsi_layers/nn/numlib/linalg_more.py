"""More of NumPy's and SciPy's linear algebra under `use nn` (issue 35), with their names, argument
order and values: diagonal, swapaxes, cross, multi_dot, svdvals, matrix_rank (numpy.linalg), and
solve_triangular, cho_solve, lu, expm, logm, sqrtm (scipy.linalg), eig and eigvals.

Built from differentiable ops where that is exact (diagonal, cross, multi_dot, cho_solve); the
rest are ops with their own rule (linalg_vjps2.py). scipy is imported on first use. Each function
hands torch tensors to the torch backend's version (foreign.py), as linalg.py's do.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign, shape
from ..autograd.ops import apply, matmul
from ..autograd.tensor import Tensor, describe
from . import spectral
from .linalg import (
    _finite,
    _int,
    _linalg_call,
    _norm_axis,
    _public,
    _square,
    _tensor,
    diagonal,  # noqa: F401  (re-exported: one of issue 35's names)
    tril,
    triu,
)
from .matrix_functions import RAW_FUNCTIONS
from .scans import moveaxis

# --- shapes: swapaxes (diagonal sits with trace in linalg.py) ----------------------------------


@_public
def swapaxes(a, axis1, axis2):
    """a with axes axis1 and axis2 exchanged."""
    a = _tensor(a, "swapaxes")
    i = _norm_axis(_int(axis1, "swapaxes", "axis1"), a.ndim, "swapaxes")
    j = _norm_axis(_int(axis2, "swapaxes", "axis2"), a.ndim, "swapaxes")
    axes = list(range(a.ndim))
    axes[i], axes[j] = j, i
    return shape.transpose(a, axes)


# --- products: cross, multi_dot --------------------------------------------------------------------------

@_public
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors along axisa of a and axisb of b (broadcast over the rest),
    placed along axisc; `axis` sets all three (NumPy's cross; 2-vectors are refused, as NumPy 2
    deprecates them)."""
    a, b = _tensor(a, "cross"), _tensor(b, "cross", "b")
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _vectors(a, axisa, "a")
    b = _vectors(b, axisb, "b")
    x = [shape.getitem(a, (Ellipsis, k)) for k in range(3)]
    y = [shape.getitem(b, (Ellipsis, k)) for k in range(3)]
    c = shape.stack([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]], -1)
    return moveaxis(c, -1, _norm_axis(_int(axisc, "cross", "axisc"), c.ndim, "cross"))


def _vectors(t, axis, arg):
    if t.ndim == 0:
        raise ApsiError(f"cross: {arg} must hold 3-vectors, not a number")
    ax = _norm_axis(_int(axis, "cross", f"axis{arg}"), t.ndim, "cross")
    if t.shape[ax] != 3:
        raise ApsiError(f"cross: axis {ax} of {arg} (shape {t.shape}) has size {t.shape[ax]}; the "
                        "cross product needs 3-vectors (for 2-vectors pad a 0: concat([v, [0.0]]))")
    return moveaxis(t, ax, -1)


@_public
def multi_dot(arrays):
    """a @ b @ c @ ... in the order of fewest multiplications (NumPy's multi_dot); the first may be a
    row vector and the last a column vector (1-d)."""
    if not isinstance(arrays, list | tuple) or len(arrays) < 2:
        raise ApsiError(f"multi_dot: give a list of at least two tensors, not {describe(arrays)}")
    if foreign.TYPES and any(isinstance(x, foreign.TYPES) for x in arrays):
        return foreign.call("multi_dot", arrays)        # a torch tensor inside the list
    ts = [_tensor(x, "multi_dot", f"arrays[{i}]") for i, x in enumerate(arrays)]
    first, last = ts[0].ndim == 1, ts[-1].ndim == 1
    ts[0] = shape.reshape(ts[0], (1, -1)) if first else ts[0]
    ts[-1] = shape.reshape(ts[-1], (-1, 1)) if last else ts[-1]
    for i, t in enumerate(ts):
        if t.ndim != 2:
            raise ApsiError(f"multi_dot: arrays[{i}] has shape {t.shape}; all but the first and last "
                            "must be matrices (the ends may be vectors)")
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise ApsiError(f"multi_dot: arrays[{i}] ({ts[i].shape}) and arrays[{i + 1}] "
                            f"({ts[i + 1].shape}) do not chain: columns must equal the next rows")
    split = _chain_order([ts[0].shape[0]] + [t.shape[1] for t in ts])
    out = _chain(ts, split, 0, len(ts) - 1)
    if first and last:
        return shape.reshape(out, ())
    return shape.reshape(out, (-1,)) if first or last else out


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (the textbook matrix-chain
    dynamic programme, as NumPy's multi_dot orders it)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(ts, split, i, j):
    if i == j:
        return ts[i]
    k = split[i][j]
    return matmul(_chain(ts, split, i, k), _chain(ts, split, k + 1, j))


# --- singular values and rank ----------------------------------------------------------------------------

@_public
def svdvals(a):
    """The singular values of a (or each of a stack), descending: svd(a, compute_uv=false)."""
    return spectral.svdvals_op(_finite(_tensor(a, "svdvals", "a", 2), "svdvals"))


@_public
def matrix_rank(A, tol=None, hermitian=False, rtol=None):  # noqa: N803  (NumPy's argument name)
    """How many singular values exceed tol (default: the largest times max(M, N) times float64's
    eps, or rtol times the largest), as NumPy's matrix_rank; an int (an int tensor for a stack).
    A count: no gradient."""
    a = _tensor(A, "matrix_rank", "A")
    if a.ndim < 2:
        return int(np.any(a.data != 0))
    s = np.linalg.svd(_finite(a, "matrix_rank").data, compute_uv=False)
    biggest = s.max(axis=-1, keepdims=True) if s.size else np.zeros(s.shape[:-1] + (1,))
    if tol is None:
        if rtol is None:
            rtol = max(a.shape[-2:]) * np.finfo(np.float64).eps
        limit = biggest * _number(rtol, "rtol")
    else:
        if rtol is not None:
            raise ApsiError("matrix_rank: give tol or rtol, not both (NumPy's rule)")
        limit = np.full(biggest.shape, _number(tol, "tol"))
    ranks = np.sum(s > limit, axis=-1)
    return int(ranks) if ranks.ndim == 0 else Tensor(ranks.astype(np.int64))


def _number(x, arg):
    if type(x) is bool or not isinstance(x, int | float):
        raise ApsiError(f"matrix_rank: {arg} must be a number, not {describe(x)}")
    return float(x)


# --- triangular and Cholesky solves ------------------------------------------------------------------

@_public
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    """x with T x = b (trans=0 or "N"), T^T x = b (1, "T" or 2, "C"), T the lower (lower=true) or
    upper triangle of a, with 1s on the diagonal for unit_diagonal=true (scipy.linalg's). The other
    triangle of a is not read, so its gradient is 0."""
    a = _finite(_square(a, "solve_triangular"), "solve_triangular")
    b = _finite(_tensor(b, "solve_triangular", "b", 1), "solve_triangular", "b")
    if a.ndim != 2 or b.ndim > 2:
        raise ApsiError(f"solve_triangular: a must be a matrix and b a vector or matrix, got {a.shape} "
                        f"and {b.shape} (scipy's shapes)")
    n = a.shape[0]
    if b.shape[0] != n:
        raise ApsiError(f"solve_triangular: a is {a.shape} so b needs {n} rows, but b has shape {b.shape}")
    transpose = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}.get(trans)
    if transpose is None or type(trans) is bool:
        raise ApsiError(f"solve_triangular: trans must be 0, 1, 2, \"N\", \"T\" or \"C\", not {trans!r}")
    t = tril(a) if lower else triu(a)
    if unit_diagonal:
        t = t * (1.0 - np.eye(n)) + np.eye(n)
    if transpose:
        t, lower = shape.swap_last(t), not lower
    bm = shape.expand_dims(b, -1) if b.ndim == 1 else b
    x = apply("solve_triangular", _triangular, (t, bm), {"lower": bool(lower)})
    return shape.getitem(x, (Ellipsis, 0)) if b.ndim == 1 else x


def _triangular(t, b, lower=False):
    from scipy.linalg import solve_triangular as st

    if np.any(np.diagonal(t) == 0):
        i = int(np.flatnonzero(np.diagonal(t) == 0)[0])
        raise ApsiError(f"solve_triangular: the matrix is singular (diagonal element {i} is 0); a "
                        "triangular system needs a non-zero diagonal")
    return st(t, b, lower=lower, check_finite=False)


@_public
def cho_solve(c_and_lower, b):
    """x with A x = b from A's Cholesky factor: c_and_lower = (c, lower), A = L L^T with L the lower
    triangle of c when lower is true, else A = U^T U with U its upper triangle (scipy.linalg's
    cho_solve; c as cholesky(a) gives it, lower=true). Differentiable in c and b."""
    if not (isinstance(c_and_lower, list | tuple) and len(c_and_lower) == 2):
        raise ApsiError("cho_solve: the first argument is the pair [c, lower], as scipy's (c from "
                        f"cholesky(a), lower=true), not {describe(c_and_lower)}")
    c, lower = c_and_lower
    if type(lower) is not bool:
        raise ApsiError(f"cho_solve: lower must be true or false, not {describe(lower)}")
    if lower:
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, trans=1, lower=True)
    y = solve_triangular(c, b, trans=1, lower=False)
    return solve_triangular(c, y, lower=False)


# --- LU ---------------------------------------------------------------------------------------------------

@_public
def lu(a, permute_l=False, p_indices=False):
    """(P, L, U) with a = P @ L @ U, L unit lower triangular, U upper triangular (scipy.linalg.lu,
    partial pivoting); (P @ L, U) with permute_l=true; (p, L, U) with a = L[p] @ U with
    p_indices=true. L and U are differentiable for a square a; P is a constant."""
    a = _finite(_tensor(a, "lu", "a", 2), "lu")
    if a.ndim != 2:
        raise ApsiError(f"lu: a must be a matrix, got shape {a.shape}")
    m, n = a.shape
    k = min(m, n)
    from scipy.linalg import lu as scipy_lu

    perm = scipy_lu(a.data, check_finite=False)[0]
    packed = apply("lu", _lu_fwd, (a,), {})
    from .linalg_vjps import unpack

    low, up = unpack(_Slices, packed, [(m, k), (k, n)])
    if permute_l:
        return matmul(perm, low), up
    if p_indices:
        return Tensor(np.argmax(perm, axis=1).astype(np.int64)), low, up
    return Tensor(perm), low, up


def _lu_fwd(d):
    from scipy.linalg import lu as scipy_lu

    from .linalg_vjps import pack

    _, low, up = scipy_lu(d, check_finite=False)
    return pack([(low, 2), (up, 2)])


class _Slices:
    getitem = staticmethod(shape.getitem)
    reshape = staticmethod(shape.reshape)


# --- matrix functions: expm, logm, sqrtm --------------------------------------------------------------

def _matrix_function(name, a):
    a = _finite(_square(a, name), name)
    return apply(name, RAW_FUNCTIONS[name], (a,), {})


@_public
def expm(A):  # noqa: N803  (scipy's argument name)
    """The matrix exponential (scipy.linalg.expm), batched; differentiable at any order."""
    return _matrix_function("expm", A)


@_public
def logm(A):  # noqa: N803
    """The principal matrix logarithm (scipy.linalg.logm); real a with an eigenvalue on the closed
    negative real axis has no real logarithm and is refused. Differentiable at any order."""
    return _matrix_function("logm", A)


@_public
def sqrtm(A):  # noqa: N803
    """The principal matrix square root (scipy.linalg.sqrtm); a with a negative real eigenvalue has
    no real square root and is refused; at a singular a the derivative is unbounded."""
    return _matrix_function("sqrtm", A)




# --- eig, eigvals ---------------------------------------------------------------------------------------

@_public
def eig(a):
    """(eigenvalues, right eigenvectors as unit columns) of a square matrix, as numpy.linalg.eig, for
    a matrix whose eigenvalues are all real: a complex pair is refused (nn tensors are real; for a
    symmetric matrix use eigh). Differentiable where the eigenvalues are distinct."""
    a = _finite(_square(a, "eig"), "eig")
    n = a.shape[-1]
    from .linalg_vjps import unpack

    packed = apply("eig", _eig_fwd, (a,), {})
    w, v = unpack(_Slices, packed, [(n,), (n, n)])
    return w, v


@_public
def eigvals(a):
    """The eigenvalues of a square matrix (all real, else refused; see eig)."""
    return eig(a)[0]


def _eig_fwd(d):
    from .linalg_vjps import pack

    w, v = _linalg_call("eig", np.linalg.eig, d)
    if np.iscomplexobj(w):
        if np.any(w.imag != 0):
            i = int(np.flatnonzero(np.reshape(w.imag != 0, -1))[0]) % d.shape[-1]
            raise ApsiError(f"eig: eigenvalue {i} is complex ({w.reshape(-1)[i]:.6g}): nn tensors are "
                            "real, so eig takes only matrices whose eigenvalues are all real (a "
                            "symmetric matrix: use eigh; a rotation has complex ones)")
        w, v = w.real, v.real
    return pack([(w, 1), (v, 2)])


__all__ = ["cho_solve", "cross", "diagonal", "eig", "eigvals", "expm", "logm", "lu", "matrix_rank",
           "multi_dot", "solve_triangular", "sqrtm", "svdvals", "swapaxes"]


def _register():
    from ..autograd.vjps import RULES, register_name
    from .linalg_more_vjps import MORE_RULES

    RULES.update(MORE_RULES)
    for name, rules in MORE_RULES.items():
        register_name(name, rules)


_register()
