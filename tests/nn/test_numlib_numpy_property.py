"""numlib (issue 19): values against NumPy over random shapes, axes and keepdims (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apsi_layers import nn


@st.composite
def array_and_axis(draw, allow_list=True):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    seed = draw(st.integers(0, 2**31 - 1))
    x = np.random.default_rng(seed).standard_normal(shape).round(1)     # rounding makes ties
    nd = len(shape)
    choices = [st.none(), st.integers(-nd, nd - 1)]
    if allow_list:
        choices.append(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    axis = draw(st.one_of(*choices))
    return x, axis, draw(st.booleans())


def _np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def same(ours, theirs):
    ours = ours.data if isinstance(ours, nn.Tensor) else ours
    assert np.shape(ours) == np.shape(theirs)
    assert np.allclose(ours, theirs, rtol=1e-12, atol=1e-12, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(array_and_axis())
def test_reductions(case):
    x, axis, keep = case
    a = _np_axis(axis)
    same(nn.prod(x, axis=axis, keepdims=keep), np.prod(x, axis=a, keepdims=keep))
    same(nn.var(x, axis=axis, keepdims=keep), np.var(x, axis=a, keepdims=keep))
    same(nn.std(x, axis=axis, keepdims=keep), np.std(x, axis=a, keepdims=keep))
    same(nn.median(x, axis=axis, keepdims=keep), np.median(x, axis=a, keepdims=keep))
    q = [0.3, 0.9]
    same(nn.quantile(x, q, axis=axis, keepdims=keep), np.quantile(x, q, axis=a, keepdims=keep))
    same(nn.nansum(x, axis=axis, keepdims=keep), np.nansum(x, axis=a, keepdims=keep))
    same(nn.count_nonzero(x > 0, axis=axis, keepdims=keep), np.count_nonzero(x > 0, axis=a, keepdims=keep))
    same(nn.all(x > -1, axis=axis, keepdims=keep), np.all(x > -1, axis=a, keepdims=keep))
    same(nn.flip(x, axis=axis), np.flip(x, axis=a))


@settings(max_examples=60, deadline=None)
@given(array_and_axis(allow_list=False), st.integers(-5, 5), st.integers(0, 3))
def test_scans_and_shapes(case, shift, n):
    x, axis, _ = case
    same(nn.cumsum(x, axis=axis), np.cumsum(x, axis=axis))
    same(nn.cumprod(x, axis=axis), np.cumprod(x, axis=axis))
    same(nn.roll(x, shift, axis=axis), np.roll(x, shift, axis=axis))
    same(nn.repeat(x, n, axis=axis), np.repeat(x, n, axis=axis))
    same(nn.sort(x, axis=axis), np.sort(x, axis=axis))
    same(nn.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    if axis is not None:
        same(nn.diff(x, n=n, axis=axis), np.diff(x, n=n, axis=axis))
    same(nn.tile(x, [n, 1, 2]), np.tile(x, [n, 1, 2]))
    same(nn.pad(x, [[1, n]] * x.ndim, mode="wrap"), np.pad(x, [[1, n]] * x.ndim, mode="wrap"))
    same(nn.squeeze(x), np.squeeze(x))
