"""max_pool and avg_pool over N-d windows, each one op on a strided view of the padded input.

max_pool keeps each window's argmax and sends the gradient there (one bincount, or a plain
assignment when windows cannot overlap); avg_pool spreads it evenly, one strided add per offset.

Windows that do not overlap (max_pool2d(2), the common case) take a faster path that copies nothing
out window by window: one strided view per window offset (four for 2x2). The maxima are a running
np.maximum over the views; then, per offset, a mask of the windows whose first maximum (the element
argmax picks) sits there, and the output and the gradient are moved through those masks with bitwise
ANDs. That is exact for every value (np.maximum's choice between -0.0 and 0.0 differs between its SIMD
and scalar loops; the masks pick argmax's element, sign included) and has no data-dependent branch (a
masked copy mispredicted one branch per element and was five times slower). Equality does not hold
for NaN, so a window holding NaN sends the call to the general path. Both directions run over parts
of the batch at once (batch_threads).
"""

import numpy as np

from apsi_lang.errors import ApsiError

from .batch_threads import over_batch
from .conv import _ints, _pairs, inner, out_sizes, pad, window_slice, window_view
from .record import fused, tensor


def _tiles(size, stride):
    """Whether windows cannot overlap: then each input element is in at most one window."""
    return all(s >= k for s, k in zip(stride, size))


def _offset_views(xp, size, stride, outs):
    """One strided view of xp per window offset, in row-major order: view k holds, for every window,
    its k-th element."""
    return [xp[window_slice(offset, (1,) * len(size), stride, outs)] for offset in np.ndindex(*size)]


def _first_maxima(views, top, hits):
    """hits[k] = the windows whose first maximum (the element argmax picks) sits at offset k. top holds
    the windows' maxima (signed zeros aside: equality does not see the sign), and has no NaN, so each
    window has exactly one first maximum."""
    np.equal(views[0], top, out=hits[0])
    taken = hits[0].copy()
    for v, hit in zip(views[1:-1], hits[1:-1]):
        np.greater(np.equal(v, top, out=hit), taken, out=hit)       # equal, and no earlier element was
        taken |= hit
    if len(views) > 1:
        np.logical_not(taken, out=hits[-1])                          # top is one of the elements


def _masked(a, hit):
    """a's elements where hit, +0.0 elsewhere, bit for bit (inf, NaN, -0.0 included): an AND with an
    all-ones or all-zeros integer mask."""
    bits = f"i{a.itemsize}"
    mask = hit.astype(bits)
    np.negative(mask, out=mask)
    return np.bitwise_and(a.view(bits), mask, out=mask)


def _tiles_forward(xp, size, stride, outs):
    """(y, hits) over windows that do not overlap, or None when a window holds NaN."""
    shape = xp.shape[:2] + outs
    y = np.empty(shape, xp.dtype)
    hits = [np.empty(shape, bool) for _ in range(int(np.prod(size)))]
    nan = []

    def part(lo, hi):
        views = _offset_views(xp[lo:hi], size, stride, outs)
        top = views[0]
        for v in views[1:]:
            top = np.maximum(top, v)
        if np.isnan(top).any():
            nan.append(True)
            return
        mine = [h[lo:hi] for h in hits]
        _first_maxima(views, top, mine)
        out = y[lo:hi].view(f"i{y.itemsize}")
        np.copyto(out, _masked(views[0], mine[0]))
        for v, hit in zip(views[1:], mine[1:]):
            out |= _masked(v, hit)

    over_batch(part, xp.shape[0], xp.nbytes)
    return None if nan else (y, hits)


def _tiles_backward(g, hits, pshape, size, stride, outs):
    """The gradient in the padded input: g at each window's first maximum, +0.0 elsewhere."""
    covered = all(s == k and m * k == n for s, k, m, n in zip(stride, size, outs, pshape[2:]))
    gxp = (np.empty if covered else np.zeros)(pshape, g.dtype)       # the windows write every element

    def part(lo, hi):
        bits = f"i{g.itemsize}"
        for gv, hit in zip(_offset_views(gxp[lo:hi].view(bits), size, stride, outs), hits):
            np.copyto(gv, _masked(g[lo:hi], hit[lo:hi]))

    over_batch(part, pshape[0], gxp.nbytes)
    return gxp


def _max_forward(x, training, size, stride, padding):
    n = len(size)
    outs = out_sizes(x.shape[2:], size, stride, padding, (1,) * n)
    xp = pad(x, padding, -np.inf)
    found = _tiles_forward(xp, size, stride, outs) if _tiles(size, stride) else None
    if found is not None:
        y, hits = found
        return y, (("tiles", hits, xp.shape, x.shape, outs, size, stride, padding) if training else None)
    flat = window_view(xp, size, stride, (1,) * n, outs, False).reshape(x.shape[:2] + outs + (-1,))
    if not training:
        return flat.max(axis=-1), None
    arg = flat.argmax(axis=-1)
    y = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    return y, ("argmax", arg, xp.shape, x.shape, outs, size, stride, padding)


def _max_backward(g, saved, needs):
    kind, where, pshape, xshape, outs, size, stride, padding = saved
    if kind == "tiles":
        gxp = _tiles_backward(np.asarray(g), where, pshape, size, stride, outs)
    else:
        gxp = _argmax_backward(g, where, pshape, outs, size, stride)
    return (gxp[inner(xshape, padding)] if pshape != xshape else gxp),


def _argmax_backward(g, arg, pshape, outs, size, stride):
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
    if _tiles(size, stride):
        gxp = np.zeros(total)
        gxp[pos.ravel()] = g.ravel()
    else:
        gxp = np.bincount(pos.ravel(), weights=g.ravel(), minlength=total)
    return gxp.reshape(pshape)


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
