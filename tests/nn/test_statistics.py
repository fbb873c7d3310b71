"""Issue 35's statistics (nn/numlib/statistics.py) against NumPy computed here: ordinary inputs and the
edges (NaN, all-NaN slices, empty, ties, inf, axis/keepdims, ddof, weights); gradients and hessians
against torch.autograd in float64 where torch has the op, finite differences elsewhere."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apsi_lang.errors import ApsiError
from apsi_layers import nn

from .gradcheck import check_first_order, check_second_order

NAN = np.nan
X = np.array([[1.5, NAN, -2.0, 4.0, 4.0],
              [NAN, NAN, NAN, NAN, NAN],
              [0.5, 3.0, np.inf, -1.0, 2.0],
              [7.0, 7.0, 7.0, NAN, 1.0]])
AXES = [None, 0, 1, -1, [0, 1]]


def quiet(fn, *args, **kwargs):
    """NumPy's result with its all-NaN / degrees-of-freedom warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def same(ours, theirs, rtol=1e-15):
    got = ours.data if isinstance(ours, nn.Tensor) else np.asarray(ours)
    theirs = np.asarray(theirs)
    assert got.shape == theirs.shape, (got.shape, theirs.shape)
    assert np.allclose(got, theirs, rtol=rtol, atol=0, equal_nan=True), (got, theirs)


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_nan_extremes_match_numpy(name, axis, keepdims):
    ours = getattr(nn, name)(X, axis=axis, keepdims=keepdims)
    same(ours, quiet(getattr(np, name), X, axis=np_axis(axis), keepdims=keepdims), rtol=0)


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nan_arg_extremes_match_numpy_and_refuse_an_all_nan_slice(name):
    ok = np.delete(X, 1, axis=0)
    for axis in (None, 1, 0):
        got = getattr(nn, name)(ok, axis=axis)
        assert np.array_equal(got.data, getattr(np, name)(ok, axis=axis)) and got.data.dtype == np.int64
    assert np.array_equal(getattr(nn, name)(ok, axis=1, keepdims=True).data,
                          getattr(np, name)(ok, axis=1, keepdims=True))
    with pytest.raises(ApsiError, match=f"{name}: a slice along axis=1 is all NaN"):
        getattr(nn, name)(X, axis=1)
    with pytest.raises(ValueError):                   # NumPy refuses the same input
        getattr(np, name)(X, axis=1)


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("ddof", [0, 1, 3])
def test_nan_spread_matches_numpy(name, axis, ddof):
    finite = np.where(np.isinf(X), 5.0, X)
    for keepdims in (False, True):
        ours = getattr(nn, name)(finite, axis=axis, ddof=ddof, keepdims=keepdims)
        same(ours, quiet(getattr(np, name), finite, axis=np_axis(axis), ddof=ddof, keepdims=keepdims),
             rtol=1e-14)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_nanmedian_matches_numpy(axis, keepdims):
    ours = nn.nanmedian(X, axis=axis, keepdims=keepdims)
    same(ours, quiet(np.nanmedian, X, axis=np_axis(axis), keepdims=keepdims), rtol=0)


@pytest.mark.parametrize("q", [0.0, 0.3, 0.5, 1.0, [0.1, 0.25, 0.75, 0.9]])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_nanquantile_matches_numpy(q, axis, method):
    finite = np.where(np.isinf(X), 9.0, X)
    for keepdims in (False, True):
        ours = nn.nanquantile(finite, q, axis=axis, keepdims=keepdims, method=method)
        theirs = quiet(np.nanquantile, finite, q, axis=np_axis(axis), keepdims=keepdims, method=method)
        same(ours, theirs, rtol=0)


def test_nanquantile_on_random_data_matches_numpy_to_the_last_bit():
    x = np.random.default_rng(3).standard_normal((6, 37))
    x[x > 1.2] = NAN
    qs = np.linspace(0, 1, 23)
    same(nn.nanquantile(x, qs, axis=1), np.nanquantile(x, qs, axis=1), rtol=0)
    same(nn.nanmedian(x, axis=1), np.nanmedian(x, axis=1), rtol=0)


def test_nanquantile_refuses_what_numpy_refuses():
    with pytest.raises(ApsiError, match="q must be"):
        nn.nanquantile(X, 1.5)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((0, 3), 0), ((0, 3), 1), ((2, 0), 1)])
def test_empty_input_gives_numpys_nan_where_numpy_does(shape, axis):
    x = np.zeros(shape)
    for keepdims in (False, True):
        theirs = quiet(np.nanmedian, x, axis=axis, keepdims=keepdims)
        same(nn.nanmedian(x, axis=axis, keepdims=keepdims), theirs)
        same(nn.nanquantile(x, [0.2, 0.5], axis=axis, keepdims=keepdims),
             quiet(np.nanquantile, x, [0.2, 0.5], axis=axis, keepdims=keepdims))
        same(nn.nanvar(x, axis=axis, keepdims=keepdims), quiet(np.nanvar, x, axis=axis, keepdims=keepdims))
        same(nn.nanstd(x, axis=axis, ddof=1, keepdims=keepdims),
             quiet(np.nanstd, x, axis=axis, ddof=1, keepdims=keepdims))
    with pytest.raises(ApsiError, match="method must be one of"):
        nn.nanquantile(X, 0.5, method="cubic")


W2 = np.array([[1.0, 2.0, 0.5], [3.0, 0.0, 1.0]])


@pytest.mark.parametrize("axis, weights", [(None, None), (1, None), (None, W2 + 1), (0, [1.0, 3.0]),
                                           (1, [0.2, 0.0, 2.0]), ([0, 1], W2 + 0.5), (1, W2 + 1)])
def test_average_matches_numpy(axis, weights):
    a = np.array([[1.0, -4.0, 2.5], [0.5, 8.0, -1.0]])
    for keepdims in (False, True):
        ours = nn.average(a, axis=axis, weights=weights, keepdims=keepdims)
        same(ours, np.average(a, axis=np_axis(axis), weights=weights, keepdims=keepdims), rtol=1e-15)
        got, total = nn.average(a, axis=axis, weights=weights, returned=True, keepdims=keepdims)
        avg, scl = np.average(a, axis=np_axis(axis), weights=weights, returned=True, keepdims=keepdims)
        same(got, avg)
        same(total, scl)


def test_average_refuses_what_numpy_refuses():
    a = np.ones((2, 3))
    with pytest.raises(ApsiError, match="weights sum to 0"):
        nn.average(a, axis=1, weights=[1.0, -1.0, 0.0])
    with pytest.raises(ZeroDivisionError):
        np.average(a, axis=1, weights=[1.0, -1.0, 0.0])
    with pytest.raises(ApsiError, match="give axis="):
        nn.average(a, weights=[1.0, 2.0, 3.0])
    with pytest.raises(ApsiError, match=r"must have shape \(3,\)"):
        nn.average(a, axis=1, weights=[1.0, 2.0])
    assert np.isnan(nn.average([1.0, NAN]).item()) and np.isnan(np.average([1.0, NAN]))


@pytest.mark.parametrize("axis", AXES)
def test_ptp_matches_numpy(axis):
    for keepdims in (False, True):
        theirs = np.ptp(X, axis=np_axis(axis), keepdims=keepdims)
        same(nn.ptp(X, axis=axis, keepdims=keepdims), theirs, rtol=0)
    with pytest.raises(ApsiError, match="ptp: no values"):
        nn.ptp(np.zeros((2, 0)), axis=1)


M = np.array([[1.0, 2.5, -0.5, 4.0, 3.0], [2.0, 1.0, 0.0, -3.0, 5.5], [0.5, 0.5, 1.5, 2.0, -1.0]])
FW = [1, 2, 1, 3, 1]
AW = [0.5, 1.0, 2.0, 0.25, 1.0]


@pytest.mark.parametrize("kwargs", [{}, {"bias": True}, {"ddof": 2}, {"fweights": FW}, {"aweights": AW},
                                    {"fweights": FW, "aweights": AW, "ddof": 0}, {"rowvar": False},
                                    {"y": M[:2] * 2 - 1}, {"y": M.T[:, :1], "rowvar": False}])
def test_cov_and_corrcoef_match_numpy(kwargs):
    m = M.T if kwargs.get("rowvar") is False else M
    same(nn.cov(m, **kwargs), np.cov(m, **kwargs), rtol=1e-15)
    corr_kwargs = {k: v for k, v in kwargs.items() if k in ("y", "rowvar")}
    same(nn.corrcoef(m, **corr_kwargs), np.corrcoef(m, **corr_kwargs), rtol=1e-15)


def test_cov_of_one_variable_is_0_d_and_corrcoef_of_a_constant_is_nan():
    v = [1.0, 2.0, 4.0]
    same(nn.cov(v), np.cov(v))
    same(nn.corrcoef(v), np.corrcoef(v))
    with_constant = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])
    same(quiet(nn.corrcoef, with_constant), quiet(np.corrcoef, with_constant))


def test_cov_refuses_no_degrees_of_freedom_and_bad_weights():
    with pytest.raises(ApsiError, match="leave no degrees of freedom"):
        nn.cov([[1.0], [2.0]])
    with pytest.raises(ApsiError, match="fweights must hold whole numbers"):
        nn.cov(M, fweights=[1.5, 1, 1, 1, 1])
    with pytest.raises(ApsiError, match="aweights must be >= 0"):
        nn.cov(M, aweights=[-1.0, 1, 1, 1, 1])
    with pytest.raises(ApsiError, match="one weight per observation"):
        nn.cov(M, aweights=[1.0, 1.0])


# --- gradients ------------------------------------------------------------------------------------------

torch_needed = pytest.mark.torch


def _torch():
    return pytest.importorskip("torch")


def ours_grad(f, x):
    return nn.grad(lambda t: nn.nansum(f(t) * WEIGHTS(f(nn.Tensor(x)).shape)))(nn.Tensor(x)).data


def WEIGHTS(shape):
    return np.random.default_rng(11).standard_normal(shape)


def torch_grad(f, x):
    torch = _torch()
    xt = torch.tensor(x, requires_grad=True)
    out = f(xt)
    (out * torch.tensor(WEIGHTS(tuple(out.shape)))).sum().backward()
    return xt.grad.numpy()


G = np.array([[1.5, NAN, -2.0, 4.0, 4.0], [0.25, 3.0, 2.0, -1.0, 2.0], [NAN, 7.0, NAN, NAN, 1.0]])


@torch_needed
@pytest.mark.parametrize("axis", [None, 1, 0])
def test_nan_extreme_gradients_match_torch_ties_share(axis):
    torch = _torch()
    dim = tuple(range(2)) if axis is None else axis
    theirs = torch_grad(lambda t: torch.amax(torch.where(torch.isnan(t), -torch.inf, t), dim=dim), G)
    assert np.allclose(ours_grad(lambda t: nn.nanmax(t, axis=axis), G), theirs, rtol=1e-15)
    theirs = torch_grad(lambda t: torch.amin(torch.where(torch.isnan(t), torch.inf, t), dim=dim), G)
    assert np.allclose(ours_grad(lambda t: nn.nanmin(t, axis=axis), G), theirs, rtol=1e-15)


@torch_needed
def test_nanmedian_and_nanquantile_gradients_match_torch_nanquantile():
    torch = _torch()
    x = np.random.default_rng(2).standard_normal((4, 7))
    x[x > 0.8] = NAN
    x[3] = NAN                                                # an all-NaN row: value NaN, gradient 0
    for q in (0.5, 0.2, 0.9):
        ours = ours_grad(lambda t, q=q: nn.nanquantile(t, q, axis=1), x)
        theirs = torch_grad(lambda t, q=q: torch.nan_to_num(torch.nanquantile(t, q, dim=1)), x)
        assert np.allclose(ours, theirs, rtol=1e-14, atol=1e-15), q
    ours = ours_grad(lambda t: nn.nanmedian(t, axis=1), x)
    theirs = torch_grad(lambda t: torch.nan_to_num(torch.nanquantile(t, 0.5, dim=1)), x)
    assert np.allclose(ours, theirs, rtol=1e-14, atol=1e-15)


@torch_needed
@pytest.mark.parametrize("ddof", [0, 1])
def test_nanvar_and_nanstd_gradients_match_torch_on_the_values_left(ddof):
    torch = _torch()
    x = np.random.default_rng(4).standard_normal((3, 6))
    x[0, 2] = x[2, 0] = x[2, 5] = NAN

    def torch_rows(t, fn):
        return torch.stack([fn(row[~torch.isnan(row)], correction=ddof) for row in t])

    for name, fn in (("nanvar", torch.var), ("nanstd", torch.std)):
        ours = ours_grad(lambda t, name=name: getattr(nn, name)(t, axis=1, ddof=ddof), x)
        theirs = torch_grad(lambda t, fn=fn: torch_rows(t, fn), x)
        assert np.allclose(np.nan_to_num(ours), theirs, rtol=1e-13), name
        assert np.all(ours[np.isnan(x)] == 0)


@torch_needed
def test_average_ptp_cov_corrcoef_gradients_match_torch():
    torch = _torch()
    a = np.random.default_rng(6).standard_normal((3, 5))
    w = np.array([0.5, 2.0, 1.0, 0.25, 1.5])
    assert np.allclose(ours_grad(lambda t: nn.average(t, axis=1, weights=w), a),
                       torch_grad(lambda t: (t * torch.tensor(w)).sum(1) / w.sum(), a), rtol=1e-14)
    assert np.allclose(ours_grad(lambda t: nn.ptp(t, axis=0), a),
                       torch_grad(lambda t: t.amax(0) - t.amin(0), a), rtol=1e-14)
    fw, aw = np.array([1, 2, 1, 3, 1]), np.array([0.5, 1.0, 2.0, 0.25, 1.0])
    fwt, awt = torch.tensor(fw), torch.tensor(aw)
    assert np.allclose(ours_grad(lambda t: nn.cov(t, fweights=fw, aweights=aw), a),
                       torch_grad(lambda t: torch.cov(t, fweights=fwt, aweights=awt), a), rtol=1e-13)
    assert np.allclose(ours_grad(nn.corrcoef, a), torch_grad(torch.corrcoef, a), rtol=1e-12, atol=1e-15)


def test_average_gradient_reaches_the_weights():
    a = np.array([1.0, -2.0, 4.0])
    check_first_order(lambda w: nn.average(a, weights=w) ** 2, [np.array([0.5, 1.0, 2.0])], 0)
    check_second_order(lambda w: nn.average(a, weights=w) ** 2, [np.array([0.5, 1.0, 2.0])], 0)


@torch_needed
def test_cov_and_corrcoef_hessians_match_torch():
    torch = _torch()
    a = np.random.default_rng(8).standard_normal((2, 4))
    wt = np.random.default_rng(9).standard_normal((2, 2))
    for ours_f, torch_f in ((nn.cov, torch.cov), (nn.corrcoef, torch.corrcoef)):
        ours = nn.hessian(lambda t, f=ours_f: nn.sum(f(t) * wt))(nn.Tensor(a)).data
        theirs = torch.autograd.functional.hessian(lambda t, f=torch_f: (f(t) * torch.tensor(wt)).sum(),
                                                   torch.tensor(a))
        assert np.allclose(ours, theirs.numpy(), rtol=1e-11, atol=1e-12)


def test_nanvar_hessian_matches_finite_differences():
    x = np.array([1.0, 3.0, -2.0, 0.5])
    check_second_order(lambda t: nn.nanvar(t, ddof=1) + nn.nanstd(t) ** 3, [x], 0)


def test_tensor_inputs_on_the_tape_keep_nan_out_of_other_slices():
    # an all-NaN row must not poison the other rows' gradient (0 * inf would)
    x = np.array([[NAN, NAN], [1.0, 3.0]])
    g = nn.grad(lambda t: nn.nansum(nn.nanvar(t, axis=1)) + nn.nansum(nn.nanmedian(t, axis=1)))(nn.Tensor(x))
    assert np.array_equal(g.data, [[0.0, 0.0], [-0.5, 1.5]])


# --- random shapes, axes and NaN patterns (hypothesis) ----------------------------------------------------

@st.composite
def nan_array_and_axis(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = rng.standard_normal(shape).round(1)                         # rounding makes ties
    x[rng.random(shape) < draw(st.sampled_from([0.0, 0.3, 0.8]))] = NAN
    nd = len(shape)
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                          st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))
    return x, axis, draw(st.booleans()), draw(st.sampled_from([0.0, 0.2, 0.5, 0.75, 1.0]))


@settings(max_examples=80, deadline=None)
@given(nan_array_and_axis())
def test_nan_statistics_match_numpy_on_random_cases(case):
    x, axis, keep, q = case
    a = np_axis(axis)
    for name in ("nanmax", "nanmin", "nanmedian", "nanvar", "nanstd"):
        theirs = quiet(getattr(np, name), x, axis=a, keepdims=keep)
        same(getattr(nn, name)(x, axis=axis, keepdims=keep), theirs, rtol=1e-13)
    same(nn.nanvar(x, axis=axis, ddof=1, keepdims=keep), quiet(np.nanvar, x, axis=a, ddof=1, keepdims=keep),
         rtol=1e-13)
    same(nn.nanquantile(x, q, axis=axis, keepdims=keep), quiet(np.nanquantile, x, q, axis=a, keepdims=keep),
         rtol=1e-13)
    same(nn.ptp(x, axis=axis, keepdims=keep), np.ptp(x, axis=a, keepdims=keep), rtol=0)


@pytest.mark.parametrize("v", [3.0, NAN])
def test_a_single_value_reduces_as_in_numpy(v):
    for name in ("nanmax", "nanmin", "nanvar", "nanstd", "nanmedian", "ptp"):
        same(getattr(nn, name)(v), quiet(getattr(np, name), np.float64(v)), rtol=0)
    same(nn.nanquantile(v, [0.2, 0.5]), quiet(np.nanquantile, v, [0.2, 0.5]), rtol=0)
    same(nn.nanmedian(v, keepdims=True), quiet(np.nanmedian, np.array(v), keepdims=True), rtol=0)


@torch_needed
def test_nanmedian_gradient_is_torch_nanmedians_where_their_values_agree():
    # torch.nanmedian takes the lower middle value of an even count (NumPy averages the two), so
    # they are compared on rows holding an odd count of values, ties included
    torch = _torch()
    x = np.array([[3.0, NAN, 1.0, 2.0, 9.0, 5.0], [4.0, 4.0, NAN, NAN, 4.0, NAN],
                  [NAN, 7.0, NAN, NAN, NAN, NAN]])
    theirs = torch_grad(lambda t: torch.nanmedian(t, dim=1).values, x)
    ours = ours_grad(lambda t: nn.nanmedian(t, axis=1), x)
    assert np.array_equal(ours[[0, 2]], theirs[[0, 2]])
    assert ours[1].sum() == theirs[1].sum() and np.count_nonzero(ours[1]) == 1     # one of the tied 4s
