"""The fast paths of the fused conv and max_pool ops give bit-for-bit what their general paths give
(values, the argmax each window keeps, gradients), ties and signed zeros included."""

import importlib

import numpy as np
import pytest

pool = importlib.import_module("apsi_layers.nn.fused.pool")
conv = importlib.import_module("apsi_layers.nn.fused.conv")


def _tied(rng, shape):
    """Values with many ties: relu'd small integers, signed zeros among them."""
    x = np.maximum(rng.integers(-3, 4, shape).astype(float), 0.0)
    x[rng.random(shape) < 0.1] = -0.0
    return x


@pytest.mark.parametrize("shape,size,stride", [
    ((4, 3, 28, 28), (2, 2), (2, 2)), ((2, 2, 7, 9), (2, 2), (2, 2)), ((2, 3, 9, 10), (3, 2), (3, 2)),
    ((2, 2, 11), (3,), (4,)), ((1, 2, 6, 4, 8), (2, 2, 2), (2, 2, 2)), ((2, 1, 8, 8), (2, 3), (3, 3)),
])
def test_max_pool_folds_match_the_general_path(shape, size, stride, monkeypatch):
    rng = np.random.default_rng(0)
    padding = ((0, 0),) * len(size)
    for x in (_tied(rng, shape), rng.standard_normal(shape)):
        assert pool._folds(size, stride, padding, x)
        y, saved = pool._max_forward(x, True, size, stride, padding)
        assert saved[0].dtype == np.uint8                      # the folded path ran
        g = rng.standard_normal(y.shape)
        (gx,) = pool._max_backward(g, saved, (True,))
        with monkeypatch.context() as m:
            m.setattr(pool, "_folds", lambda *a: False)
            y0, saved0 = pool._max_forward(x, True, size, stride, padding)
            (gx0,) = pool._max_backward(g, saved0, (True,))
        assert y.shape == y0.shape and np.array_equal(y, y0)
        assert np.array_equal(np.signbit(y), np.signbit(y0))
        assert np.array_equal(saved[0], saved0[0])
        assert np.array_equal(gx, gx0) and np.array_equal(np.signbit(gx), np.signbit(gx0))


def test_max_pool_with_nan_or_overlap_takes_the_general_path():
    x = np.ones((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    assert not pool._folds((2, 2), (2, 2), ((0, 0), (0, 0)), x)
    assert not pool._folds((3, 3), (2, 2), ((0, 0), (0, 0)), np.ones((1, 1, 4, 4)))
    assert not pool._folds((2, 2), (2, 2), ((1, 1), (0, 0)), np.ones((1, 1, 4, 4)))


@pytest.mark.parametrize("xshape,wshape,padding,dilation,groups", [
    ((8, 1, 28, 28), (16, 1, 3, 3), ((1, 1), (1, 1)), (1, 1), 1),
    ((8, 16, 14, 14), (32, 16, 3, 3), ((1, 1), (1, 1)), (1, 1), 1),
    ((3, 4, 9, 7), (6, 2, 3, 2), ((2, 0), (1, 3)), (2, 1), 2),
    ((2, 3, 12), (5, 3, 4), ((1, 2),), (2,), 1),
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), ((1, 1), (0, 2), (1, 0)), (1, 1, 1), 1),
    ((4, 3, 6, 6), (2, 3, 1, 1), ((0, 0), (0, 0)), (1, 1), 1),
])
def test_conv_input_gradient_at_stride_1_matches_col2im(xshape, wshape, padding, dilation, groups):
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
