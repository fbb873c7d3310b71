"""dense(x, w, b) = x @ w + b as one op: one GEMM forward, two GEMMs and a column sum backward.

x [..., in] is flattened to 2-D first: numpy.matmul would otherwise loop over the leading axes with
one small GEMM each, where one large GEMM runs at full BLAS speed.
"""

from apsi_lang.errors import ApsiError

from .record import fused, tensor


def _forward(x, w, b, training):
    x2 = x.reshape(-1, x.shape[-1])
    out = x2 @ w
    if b is not None:
        out += b
    return out.reshape(x.shape[:-1] + (w.shape[1],)), ((x2, w, x.shape) if training else None)


def _backward(g, saved, needs):
    x2, w, xshape = saved
    g2 = g.reshape(-1, g.shape[-1])
    gx = (g2 @ w.T).reshape(xshape) if needs[0] else None
    gw = x2.T @ g2 if needs[1] else None
    gb = g2.sum(axis=0) if needs[2] else None
    return gx, gw, gb


_dense = fused("dense", _forward, _backward, 3)


def dense(x, w, b=None):
    """x [..., in] @ w [in, out] + b [out] (b may be None)."""
    x, w, b = tensor(x, "dense", "x"), tensor(w, "dense", "w"), tensor(b, "dense", "b")
    if x.ndim < 1 or w.ndim != 2 or x.shape[-1] != w.shape[0]:
        raise ApsiError(f"dense: input {x.shape} and weight {w.shape} do not fit: the input's last axis "
                        f"must equal the weight's first ([in, out])")
    if b is not None and b.shape != (w.shape[1],):
        raise ApsiError(f"dense: bias has shape {b.shape}, expected ({w.shape[1]},)")
    return _dense(x, w, b)
