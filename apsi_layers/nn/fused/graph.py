"""Gather (take) and the graph ops scatter_add, segment_softmax, bincount. Composed from nn ops for now."""

import numpy as np

from .. import ops, shape
from ..tensor import Tensor, as_tensor


def _index(idx):
    return np.asarray(idx.data if type(idx) is Tensor else idx, dtype=np.int64)


def take(x, idx, axis=0):
    x = as_tensor(x, "take")
    return shape.getitem(x, (slice(None),) * (axis % x.ndim) + (_index(idx),))


def scatter_add(src, index, n):
    src = as_tensor(src, "scatter_add")
    return shape.index_add(src, (_index(index),), (n,) + src.shape[1:])


def segment_softmax(scores, index, n):
    scores = as_tensor(scores, "segment_softmax")
    idx = _index(index)
    top = np.full((n,) + scores.shape[1:], -np.inf)
    np.maximum.at(top, idx, scores.data)
    e = ops.exp(scores - top[idx])
    return e / take(scatter_add(e, idx, n), idx, 0)


def bincount(index, n):
    return Tensor(np.bincount(_index(index), minlength=n).astype(np.float64))
