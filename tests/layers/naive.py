"""Slow, obvious NumPy versions of the fused ops: loops over every output element, the formulas as
written in torch's documentation. The op sets are checked against these."""

import itertools

import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def pad(x, padding, fill=0.0):
    return np.pad(x, ((0, 0), (0, 0)) + tuple(padding), constant_values=fill)


def out_shape(spatial, kernel, stride, padding, dilation):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(spatial, kernel, stride, padding, dilation))


def conv(x, w, b, stride, padding, dilation, groups):
    xp = pad(x, padding)
    batch, channels = x.shape[:2]
    out_ch, cg, *kernel = w.shape
    outs = out_shape(x.shape[2:], kernel, stride, padding, dilation)
    y = np.zeros((batch, out_ch) + outs)
    per_group = out_ch // groups
    for o in range(out_ch):
        grp = o // per_group
        for pos in itertools.product(*map(range, outs)):
            for off in itertools.product(*map(range, kernel)):
                at = tuple(p * s + k * d for p, s, k, d in zip(pos, stride, off, dilation))
                patch = xp[(slice(None), slice(grp * cg, (grp + 1) * cg)) + at]
                y[(slice(None), o) + pos] += patch @ w[(o, slice(None)) + off]
        if b is not None:
            y[:, o] += b[o]
    return y


def pool(x, size, stride, padding, reduce, fill):
    xp = pad(x, padding, fill)
    outs = out_shape(x.shape[2:], size, stride, padding, (1,) * len(size))
    y = np.zeros(x.shape[:2] + outs)
    for pos in itertools.product(*map(range, outs)):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, stride, size))
        y[(slice(None), slice(None)) + pos] = reduce(xp[(slice(None), slice(None)) + window].reshape(
            x.shape[:2] + (-1,)), axis=-1)
    return y


def lstm(x, h, c, w_ih, w_hh, b_ih, b_hh, mask=None):
    H = w_hh.shape[1]
    ys = []
    for t in range(x.shape[1]):
        z = x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f = sigmoid(z[:, :H]), sigmoid(z[:, H:2 * H])
        g, o = np.tanh(z[:, 2 * H:3 * H]), sigmoid(z[:, 3 * H:])
        c2 = f * c + i * g
        h2 = o * np.tanh(c2)
        if mask is not None:
            keep = mask[:, t, None]
            c2, h2 = np.where(keep, c2, c), np.where(keep, h2, h)
        h, c = h2, c2
        ys.append(h)
    return np.stack(ys, 1), h, c


def gru(x, h, w_ih, w_hh, b_ih, b_hh, mask=None):
    H = w_hh.shape[1]
    ys = []
    for t in range(x.shape[1]):
        gi = x[:, t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        r = sigmoid(gi[:, :H] + gh[:, :H])
        z = sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        h2 = (1 - z) * n + z * h
        if mask is not None:
            h2 = np.where(mask[:, t, None], h2, h)
        h = h2
        ys.append(h)
    return np.stack(ys, 1), h


def attention(q, k, v, mask=None, causal=False):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    keep = np.ones(s.shape, dtype=bool)
    if mask is not None:
        keep &= np.broadcast_to(mask, s.shape)
    if causal:
        keep &= np.tri(s.shape[-2], s.shape[-1], dtype=bool)
    out = np.zeros(q.shape[:-1] + (v.shape[-1],))
    for idx in np.ndindex(*s.shape[:-1]):
        row = keep[idx]
        if row.any():
            e = np.exp(s[idx][row] - s[idx][row].max())
            out[idx] = (e / e.sum()) @ v[idx[:-1]][row]
    return out


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma
    return y if beta is None else y + beta


def batch_norm(x, gamma, beta, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mu, var = x.mean(axes), x.var(axes)
    y = (x - mu.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    y = y * gamma.reshape(shape) + beta.reshape(shape)
    return y, mu, var


def segment_softmax(s, index, n):
    out = np.zeros_like(s)
    for node in range(n):
        sel = index == node
        if sel.any():
            e = np.exp(s[sel] - s[sel].max(axis=0))
            out[sel] = e / e.sum(axis=0)
    return out
