"""The eigh and svd ops' vectors, read by linalg (eigh, svd) and by spectral (the eigenvalue ops'
higher derivatives): in a module of their own so neither of those two imports the other."""

import numpy as np

from ..autograd import shape
from ..autograd.ops import apply
from .lapack import _linalg_call
from .linalg_vjps import pack, unpack


class _Slices:
    """unpack's namespace when slicing a public result: the differentiable getitem and reshape."""
    getitem = staticmethod(shape.getitem)
    reshape = staticmethod(shape.reshape)


GRAPH_SLICES = _Slices()


def _eigh_fwd(d):
    w, v = _linalg_call("eigh", np.linalg.eigh, d)
    return pack([(w, 1), (v, 2)])


def eigh_vectors(sym):
    """The eigenvectors of the symmetric tensor `sym` (already mirrored), from the eigh op: their
    derivative exists at distinct eigenvalues (spectral.py records eigvalsh's gradient with them)."""
    n = sym.shape[-1]
    return unpack(GRAPH_SLICES, apply("eigh", _eigh_fwd, (sym,), {}), [(n,), (n, n)])[1]


def _svd_fwd(d):
    u, s, vh = _linalg_call("svd", lambda x: np.linalg.svd(x, full_matrices=False), d)
    return pack([(u, 2), (s, 1), (vh, 2)])


def svd_vectors(a):
    """(U, Vh) of the reduced SVD of the tensor `a`, from the svd op (differentiable at distinct,
    nonzero singular values)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    u, _, vh = unpack(GRAPH_SLICES, apply("svd", _svd_fwd, (a,), {}), [(m, k), (k,), (k, n)])
    return u, vh
