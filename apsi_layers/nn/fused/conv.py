"""conv: N-d convolution as one op. Forward: im2col through a strided view of the padded input (no
Python loop over positions) and one GEMM; backward: two GEMMs and col2im, one strided add per kernel
offset. Stride, dilation, groups and asymmetric padding are all in the view's strides and shapes.

Layout: the columns are [C * prod(kernel), B * positions], so the weight [O, C/groups * prod(kernel)]
multiplies them in one GEMM per group (one GEMM in all without groups).
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided

from apsi_lang.errors import ApsiError

from .batch_threads import copy_over_batch, over_batch
from .record import fused, tensor


def out_sizes(spatial, kernel, stride, padding, dilation):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(spatial, kernel, stride, padding, dilation))


def pad(x, padding, fill=0.0):
    """x [B, C, *spatial] with ((lo, hi), ...) added around the spatial axes."""
    if not any(lo or hi for lo, hi in padding):
        return x
    shape = x.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding))
    out = np.full(shape, fill) if fill else np.zeros(shape)
    out[inner(x.shape, padding)] = x
    return out


def inner(shape, padding):
    """The index of the unpadded part inside the padded array."""
    return (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(shape[2:], padding))


def window_view(xp, kernel, stride, dilation, outs, kernel_first):
    """A strided view of the padded input: [C, *kernel, B, *outs] (kernel_first) or [B, C, *outs, *kernel]."""
    sb, sc, *ss = xp.strides
    kstrides = tuple(s * d for s, d in zip(ss, dilation))
    ostrides = tuple(s * st for s, st in zip(ss, stride))
    batch, channels = xp.shape[:2]
    if kernel_first:
        return as_strided(xp, (channels, *kernel, batch, *outs), (sc, *kstrides, sb, *ostrides),
                          writeable=False)
    return as_strided(xp, (batch, channels, *outs, *kernel), (sb, sc, *ostrides, *kstrides), writeable=False)


def window_slice(offset, dilation, stride, outs):
    """The index of one kernel offset's input elements (one per output position) in the padded input."""
    return (slice(None), slice(None)) + tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                                              for o, d, s, m in zip(offset, dilation, stride, outs))


def _forward(x, w, b, training, stride, padding, dilation, groups):
    batch = x.shape[0]
    out_ch, kernel = w.shape[0], w.shape[2:]
    outs = out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    xp = pad(x, padding)
    positions = batch * int(np.prod(outs))
    view = window_view(xp, kernel, stride, dilation, outs, True)                   # [C, *K, B, *outs]
    cols = copy_over_batch(np.empty(view.shape, view.dtype), view, 1 + len(kernel))  # the im2col copy
    cols = cols.reshape(-1, positions)
    wg = w.reshape(groups, out_ch // groups, -1)
    if groups == 1:
        y_cb = wg[0] @ cols
    else:
        y_cb = np.matmul(wg, cols.reshape(groups, -1, positions)).reshape(out_ch, positions)
    y_cb = np.moveaxis(y_cb.reshape((out_ch, batch) + outs), 0, 1)                  # [B, O, *outs] view
    y = np.empty(y_cb.shape, y_cb.dtype)

    def to_batch_first(lo, hi):
        y[lo:hi] = y_cb[lo:hi]
        if b is not None:
            y[lo:hi] += b.reshape((out_ch,) + (1,) * len(outs))

    over_batch(to_batch_first, batch, y.nbytes)
    saved = (cols, wg, w.shape, x.shape, xp.shape, outs, stride, padding, dilation) if training else None
    return y, saved


def _backward(g, saved, needs):
    cols, wg, wshape, xshape, pshape, outs, stride, padding, dilation = saved
    groups, positions = wg.shape[0], cols.shape[1]
    gy = np.empty((g.shape[1], g.shape[0]) + outs, g.dtype)                      # [O, B, *outs]
    copy_over_batch(gy, np.moveaxis(g, 1, 0), 1)
    gy = gy.reshape(groups, -1, positions)
    gx = gw = gb = None
    if needs[1]:
        cg = cols.reshape(groups, -1, positions)
        gw = np.matmul(gy, cg.transpose(0, 2, 1)).reshape(wshape)
    if needs[2]:
        gb = g.sum(axis=(0,) + tuple(range(2, g.ndim)))
    if needs[0] and all(st == 1 for st in stride):
        gx = _input_grad_stride1(gy, wg, wshape, xshape, pshape, outs, padding, dilation)
    elif needs[0]:
        gcols = np.matmul(wg.transpose(0, 2, 1), gy)                             # [groups, C/g*K, B*P]
        gcols = gcols.reshape((xshape[1],) + wshape[2:] + (xshape[0],) + outs)    # [C, *K, B, *outs]
        gxp = np.zeros(pshape)
        for offset in np.ndindex(*wshape[2:]):
            gxp[window_slice(offset, dilation, stride, outs)] += np.swapaxes(gcols[(slice(None),) + offset],
                                                                              0, 1)
        gx = gxp[inner(xshape, padding)] if pshape != xshape else gxp
    return gx, gw, gb


def _input_grad_stride1(gy, wg, wshape, xshape, pshape, outs, padding, dilation):
    """The input's gradient when the stride is 1, without col2im's many short strided adds; gy is the
    output's gradient as [groups, O/groups, B * positions].

    The output's gradient is laid on a grid as wide as the padded input (zeros beyond the outputs), so
    that within an image, flattened, a kernel offset is one constant shift; the GEMM's rows come in
    (offset, channel) order. When the grid can also be as tall as the padded input (the kernel is small
    next to the image), the shift is the same across images too, and an offset's whole contribution
    is one add of long contiguous rows: real contributions stay inside their own image, and only the
    grid's extra positions, whose gradient is zero, spill into the next one. Otherwise (a large kernel:
    a full-height grid would multiply the GEMM) the grid has only the output's rows and each image is
    added on its own row. Each element still receives its contributions in kernel-offset order,
    starting from zero, as in the general path; the extra positions add +0.0, which changes no value
    (only a sum of exactly -0.0 would read +0.0). The copies and adds run over parts of the batch at
    once (each part adds into its own images only)."""
    groups, per_group = wg.shape[0], wg.shape[1]
    batch, channels, kernel = xshape[0], xshape[1], wshape[2:]
    offsets, in_group = int(np.prod(kernel)), channels // groups
    size = int(np.prod(pshape[2:]))
    rows = pshape[2] if 2 * pshape[2] <= 3 * outs[0] else outs[0]
    grid = _on_grid(gy.reshape((groups * per_group, batch) + outs), (rows,) + pshape[3:])
    cells = grid[0, 0].size
    wt = wg.reshape(groups, per_group, in_group, offsets).transpose(0, 3, 2, 1)
    gcols = np.matmul(wt.reshape(groups, offsets * in_group, per_group),
                      grid.reshape(groups, per_group, batch * cells)).reshape(groups, offsets, in_group, -1)
    pstrides = np.cumprod((1,) + pshape[:1:-1])[::-1][1:]   # element strides of the padded spatial axes
    shifts = [int(sum(o * d * ps for o, d, ps in zip(offset, dilation, pstrides)))
              for offset in np.ndindex(*kernel)]
    if cells == size:
        acc = _add_shifted_across_images(gcols, shifts, batch, size)
    else:
        acc = _add_shifted_per_image(gcols, shifts, batch, cells, max(size, cells + max(shifts)))[..., :size]
    gxp = acc.reshape((channels, batch) + pshape[2:])
    return np.moveaxis(gxp[(slice(None), slice(None)) + tuple(slice(lo, lo + m) for m, (lo, _)
                                                               in zip(xshape[2:], padding))], 0, 1)


def _on_grid(g, grid_shape):
    """g [O, B, *outs] placed at the start of a zero grid [O, B, *grid_shape]."""
    outs = g.shape[2:]
    grid = np.empty(g.shape[:2] + tuple(grid_shape), g.dtype)

    def lay(lo, hi):
        part = grid[:, lo:hi]
        for axis, m in enumerate(outs):      # zeros beyond the outputs, axis by axis
            part[(slice(None), slice(None)) + tuple(slice(0, k) for k in outs[:axis]) + (slice(m, None),)] = 0
        part[(slice(None), slice(None)) + tuple(slice(0, m) for m in outs)] = g[:, lo:hi]

    over_batch(lay, g.shape[1], grid.nbytes)
    return grid


def _add_shifted_across_images(gcols, shifts, batch, size):
    """acc [groups, C/groups, B * size]: each offset's columns added at its shift, all images at once."""
    acc = np.empty(gcols.shape[:1] + gcols.shape[2:3] + (batch * size,), gcols.dtype)

    def add_offsets(lo, hi):
        # offset 0 has shift 0: 0.0 + its contribution, as adding to zeros would give (-0.0 -> +0.0)
        np.add(gcols[:, 0, :, lo * size:hi * size], 0.0, out=acc[:, :, lo * size:hi * size])
        for k, shift in enumerate(shifts[1:], 1):
            start = max(lo * size, shift)
            if start < hi * size:
                acc[:, :, start:hi * size] += gcols[:, k, :, start - shift:hi * size - shift]

    over_batch(add_offsets, batch, acc.nbytes)
    return acc


def _add_shifted_per_image(gcols, shifts, batch, cells, block):
    """acc [groups, C/groups, B, block]: each offset's columns added at its shift, image by image."""
    acc = np.zeros(gcols.shape[:1] + gcols.shape[2:3] + (batch, block), gcols.dtype)
    per_image = gcols.reshape(gcols.shape[:3] + (batch, cells))

    def add_offsets(lo, hi):
        for k, shift in enumerate(shifts):
            acc[:, :, lo:hi, shift:shift + cells] += per_image[:, k, :, lo:hi]

    over_batch(add_offsets, batch, acc.nbytes)
    return acc


_conv = fused("conv", _forward, _backward, 3)


def _ints(value, n, fn, arg):
    t = (value,) * n if isinstance(value, int) else tuple(value)
    if len(t) != n or not all(isinstance(v, int) and v >= 1 for v in t):
        raise ApsiError(f"{fn}: {arg} must be {n} positive int(s), one per spatial axis, got {value!r}")
    return t


def _pairs(value, n, fn):
    try:
        pairs = tuple((int(lo), int(hi)) for lo, hi in value)
    except (TypeError, ValueError):
        pairs = ()
    if len(pairs) != n or any(lo < 0 or hi < 0 for lo, hi in pairs):
        raise ApsiError(f"{fn}: padding must be {n} (before, after) pair(s) of ints >= 0, got {value!r}")
    return pairs


def conv(x, w, b, stride, padding, dilation, groups):
    """x [B, C, *spatial] convolved (cross-correlated, as torch does) with w [O, C/groups, *kernel]."""
    x, w, b = tensor(x, "conv", "x"), tensor(w, "conv", "w"), tensor(b, "conv", "b")
    n = w.ndim - 2
    if n < 1 or x.ndim != n + 2:
        raise ApsiError(f"conv: input {x.shape} and weight {w.shape} do not fit: a {n}-d convolution "
                        f"takes input [batch, channels, {n} spatial axes]")
    stride, dilation = _ints(stride, n, "conv", "stride"), _ints(dilation, n, "conv", "dilation")
    padding = _pairs(padding, n, "conv")
    if not isinstance(groups, int) or groups < 1 or x.shape[1] != w.shape[1] * groups or w.shape[0] % groups:
        raise ApsiError(f"conv: input has {x.shape[1]} channels but weight {w.shape} with groups={groups} "
                        f"expects {w.shape[1] * groups} (and out channels divisible by groups)")
    if b is not None and b.shape != (w.shape[0],):
        raise ApsiError(f"conv: bias has shape {b.shape}, expected ({w.shape[0]},)")
    outs = out_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation)
    if min(outs) < 1:
        raise ApsiError(f"conv: input {x.shape} is too small for kernel {w.shape[2:]} (dilation "
                        f"{dilation}, padding {padding}): the output would be {outs}")
    return _conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
