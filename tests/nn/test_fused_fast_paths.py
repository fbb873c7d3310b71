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
