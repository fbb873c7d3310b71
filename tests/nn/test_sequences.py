# ruff: noqa: E501  (reference computations kept on one line)
"""Issue 35's sequences, curves and index finders (nn/numlib/sequences.py, nn/numlib/indices.py) against NumPy
computed here, edges included; gradients against torch.autograd float64 (cummax, trapezoid,
convolve through conv1d) and float64 finite differences (interp, which torch lacks)."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn

from .gradcheck import check_first_order, check_second_order

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
NAN, INF = np.nan, np.inf


def same(ours, theirs, rtol=0.0):
    got = ours.data if isinstance(ours, nn.Tensor) else np.asarray(ours)
    theirs = np.asarray(theirs)
    assert got.shape == theirs.shape, (got.shape, theirs.shape)
    assert np.allclose(got, theirs, rtol=rtol, atol=0, equal_nan=True), (got, theirs)


@pytest.mark.parametrize("args", [(0, 3), (0, 3, 4), (-2.5, 1.0, 7, False), (1, 2, 5, True, 2.0),
                                  (3, 0, 4), (0, 1, 0), (0, 1, 1)])
def test_logspace_matches_numpy(args):
    same(nn.logspace(*args), np.logspace(*args))


@pytest.mark.parametrize("args", [(1, 1000, 4), (-1, -1000, 4), (2.0, 0.5, 9, False), (1e-3, 1e3, 7),
                                  (5, 5, 3), (1, 2, 1)])
def test_geomspace_matches_numpy(args):
    same(nn.geomspace(*args), np.geomspace(*args))


@pytest.mark.parametrize("make", [
    lambda s, e: nn.logspace(s, e, 7, base=2.0), lambda s, e: nn.logspace(s, e, 5, endpoint=False),
    lambda s, e: nn.geomspace(s, e, 6), lambda s, e: nn.geomspace(-s, -e, 4, endpoint=False),
    lambda s, e: nn.geomspace(s, e, 1)])
def test_logspace_and_geomspace_are_differentiable_in_start_and_stop(make):
    f = lambda s, e: nn.sum(make(s, e) ** 2 * np.arange(1.0, 1.0 + make(0.7, 2.3).size))   # noqa: E731
    ends = [np.array(0.7), np.array(2.3)]
    for argnum in (0, 1):
        check_first_order(f, ends, argnum)
        check_second_order(f, ends, argnum)
        check_second_order(f, ends, argnum, 1 - argnum)


def test_tensor_ends_give_numpys_values_and_geomspace_refuses_them_as_numbers():
    same(nn.logspace(nn.array(1.0), nn.array([3.0]), 5), np.logspace(1.0, 3.0, 5))
    same(nn.geomspace(nn.array(2.0), 32, 5), np.geomspace(2.0, 32.0, 5))
    with pytest.raises(ApsiError, match="different signs"):
        nn.geomspace(nn.array(-2.0), 32)
    with pytest.raises(ApsiError, match="one-element tensor"):
        nn.logspace(nn.array([1.0, 2.0]), 3)


def test_geomspace_refuses_zero_and_a_sign_change():
    with pytest.raises(ApsiError, match="must not be 0"):
        nn.geomspace(0, 10)
    with pytest.raises(ApsiError, match="different signs"):
        nn.geomspace(-1, 10)
    with pytest.raises(ApsiError, match="num must be an int"):
        nn.logspace(0, 1, 2.5)


CM = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, NAN, 1.0, 9.0, -INF], [0.0, -1.0, -1.0, -2.0, -2.0]])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cummax_and_cummin_match_numpy_accumulate(axis):
    flat = CM.ravel() if axis is None else CM
    same(nn.cummax(CM, axis=axis), np.maximum.accumulate(flat, axis=0 if axis is None else axis))
    same(nn.cummin(CM, axis=axis), np.minimum.accumulate(flat, axis=0 if axis is None else axis))
    same(nn.cummax(np.zeros((0, 3)), axis=0), np.zeros((0, 3)))


@needs_torch
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_gradient_goes_where_torchs_does_ties_and_nan_included(name):
    w = np.random.default_rng(1).standard_normal(CM.shape)
    for axis in (0, 1):
        xt = torch.tensor(CM, requires_grad=True)
        out = getattr(torch, name)(xt, axis).values
        torch.nan_to_num(out * torch.tensor(w), posinf=0.0, neginf=0.0).sum().backward()
        finite_w = np.where(np.isfinite(getattr(nn, name)(CM, axis=axis).data), w, 0.0)
        ours = nn.grad(lambda t, a=axis, fw=finite_w: nn.nansum(getattr(nn, name)(t, axis=a) * fw))(nn.Tensor(CM))
        assert np.array_equal(ours.data, np.nan_to_num(xt.grad.numpy())), (axis, ours, xt.grad)


@pytest.mark.parametrize("n, m", [(5, 3), (6, 4), (3, 5), (1, 1), (2, 7), (7, 2)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_matches_numpy(n, m, mode):
    rng = np.random.default_rng(n * 10 + m)
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    same(nn.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-15)


def test_convolve_refuses_what_numpy_refuses():
    with pytest.raises(ApsiError, match="non-empty 1-D"):
        nn.convolve([], [1.0])
    with pytest.raises(ApsiError, match="non-empty 1-D"):
        nn.convolve(np.ones((2, 2)), [1.0])
    with pytest.raises(ApsiError, match="mode must be one of"):
        nn.convolve([1.0], [1.0], "circular")


@needs_torch
@pytest.mark.parametrize("n, m", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_gradients_and_hessian_match_torch_conv1d(n, m, mode):
    import torch.nn.functional as F

    rng = np.random.default_rng(n + 3 * m)
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    length = len(np.convolve(a, v, mode))
    w = rng.standard_normal(length)
    start = {"full": 0, "same": (min(n, m) - 1) // 2, "valid": min(n, m) - 1}[mode]

    def torch_f(at, vt):
        full = F.conv1d(at.reshape(1, 1, -1), vt.flip(0).reshape(1, 1, -1), padding=m - 1).reshape(-1)
        return (full[start:start + length] * torch.tensor(w)) ** 2

    at, vt = torch.tensor(a, requires_grad=True), torch.tensor(v, requires_grad=True)
    torch_f(at, vt).sum().backward()
    ga, gv = nn.grad(lambda x, y: nn.sum((nn.convolve(x, y, mode) * w) ** 2), (0, 1))(nn.Tensor(a), nn.Tensor(v))
    assert np.allclose(ga.data, at.grad.numpy(), rtol=1e-12) and np.allclose(gv.data, vt.grad.numpy(), rtol=1e-12)
    ours = nn.hessian(lambda x: nn.sum((nn.convolve(x, v, mode) * w) ** 2))(nn.Tensor(a)).data
    theirs = torch.autograd.functional.hessian(lambda x: torch_f(x, torch.tensor(v)).sum(), torch.tensor(a))
    assert np.allclose(ours, theirs.numpy(), rtol=1e-12, atol=1e-12)


XP = np.array([0.0, 1.0, 2.5, 4.0])
FP = np.array([1.0, -2.0, 3.0, 0.5])


@pytest.mark.parametrize("x", [2.2, [-1.0, 0.0, 0.3, 1.0, 2.5, 3.99, 4.0, 5.0, NAN], [[0.5, 3.0], [4.0, -INF]],
                               [INF, -INF]])
@pytest.mark.parametrize("lr", [(None, None), (-9.0, 9.0)])
def test_interp_matches_numpy(x, lr):
    same(nn.interp(x, XP, FP, *lr), np.interp(x, XP, FP, *lr))


def test_interp_edge_cases_match_numpy():
    same(nn.interp([0.5, 1.0, 2.0], [1.0], [7.0]), np.interp([0.5, 1.0, 2.0], [1.0], [7.0]))
    fp = np.array([0.0, INF, 1.0, 1.0])                  # an inf in fp: NumPy's NaN fallbacks
    pts = [0.0, 0.5, 1.0, 1.7, 2.5, 3.0, 4.0]
    same(nn.interp(pts, XP, fp), np.interp(pts, XP, fp))
    pts = [-370.0, -180.0, -10.0, 0.0, 10.0, 95.0, 180.0, 200.0, 725.0]
    xp, fp = [190.0, -190.0, 350.0, -350.0], [5.0, 10.0, 3.0, 4.0]
    same(nn.interp(pts, xp, fp, period=360), np.interp(pts, xp, fp, period=360), rtol=1e-15)
    with pytest.raises(ApsiError, match="period must not be 0"):
        nn.interp(pts, xp, fp, period=0)
    with pytest.raises(ApsiError, match="one non-zero length"):
        nn.interp(pts, [0.0, 1.0], [1.0])


def test_interp_is_differentiable_in_x_xp_and_fp_away_from_knots():
    x = np.array([-0.5, 0.4, 1.8, 3.1, 4.5])
    f = lambda x, xp, fp: nn.sum(nn.interp(x, xp, fp) ** 2)   # noqa: E731
    for argnum in (0, 1, 2):
        check_first_order(f, [x, XP, FP], argnum)
        check_second_order(f, [x, XP, FP], argnum)


def test_interp_gradient_at_a_knot_is_the_slope_on_its_right_and_at_the_end_on_its_left():
    g = nn.grad(lambda t: nn.sum(nn.interp(t, XP, FP)))(nn.Tensor(np.array([1.0, 4.0, 0.0])))
    assert np.allclose(g.data, [(3.0 + 2.0) / 1.5, (0.5 - 3.0) / 1.5, -3.0], rtol=1e-15)


@pytest.mark.parametrize("shape, axis", [((5,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((1,), 0),
                                         ((0,), 0)])
def test_trapezoid_matches_numpy(shape, axis):
    rng = np.random.default_rng(len(shape) + axis)
    y = rng.standard_normal(shape)
    same(nn.trapezoid(y, axis=axis), np.trapezoid(y, axis=axis), rtol=1e-15)
    same(nn.trapezoid(y, dx=0.25, axis=axis), np.trapezoid(y, dx=0.25, axis=axis), rtol=1e-15)
    x1 = np.sort(rng.standard_normal(shape[axis]))
    same(nn.trapezoid(y, x1, axis=axis), np.trapezoid(y, x1, axis=axis), rtol=1e-14)
    xs = rng.standard_normal(shape)
    same(nn.trapezoid(y, xs, axis=axis), np.trapezoid(y, xs, axis=axis), rtol=1e-14)
    with pytest.raises(ApsiError, match="x must be 1-D"):
        nn.trapezoid(y, np.ones(shape[axis] + 1), axis=axis)


@needs_torch
def test_trapezoid_gradients_and_hessian_match_torch():
    rng = np.random.default_rng(0)
    y, x = rng.standard_normal((3, 6)), np.sort(rng.standard_normal(6))
    yt, xt = torch.tensor(y, requires_grad=True), torch.tensor(x, requires_grad=True)
    (torch.trapezoid(yt, xt, dim=1) ** 2).sum().backward()
    gy, gx = nn.grad(lambda a, b: nn.sum(nn.trapezoid(a, b, axis=1) ** 2), (0, 1))(nn.Tensor(y), nn.Tensor(x))
    assert np.allclose(gy.data, yt.grad.numpy(), rtol=1e-13) and np.allclose(gx.data, xt.grad.numpy(), rtol=1e-13)
    ours = nn.hessian(lambda b: nn.sum(nn.trapezoid(y, b, axis=1) ** 2))(nn.Tensor(x)).data
    theirs = torch.autograd.functional.hessian(lambda b: (torch.trapezoid(torch.tensor(y), b, dim=1) ** 2).sum(),
                                               torch.tensor(x))
    assert np.allclose(ours, theirs.numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("x", [[0.0, 2.0, 0.0, -1.0], [[1, 0, 3], [0, 0, 5]], [[True, False], [False, True]],
                               np.zeros((2, 0)), [NAN, 0.0]])
def test_nonzero_and_argwhere_match_numpy(x):
    x = np.array(x)
    for ours, theirs in zip(nn.nonzero(x), np.nonzero(x), strict=True):
        assert np.array_equal(ours.data, theirs) and ours.data.dtype == np.int64
    assert np.array_equal(nn.argwhere(x).data, np.argwhere(x))
    assert nn.argwhere(x).shape == np.argwhere(x).shape


def test_nonzero_of_a_0_d_value_is_refused_as_numpy_does_and_argwhere_follows_numpy():
    with pytest.raises(ApsiError, match="nonzero: x is 0-d"):
        nn.nonzero(3.0)
    assert nn.argwhere(3.0).shape == np.argwhere(3.0).shape == (1, 0)
    assert nn.argwhere(0.0).shape == np.argwhere(0.0).shape == (0, 0)


@pytest.mark.parametrize("bins", [[0.0, 1.0, 2.5, 4.0], [4.0, 2.5, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0]])
@pytest.mark.parametrize("right", [False, True])
def test_digitize_matches_numpy(bins, right):
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0, 9.0, NAN, INF, -INF])
    got = nn.digitize(x, bins, right)
    assert np.array_equal(got.data, np.digitize(x, bins, right)) and got.data.dtype == np.int64


def test_digitize_refuses_bins_in_no_order():
    with pytest.raises(ApsiError, match="monotonically"):
        nn.digitize([1.0], [0.0, 2.0, 1.0])
