"""max_pool and avg_pool over N-d windows, each one op on a strided view of the padded input.

max_pool keeps each window's argmax and sends the gradient there (one bincount, or a plain
assignment when windows cannot overlap); avg_pool spreads it evenly, one strided add per offset.
In training, windows that do not overlap (max_pool2d(2), the common case) are reduced one axis at a
time over strided views (_max_by_folds): reshaping the window view copied the whole input, and argmax
over a last axis of 4 elements was slow. Same elements and argmax, bit for bit.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from .conv import _ints, _pairs, inner, out_sizes, pad, window_slice, window_view
from .record import fused, tensor


def _folds(size, stride, padding, x):
    """Windows that do not overlap, no padding, no NaN (argmax's rule for NaN differs)."""
    return (all(s >= k for s, k in zip(stride, size)) and not any(lo or hi for lo, hi in padding)
            and int(np.prod(size)) <= 255 and not np.isnan(np.sum(x)))


def _max_by_folds(x, size, stride, outs):
    """(max, argmax) of each window, found one spatial axis at a time from the last: along an axis,
    the window's k elements are k strided views, and a later one replaces the best only when strictly
    greater. That keeps the first maximum in the window's row-major order, so it is argmax's element
    exactly, and no view of every window is ever copied out."""
    best, arg = x, np.zeros((1,) * x.ndim, np.uint8)
    weight = 1
    for axis in range(x.ndim - 1, 1, -1):
        k, s, m = size[axis - 2], stride[axis - 2], outs[axis - 2]

        def along(a, j, axis=axis, s=s, m=m):
            if a.shape[axis] == 1:
                return a
            return a[(slice(None),) * axis + (slice(j, j + s * (m - 1) + 1, s),)]

        top, top_arg = along(best, 0), along(arg, 0)
        for j in range(1, k):
            cand = along(best, j)
            gt = cand > top
            top = np.where(gt, cand, top)
            if arg.size == 1 and k == 2:         # the first axis of a pair: the comparison is the index
                top_arg = gt.view(np.uint8)
            else:
                top_arg = np.where(gt, along(arg, j) + np.uint8(j * weight), top_arg)
        best, arg = top, top_arg
        weight *= k
    return best, np.broadcast_to(arg, best.shape)


def _max_forward(x, training, size, stride, padding):
    n = len(size)
    outs = out_sizes(x.shape[2:], size, stride, padding, (1,) * n)
    if training and _folds(size, stride, padding, x):
        y, arg = _max_by_folds(x, size, stride, outs)
        return y, (arg, x.shape, x.shape, outs, size, stride, padding)
    xp = pad(x, padding, -np.inf)
    flat = window_view(xp, size, stride, (1,) * n, outs, False).reshape(x.shape[:2] + outs + (-1,))
    if not training:
        return flat.max(axis=-1), None
    arg = flat.argmax(axis=-1)
    y = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    return y, (arg, x.shape, xp.shape, outs, size, stride, padding)


def _max_backward(g, saved, needs):
    arg, xshape, pshape, outs, size, stride, padding = saved
    n = len(size)
    # Flat position in the padded input of each window's maximum.
    pstrides = np.cumprod((1,) + pshape[::-1])[::-1][1:]          # element strides of the padded array
    kernel_at = np.unravel_index(arg, size)
    pos = sum(np.arange(m).reshape((m,) + (1,) * (n - 1 - i)) * (s * ps)
              for i, (m, s, ps) in enumerate(zip(outs, stride, pstrides[2:])))
    pos = pos + (np.arange(pshape[0]) * pstrides[0]).reshape((-1,) + (1,) * (n + 1))
    pos = pos + (np.arange(pshape[1]) * pstrides[1]).reshape((-1,) + (1,) * n)
    for k, ps in zip(kernel_at, pstrides[2:]):
        pos = pos + k * ps
    total = int(np.prod(pshape))
    if all(s >= k for s, k in zip(stride, size)):                  # windows do not overlap
        gxp = np.zeros(total)
        gxp[pos.ravel()] = g.ravel()
    else:
        gxp = np.bincount(pos.ravel(), weights=g.ravel(), minlength=total)
    gxp = gxp.reshape(pshape)
    return (gxp[inner(xshape, padding)] if pshape != xshape else gxp),


def _avg_forward(x, training, size, stride, padding):
    n = len(size)
    outs = out_sizes(x.shape[2:], size, stride, padding, (1,) * n)
    xp = pad(x, padding)
    view = window_view(xp, size, stride, (1,) * n, outs, False)
    y = view.sum(axis=tuple(range(-n, 0))) * (1.0 / int(np.prod(size)))
    return y, ((x.shape, xp.shape, outs, size, stride, padding) if training else None)


def _avg_backward(g, saved, needs):
    xshape, pshape, outs, size, stride, padding = saved
    share = g * (1.0 / int(np.prod(size)))
    gxp = np.zeros(pshape)
    for offset in np.ndindex(*size):
        gxp[window_slice(offset, (1,) * len(size), stride, outs)] += share
    return (gxp[inner(xshape, padding)] if pshape != xshape else gxp),


_max = fused("max_pool", _max_forward, _max_backward, 1)
_avg = fused("avg_pool", _avg_forward, _avg_backward, 1)


def _args(fn, x, size, stride, padding):
    x = tensor(x, fn)
    n = x.ndim - 2
    if n < 1:
        raise ApsiError(f"{fn}: input must be [batch, channels, spatial...], got shape {x.shape}")
    size, stride = _ints(size, n, fn, "size"), _ints(stride, n, fn, "stride")
    padding = _pairs(padding, n, fn)
    if any(lo > k // 2 or hi > k // 2 for (lo, hi), k in zip(padding, size)):
        raise ApsiError(f"{fn}: padding {padding} is more than half the window {size}; "
                        "a window would see only padding")
    outs = out_sizes(x.shape[2:], size, stride, padding, (1,) * n)
    if min(outs) < 1:
        raise ApsiError(f"{fn}: input {x.shape} is smaller than the window {size}")
    return x, dict(size=size, stride=stride, padding=padding)


def max_pool(x, size, stride, padding):
    """The maximum of each window of x [B, C, *spatial] (padding is -inf)."""
    x, opts = _args("max_pool", x, size, stride, padding)
    return _max(x, **opts)


def avg_pool(x, size, stride, padding):
    """The mean of each window, padding counted as zeros (torch's count_include_pad=True)."""
    x, opts = _args("avg_pool", x, size, stride, padding)
    return _avg(x, **opts)
