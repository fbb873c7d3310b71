"""conv: N-d convolution (stride, dilation, groups, asymmetric padding). Composed from nn ops for now."""

import numpy as np

from .. import ops, shape
from ..tensor import as_tensor


def out_size(n, k, stride, lo, hi, dilation=1):
    return (n + lo + hi - dilation * (k - 1) - 1) // stride + 1


def pad(x, padding, fill=0.0):
    """x [B, C, *spatial] padded by ((lo, hi), ...) per spatial dim (differentiable)."""
    if not any(lo or hi for lo, hi in padding):
        return x
    inner = tuple(slice(lo, lo + n) for (lo, _), n in zip(padding, x.shape[2:]))
    full = x.shape[:2] + tuple(n + lo + hi for (lo, hi), n in zip(padding, x.shape[2:]))
    out = shape.index_add(x, (slice(None), slice(None)) + inner, full)
    if fill:
        border = np.full(full, fill)
        border[(slice(None), slice(None)) + inner] = 0.0
        out = out + border
    return out


def windows(x, size, stride, padding, dilation, fill=0.0):
    """[B, C, prod(size), *out]: every kernel offset's strided view of the padded input."""
    xp = pad(x, padding, fill)
    outs = [out_size(n, k, s, lo, hi, d) for n, k, s, (lo, hi), d
            in zip(x.shape[2:], size, stride, padding, dilation)]
    views = []
    for offset in np.ndindex(*size):
        index = tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                      for o, d, s, m in zip(offset, dilation, stride, outs))
        views.append(xp[(slice(None), slice(None)) + index])
    return shape.stack(views, axis=2), outs


def conv(x, w, b, stride, padding, dilation, groups):
    x, w = as_tensor(x, "conv", "x"), as_tensor(w, "conv", "w")
    batch, channels = x.shape[:2]
    out_ch, kernel = w.shape[0], w.shape[2:]
    cols, outs = windows(x, kernel, stride, padding, dilation)
    ksize = int(np.prod(kernel))
    cols = shape.reshape(cols, (batch, groups, channels // groups * ksize, int(np.prod(outs))))
    wr = shape.reshape(w, (groups, out_ch // groups, channels // groups * ksize))
    y = shape.reshape(ops.matmul(wr, cols), (batch, out_ch) + tuple(outs))
    if b is not None:
        y = y + shape.reshape(b, (out_ch,) + (1,) * len(outs))
    return y
