"""Scaled dot-product attention as one op: scores, masked softmax and the weighted sum forward; the
backward uses the saved probabilities (softmax VJP fused in: p * (dp - sum(dp * p))).

A query row that may attend to nothing (every key masked) gives zeros and passes no gradient, where
a plain softmax would give NaN.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import plain_array
from .batch_threads import over_rows
from .record import fused, tensor


def allowed(mask, causal, tq, tk):
    """The boolean 'may attend' array broadcastable to [..., Tq, Tk], or None for all."""
    keep = None
    if mask is not None:
        keep = plain_array(mask, "attention", "mask", dtype=bool)
    if causal:
        tri = np.tri(tq, tk, dtype=bool)
        keep = tri if keep is None else keep & tri
    return keep


def _softmax_rows(q, k, v, keep, scale, p, out):
    np.matmul(q, np.swapaxes(k, -1, -2), out=p)
    p *= scale
    if keep is not None:
        barred = ~keep
        np.copyto(p, -np.inf, where=barred)
    top = p.max(axis=-1, keepdims=True)
    if keep is not None:
        top[~np.isfinite(top)] = 0.0                        # a row with no key allowed
    p -= top
    if keep is not None:
        # exp(-inf) takes NumPy's slow path (3x the time of a finite exp): exp(0) there instead, and
        # the 0 that exp(-inf) gives written after
        np.copyto(p, 0.0, where=barred)
        np.exp(p, out=p)
        np.copyto(p, 0.0, where=barred)
    else:
        np.exp(p, out=p)
    total = p.sum(axis=-1, keepdims=True)
    if keep is not None:
        total[total == 0.0] = 1.0                           # ... gives zeros, not NaN
    p /= total
    np.matmul(p, v, out=out)


def _splits(q, k, v, keep):
    """Whether the batch axis (axis 0) may be split over threads: q, k and v share their leading axes
    and the mask is the same for every sample."""
    return q.ndim >= 3 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and (keep is None or keep.ndim <= 2)


def _forward(q, k, v, training, keep, scale):
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    p = np.empty(lead + (q.shape[-2], k.shape[-2]))
    out = _like(q, lead + (q.shape[-2], v.shape[-1]))
    if _splits(q, k, v, keep):
        over_rows(lambda *a: _softmax_rows(*a[:3], keep, scale, *a[3:]), q, k, v, p, out)
    else:
        _softmax_rows(q, k, v, keep, scale, p, out)
    return out, ((q, k, v, p, scale) if training else None)


def _grad_rows(needs, scale, g, q, k, v, p, gq, gk, gv):
    if needs[2]:
        np.matmul(np.swapaxes(p, -1, -2), g, out=gv)
    if needs[0] or needs[1]:
        ds = np.matmul(g, np.swapaxes(v, -1, -2))              # dp, then the softmax's VJP in place
        ds -= np.sum(ds * p, axis=-1, keepdims=True)
        ds *= p
        ds *= scale
        if needs[0]:
            np.matmul(ds, k, out=gq)
        if needs[1]:
            np.matmul(np.swapaxes(ds, -1, -2), q, out=gk)


def _backward(g, saved, needs):
    q, k, v, p, scale = saved
    gq, gk, gv = (_like(q, g.shape[:-1] + (q.shape[-1],)), _like(k, p.shape[:-2] + k.shape[-2:]),
                  _like(v, p.shape[:-2] + v.shape[-2:]))
    if _splits(q, k, v, None):
        over_rows(lambda *a: _grad_rows(needs, scale, *a), g, q, k, v, p, gq, gk, gv)
    else:
        _grad_rows(needs, scale, g, q, k, v, p, gq, gk, gv)
    return (_sum_to(gq, q.shape) if needs[0] else None, _sum_to(gk, k.shape) if needs[1] else None,
            _sum_to(gv, v.shape) if needs[2] else None)


def _like(a, shape):
    """An empty array of `shape` laid out in memory as `a` is when the shapes agree: q, k and v are
    usually [B, H, T, D] views of [B, T, H, D] projections, and an output or gradient in that order
    makes the layer's transposes and reshapes back to [B, T, H * D] views instead of copies."""
    return np.empty_like(a) if a.shape == shape else np.empty(shape)


def _sum_to(g, shape):
    if g is None or g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and g.shape[i + lead] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


_attention = fused("attention", _forward, _backward, 3)


def attention(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(D), masked) v: q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]."""
    q, k, v = tensor(q, "attention", "q"), tensor(k, "attention", "k"), tensor(v, "attention", "v")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ApsiError(f"attention: q {q.shape}, k {k.shape} and v {v.shape} do not fit: q and k need the "
                        "same last axis (D), k and v the same key count (Tk)")
    tq, tk = q.shape[-2], k.shape[-2]
    keep = allowed(mask, causal, tq, tk)
    if keep is not None:
        try:
            np.broadcast_shapes(keep.shape, q.shape[:-2] + (tq, tk))
        except ValueError:
            raise ApsiError(f"attention: mask of shape {keep.shape} does not broadcast to the scores "
                            f"{q.shape[:-2] + (tq, tk)} ([batch, heads, Tq, Tk])") from None
    return _attention(q, k, v, keep=keep, scale=1.0 / np.sqrt(q.shape[-1]))
