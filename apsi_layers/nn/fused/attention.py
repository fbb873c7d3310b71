"""Scaled dot-product attention with causal and boolean masks. Composed from nn ops for now.

A query row that may attend to nothing (every key masked) gives zeros rather than NaN.
"""

import numpy as np

from .. import ops, reduce, shape
from ..tensor import as_tensor


def allowed(mask, causal, tq, tk):
    """The boolean 'may attend' array broadcastable to [B, H, Tq, Tk], or None for all."""
    keep = None
    if mask is not None:
        keep = np.asarray(mask.data if hasattr(mask, "data") else mask, dtype=bool)
    if causal:
        tri = np.tri(tq, tk, dtype=bool)
        keep = tri if keep is None else keep & tri
    return keep


def attention(q, k, v, mask=None, causal=False):
    q = as_tensor(q, "attention", "q")
    scores = ops.matmul(q, shape.swap_last(k)) * (1.0 / np.sqrt(q.shape[-1]))
    keep = allowed(mask, causal, q.shape[-2], k.shape[-2])
    if keep is None:
        return ops.matmul(reduce.softmax(scores, axis=-1), v)
    keep = np.broadcast_to(keep, scores.shape)
    any_key = keep.any(axis=-1, keepdims=True)
    scores = ops.where(keep, scores, -np.inf)
    scores = ops.where(any_key, scores, 0.0)
    p = ops.where(keep, reduce.softmax(scores, axis=-1), 0.0)
    return ops.matmul(p, v)
