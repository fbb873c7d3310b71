"""The fast paths of the fused conv and max_pool ops give bit-for-bit what their general paths give
(values, the element each window keeps, gradients), ties, signed zeros, inf and NaN included."""

import importlib

import numpy as np
import pytest

pool = importlib.import_module("apsi_layers.nn.fused.pool")
conv = importlib.import_module("apsi_layers.nn.fused.conv")
batch_threads = importlib.import_module("apsi_layers.nn.fused.batch_threads")


def _tied(rng, shape):
    """Values with many ties: relu'd small integers, signed zeros among them."""
    x = np.maximum(rng.integers(-3, 4, shape).astype(float), 0.0)
    x[rng.random(shape) < 0.1] = -0.0
    return x


@pytest.mark.parametrize("shape,size,stride,padding", [
    ((4, 3, 28, 28), (2, 2), (2, 2), None), ((2, 2, 7, 9), (2, 2), (2, 2), None),
    ((2, 3, 9, 10), (3, 2), (3, 2), None), ((2, 2, 11), (3,), (4,), None),
    ((1, 2, 6, 4, 8), (2, 2, 2), (2, 2, 2), None), ((2, 1, 8, 8), (2, 3), (3, 3), None),
    ((2, 3, 7, 7), (2, 2), (2, 2), ((1, 0), (0, 1))), ((2, 2, 5, 6), (1, 1), (1, 1), None),
])
@pytest.mark.parametrize("threads", [1, 3])
def test_max_pool_tiles_match_the_general_path(shape, size, stride, padding, threads, monkeypatch):
    monkeypatch.setattr(batch_threads, "MIN_BYTES", 0)           # split even these small batches
    monkeypatch.setitem(batch_threads._pool, "size", threads)
    monkeypatch.setitem(batch_threads._pool, "executor", None)
    rng = np.random.default_rng(0)
    padding = padding or ((0, 0),) * len(size)
    for x in (_tied(rng, shape), rng.standard_normal(shape), np.where(_tied(rng, shape) == 0, -np.inf, 1.0)):
        y, saved = pool._max_forward(x, True, size, stride, padding)
        assert saved[0] == "tiles"
        g = rng.standard_normal(y.shape)
        g[..., 0] = np.array([np.inf, -0.0, np.nan])[np.arange(g[..., 0].size) % 3].reshape(g[..., 0].shape)
        (gx,) = pool._max_backward(g, saved, (True,))
        inference, _ = pool._max_forward(x, False, size, stride, padding)
        with monkeypatch.context() as m:
            m.setattr(pool, "_tiles", lambda *a: False)
            y0, saved0 = pool._max_forward(x, True, size, stride, padding)
            assert saved0[0] == "argmax"
        (gx0,) = pool._max_backward(g, saved0, (True,))
        for fast in (y, inference):
            assert fast.shape == y0.shape and np.array_equal(fast, y0)
            assert np.array_equal(np.signbit(fast), np.signbit(y0))
        assert gx.shape == gx0.shape and np.array_equal(gx, gx0, equal_nan=True)
        assert np.array_equal(np.signbit(gx), np.signbit(gx0))


def test_max_pool_with_nan_or_overlap_takes_the_general_path():
    x = np.ones((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    y, saved = pool._max_forward(x, True, (2, 2), (2, 2), ((0, 0), (0, 0)))
    assert saved[0] == "argmax" and np.isnan(y[0, 0, 0, 0])
    (gx,) = pool._max_backward(np.ones(y.shape), saved, (True,))
    assert gx[0, 0, 1, 1] == 1 and gx[0, 0, :2, :2].sum() == 1           # argmax keeps the NaN
    assert pool._max_forward(np.ones((1, 1, 4, 4)), True, (3, 3), (2, 2), ((0, 0), (0, 0)))[1][0] == "argmax"


@pytest.mark.parametrize("xshape,wshape,padding,dilation,groups", [
    ((8, 1, 28, 28), (16, 1, 3, 3), ((1, 1), (1, 1)), (1, 1), 1),
    ((8, 16, 14, 14), (32, 16, 3, 3), ((1, 1), (1, 1)), (1, 1), 1),
    ((3, 4, 9, 7), (6, 2, 3, 2), ((2, 0), (1, 3)), (2, 1), 2),
    ((2, 3, 12), (5, 3, 4), ((1, 2),), (2,), 1),
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), ((1, 1), (0, 2), (1, 0)), (1, 1, 1), 1),
    ((4, 3, 6, 6), (2, 3, 1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((5, 2, 2, 2), (3, 2, 3, 3), ((2, 2), (2, 2)), (2, 2), 1),
    ((3, 2, 20), (4, 2, 15), ((0, 0),), (1,), 1),                      # large kernels: the grid keeps
    ((2, 4, 9, 8), (4, 2, 4, 3), ((1, 0), (0, 0)), (2, 2), 2),         # only the outputs' rows
])
@pytest.mark.parametrize("threads", [1, 3])
def test_conv_input_gradient_at_stride_1_matches_col2im(xshape, wshape, padding, dilation, groups, threads,
                                                         monkeypatch):
    monkeypatch.setattr(batch_threads, "MIN_BYTES", 0)
    monkeypatch.setitem(batch_threads._pool, "size", threads)
    monkeypatch.setitem(batch_threads._pool, "executor", None)
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal(xshape), rng.standard_normal(wshape), rng.standard_normal(wshape[0])
    stride = (1,) * (len(xshape) - 2)
    y, saved = conv._forward(x, w, b, True, stride, padding, dilation, groups)
    g = rng.standard_normal(y.shape)
    fast = conv._backward(g, saved, (True, True, True))
    cols, wg, wshape_, xshape_, pshape, outs, *_ = saved
    # the general path: col2im, one strided add per kernel offset
    gy = np.moveaxis(g, 1, 0).reshape(groups, -1, cols.shape[1])
    gcols = np.matmul(wg.transpose(0, 2, 1), gy).reshape((xshape[1],) + wshape[2:] + (xshape[0],) + outs)
    gxp = np.zeros(pshape)
    for offset in np.ndindex(*wshape[2:]):
        contribution = np.swapaxes(gcols[(slice(None),) + offset], 0, 1)
        gxp[conv.window_slice(offset, dilation, stride, outs)] += contribution
    general = gxp[conv.inner(xshape, padding)]
    assert fast[0].shape == general.shape and np.array_equal(fast[0], general)
    # the output and the weight's gradient: split over threads or not, the same bits
    monkeypatch.setitem(batch_threads._pool, "size", 1)
    y1, saved1 = conv._forward(x, w, b, True, stride, padding, dilation, groups)
    one = conv._backward(g, saved1, (True, True, True))
    assert np.array_equal(y, y1) and all(np.array_equal(a, c) for a, c in zip(fast, one))
    if groups == 1 and len(xshape) == 4:                  # and the output against a plain sum
        xp = np.pad(x, ((0, 0), (0, 0)) + padding)
        kh, kw = wshape[2:]
        plain = b[None, :, None, None] + sum(
            np.einsum("bchw,oc->bohw", xp[:, :, i * dilation[0]:i * dilation[0] + y.shape[2],
                                          j * dilation[1]:j * dilation[1] + y.shape[3]], w[:, :, i, j])
            for i in range(kh) for j in range(kw))
        np.testing.assert_allclose(y, plain, rtol=1e-12, atol=1e-12)


def test_layer_norm_gradient_is_the_plain_formula_bit_for_bit():
    norm = importlib.import_module("apsi_layers.nn.fused.norm")
    rng = np.random.default_rng(2)
    x, gamma, beta = rng.standard_normal((4, 5, 16)), rng.standard_normal(16), rng.standard_normal(16)
    y, saved = norm._ln_forward(x, gamma, beta, True, 1e-5)
    g = rng.standard_normal(y.shape)
    gx, _, _ = norm._ln_backward(g, saved, (True, True, True))
    xhat, inv, _ = saved
    gh = g * gamma
    plain = inv * (gh - gh.mean(axis=-1, keepdims=True) - xhat * np.mean(gh * xhat, axis=-1, keepdims=True))
    assert np.array_equal(gx, plain)


def test_a_large_kernel_keeps_the_input_gradient_small():
    """A kernel almost as long as the input: the grid keeps only the outputs' rows; as tall as the
    padded input, it made the GEMM and its result 50x larger (80 MiB here instead of under 4)."""
    import tracemalloc

    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((64, 8, 101)), rng.standard_normal((8, 8, 100))
    y, saved = conv._forward(x, w, None, True, (1,), ((0, 0),), (1,), 1)
    g = rng.standard_normal(y.shape)
    tracemalloc.start()
    try:
        gx = conv._backward(g, saved, (True, False, False))[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert gx.shape == x.shape and peak < 16 << 20, peak
