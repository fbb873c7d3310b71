"""expm, logm and sqrtm on plain arrays (through SciPy, imported on first use), real results only:
what linalg_more's ops compute and what their gradient rules (linalg_more_vjps) compute again on the
block matrix, here so neither of the two imports the other."""

import numpy as np

from apsi_lang.errors import ApsiError


def _each(fn, name):
    """fn on each matrix of a stack, real results only."""
    def raw(d):
        if d.ndim > 2:
            return np.stack([raw(x) for x in d])
        out = fn(d)
        if np.iscomplexobj(out):
            scale = max(np.max(np.abs(out.real), initial=0.0), 1.0)
            if np.max(np.abs(out.imag), initial=0.0) > 1e-10 * scale:
                raise ApsiError(f"{name}: the matrix has a negative real eigenvalue (or a pair off the "
                                f"real axis whose {name} is complex), so its principal {name} is not real; "
                                "nn tensors are real")
            out = out.real
        if not np.all(np.isfinite(out)):
            raise ApsiError(f"{name}: the result is not finite (a singular matrix has no logarithm; "
                            "check for zero eigenvalues)")
        return np.ascontiguousarray(out, dtype=np.float64)
    return raw


def _scipy(name):
    def call(d):
        import warnings

        import scipy.linalg

        if name == "logm" and singular(d):
            raise ApsiError("logm: the matrix is singular (an eigenvalue is 0), so it has no logarithm "
                            "(log 0 is -inf); keep its eigenvalues away from 0")
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")          # scipy's accuracy warnings: checked below
            return getattr(scipy.linalg, name)(d)
    return call


def singular(d):
    """Whether the square matrix d has an eigenvalue within 1e-12 of 0, relative to its largest."""
    w = np.abs(np.linalg.eigvals(d))
    return bool(w.size) and w.min() <= 1e-12 * max(w.max(), 1e-300)


RAW_FUNCTIONS = {name: _each(_scipy(name), name) for name in ("expm", "logm", "sqrtm")}
