"""LAPACK calls with their errors in Apsi's words (singular, not positive definite, no convergence):
one place for linalg, linalg_more and spectral, which all call NumPy's LAPACK routines."""

import numpy as np

from apsi_lang.errors import ApsiError


def _linalg_call(fn, f, *arrays):
    try:
        return f(*arrays)
    except np.linalg.LinAlgError as e:
        raise ApsiError(_lapack_words(fn, str(e))) from None


def _lapack_words(fn, text):
    if "Singular" in text or "singular" in text:
        return (f"{fn}: the matrix is singular (not invertible); use pinv or lstsq for a least-squares "
                "answer, or check the input for dependent rows/columns")
    if "positive definite" in text.lower():
        return (f"{fn}: the matrix is not positive definite (cholesky needs a symmetric matrix with "
                "positive eigenvalues); add a small multiple of the identity, or use eigh")
    if "converge" in text.lower():
        return f"{fn}: the decomposition did not converge ({text}); check the input for NaN or huge values"
    return f"{fn}: {text}"
