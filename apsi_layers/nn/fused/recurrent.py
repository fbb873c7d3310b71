"""LSTM and GRU over a whole sequence (torch's formulas and gate order). Composed from nn ops for now."""

import numpy as np

from .. import ops, shape
from ..tensor import as_tensor


def _proj(x, w, b):
    y = ops.matmul(x, shape.transpose(w, (1, 0)))
    return y if b is None else y + b


def _keep(mask, t):
    return None if mask is None else np.asarray(mask.data if hasattr(mask, "data") else mask,
                                                dtype=bool)[:, t, None]


def lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, mask=None):
    x = as_tensor(x, "lstm")
    hidden = w_hh.shape[1]
    h, c, ys = h0, c0, []
    for t in range(x.shape[1]):
        gates = _proj(x[:, t], w_ih, b_ih) + _proj(h, w_hh, b_hh)
        i = ops.sigmoid(gates[:, :hidden])
        f = ops.sigmoid(gates[:, hidden:2 * hidden])
        g = ops.tanh(gates[:, 2 * hidden:3 * hidden])
        o = ops.sigmoid(gates[:, 3 * hidden:])
        c_new = f * c + i * g
        h_new = o * ops.tanh(c_new)
        keep = _keep(mask, t)
        if keep is not None:
            c_new = ops.where(keep, c_new, c)
            h_new = ops.where(keep, h_new, h)
        h, c = h_new, c_new
        ys.append(h)
    return shape.stack(ys, axis=1), h, c


def gru(x, h0, w_ih, w_hh, b_ih, b_hh, mask=None):
    x = as_tensor(x, "gru")
    hidden = w_hh.shape[1]
    h, ys = h0, []
    for t in range(x.shape[1]):
        gi = _proj(x[:, t], w_ih, b_ih)
        gh = _proj(h, w_hh, b_hh)
        r = ops.sigmoid(gi[:, :hidden] + gh[:, :hidden])
        z = ops.sigmoid(gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
        n = ops.tanh(gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
        h_new = (1.0 - z) * n + z * h
        keep = _keep(mask, t)
        if keep is not None:
            h_new = ops.where(keep, h_new, h)
        h = h_new
        ys.append(h)
    return shape.stack(ys, axis=1), h
