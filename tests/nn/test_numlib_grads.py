"""numlib (issue 19): values and gradients against torch.autograd in float64 (relative error <= 1e-10),
second derivatives for a few, and finite differences where torch has no rule."""

import numpy as np
import pytest

from apsi_layers import nn

from .gradcheck import check_first_order, check_second_order, scalarize

torch = pytest.importorskip("torch")

rng = np.random.default_rng(19)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def unit(*shape):
    return rng.uniform(-0.9, 0.9, shape)


def distinct(*shape):
    """Well-separated values (sorting and quantiles: no ties, so the subgradient is unique)."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=float)).reshape(shape) * 0.37 + 0.1


def with_zeros(*shape):
    x = normal(*shape)
    x.flat[1] = 0.0
    x.flat[-2] = 0.0
    return x


def T(x):
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


METHODS = ("lower", "higher", "nearest", "midpoint")

# (name, nn function, torch function, input); each is compared as sum(f(x) * w) for a random w
CASES = [
    ("sign", lambda x: nn.sign(x) * x, lambda x: torch.sign(x) * x, normal(3, 4)),
    ("floor", lambda x: nn.floor(x * 3) * x, lambda x: torch.floor(x * 3) * x, normal(3, 4)),
    ("ceil", lambda x: nn.ceil(x * 3) * x, lambda x: torch.ceil(x * 3) * x, normal(3, 4)),
    ("trunc", lambda x: nn.trunc(x * 3) * x, lambda x: torch.trunc(x * 3) * x, normal(3, 4)),
    ("round", lambda x: nn.round_(x * 3) * x, lambda x: torch.round(x * 3) * x, normal(3, 4)),
    ("expm1", nn.expm1, torch.expm1, normal(3, 4)),
    ("log2", nn.log2, torch.log2, positive(3, 4)),
    ("log10", nn.log10, torch.log10, positive(3, 4)),
    ("tan", nn.tan, torch.tan, unit(3, 4)),
    ("arcsin", nn.arcsin, torch.asin, unit(3, 4)),
    ("arccos", nn.arccos, torch.acos, unit(3, 4)),
    ("arctan", nn.arctan, torch.atan, normal(3, 4)),
    ("sinh", nn.sinh, torch.sinh, normal(3, 4)),
    ("cosh", nn.cosh, torch.cosh, normal(3, 4)),
    ("arcsinh", nn.arcsinh, torch.asinh, normal(3, 4)),
    ("arctanh", nn.arctanh, torch.atanh, unit(3, 4)),
    ("erf", nn.erf, torch.erf, normal(3, 4)),
    ("arctan2", lambda x: nn.arctan2(x, x[::-1] + 0.3), lambda x: torch.atan2(x, x.flip(0) + 0.3),
     normal(3, 4)),
    ("hypot", lambda x: nn.hypot(x, x * x + 0.5), lambda x: torch.hypot(x, x * x + 0.5), normal(3, 4)),
    ("mod", lambda x: nn.mod(x * 3, x[0] + 2.5), lambda x: torch.remainder(x * 3, x[0] + 2.5), normal(3, 4)),
    ("nan_to_num", lambda x: nn.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0),
     lambda x: torch.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0), np.array([1.5, np.inf, np.nan, -3.0])),
    # reductions and scans
    ("prod", lambda x: nn.prod(x, axis=1), lambda x: torch.prod(x, 1), normal(3, 4)),
    ("prod_all", nn.prod, torch.prod, normal(2, 3)),
    ("prod_axes_keep", lambda x: nn.prod(x, axis=[0, 2], keepdims=True),
     lambda x: torch.prod(torch.prod(x, 0, keepdim=True), 2, keepdim=True), normal(2, 3, 2)),
    ("prod_zero", lambda x: nn.prod(x, axis=1), lambda x: torch.prod(x, 1), with_zeros(3, 4)),
    ("cumsum", lambda x: nn.cumsum(x, axis=1), lambda x: torch.cumsum(x, 1), normal(3, 4)),
    ("cumsum_flat", nn.cumsum, lambda x: torch.cumsum(x.reshape(-1), 0), normal(3, 4)),
    ("cumprod", lambda x: nn.cumprod(x, axis=0), lambda x: torch.cumprod(x, 0), normal(3, 4)),
    ("cumprod_zero", lambda x: nn.cumprod(x, axis=1), lambda x: torch.cumprod(x, 1), with_zeros(3, 4)),
    ("var", lambda x: nn.var(x, axis=0), lambda x: torch.var(x, 0, correction=0), normal(3, 4)),
    ("var_ddof", lambda x: nn.var(x, ddof=1), lambda x: torch.var(x), normal(3, 4)),
    ("std", lambda x: nn.std(x, axis=1, keepdims=True),
     lambda x: torch.std(x, 1, correction=0, keepdim=True), normal(3, 4)),
    ("std_ddof_axes", lambda x: nn.std(x, axis=[0, 2], ddof=1), lambda x: torch.std(x, (0, 2)),
     normal(2, 3, 4)),
    ("nansum", lambda x: nn.nansum(nn.log(x), axis=0), lambda x: torch.nansum(torch.log(x), 0),
     np.array([[1.5, -1.0], [2.0, 3.0]])),
    ("nanmean", lambda x: nn.nanmean(nn.log(x)), lambda x: torch.nanmean(torch.log(x)),
     np.array([[1.5, -1.0], [2.0, 3.0]])),
    ("diff", lambda x: nn.diff(x, n=2, axis=1), lambda x: torch.diff(x, n=2, dim=1), normal(3, 5)),
    ("median", lambda x: nn.median(x, axis=1), lambda x: torch.quantile(x, 0.5, dim=1), distinct(3, 4)),
    ("median_odd", nn.median, lambda x: torch.median(x), distinct(3, 5)),
    ("quantile", lambda x: nn.quantile(x, [0.1, 0.5, 0.93], axis=0),
     lambda x: torch.quantile(x, torch.tensor([0.1, 0.5, 0.93], dtype=torch.float64), dim=0), distinct(5, 3)),
    ("percentile_keep", lambda x: nn.percentile(x, 30, axis=1, keepdims=True),
     lambda x: torch.quantile(x, 0.3, dim=1, keepdim=True), distinct(3, 6)),
    ("quantile_methods", lambda x: nn.concat([nn.quantile(x, [0.1, 0.5, 0.8], axis=1, method=m)
                                              for m in METHODS]),
     lambda x: torch.cat([torch.quantile(x, torch.tensor([0.1, 0.5, 0.8], dtype=torch.float64), dim=1,
                                         interpolation=m) for m in METHODS]),
     distinct(3, 6)),
    # sorting
    ("sort", lambda x: nn.sort(x, axis=0), lambda x: torch.sort(x, 0).values, distinct(3, 4)),
    ("sort_desc", lambda x: nn.sort(x, descending=True), lambda x: torch.sort(x, -1, descending=True).values,
     distinct(3, 4)),
    ("topk", lambda x: nn.topk(x, 2)[0], lambda x: torch.topk(x, 2).values, distinct(3, 4)),
    ("topk_smallest", lambda x: nn.topk(x, 3, axis=0, largest=False)[0],
     lambda x: torch.topk(x, 3, dim=0, largest=False).values, distinct(4, 3)),
    # shapes
    ("squeeze", lambda x: nn.squeeze(x * x), lambda x: torch.squeeze(x * x), normal(3, 1, 4)),
    ("flip", lambda x: nn.flip(x * x, 1), lambda x: torch.flip(x * x, (1,)), normal(3, 4)),
    ("roll", lambda x: nn.roll(x * x, 2, axis=1), lambda x: torch.roll(x * x, 2, 1), normal(3, 4)),
    ("roll_flat", lambda x: nn.roll(x, -5), lambda x: torch.roll(x, -5), normal(3, 4)),
    ("tile", lambda x: nn.tile(x * x, [2, 1, 3]), lambda x: torch.tile(x * x, (2, 1, 3)), normal(3, 4)),
    ("repeat", lambda x: nn.repeat(x, [1, 0, 3], axis=0),
     lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 3]), 0), normal(3, 4)),
    ("pad", lambda x: nn.pad(x * x, [[1, 2], [0, 3]], constant_values=1.5),
     lambda x: torch.nn.functional.pad(x * x, (0, 3, 1, 2), value=1.5), normal(3, 4)),
    ("pad_reflect", lambda x: nn.pad(x * x, [[0, 0], [2, 1]], mode="reflect"),
     lambda x: torch.nn.functional.pad((x * x)[None], (2, 1), mode="reflect")[0], normal(3, 4)),
    ("split", lambda x: nn.split(x * x, [1, 3], axis=1)[1], lambda x: torch.split(x * x, [1, 2, 1], 1)[1],
     normal(3, 4)),
    ("meshgrid", lambda x: nn.meshgrid(x[0], x[1, :2] * x[1, :2])[1],
     lambda x: torch.meshgrid(x[0], x[1, :2] * x[1, :2], indexing="xy")[1], normal(2, 4)),
    ("astype", lambda x: nn.astype(x * x, "float64"), lambda x: (x * x).double(), normal(3, 4)),
    ("normal_reparam", lambda x: nn.normal(x, x * x, seed=nn.rng(3)),
     lambda x: x + x * x * torch.tensor(np.random.Generator(np.random.PCG64(np.random.SeedSequence(3)))
                                        .standard_normal((3, 4))), normal(3, 4)),
]


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


@pytest.mark.parametrize("name,f,tf,x", CASES, ids=[c[0] for c in CASES])
def test_value_and_gradient_match_torch(name, f, tf, x):
    ours = f(nn.Tensor(x.copy()))
    xt = T(x.copy())
    theirs = tf(xt)
    assert ours.shape == tuple(theirs.shape)
    assert _rel(ours.data, theirs.detach().numpy()) <= 1e-10
    w = np.random.default_rng(0).standard_normal(ours.shape)
    g = nn.grad(lambda v: nn.sum(f(v) * w))(nn.Tensor(x.copy())).data
    (gt,) = torch.autograd.grad((theirs * torch.tensor(w)).sum(), xt)
    assert _rel(g, gt.numpy()) <= 1e-10, (g, gt.numpy())


SECOND = ["tan", "arcsin", "arctanh", "erf", "sinh", "arctan2", "hypot", "prod", "prod_zero", "cumprod",
          "cumprod_zero", "cumsum", "std", "var_ddof", "median", "quantile", "sort", "topk", "pad", "roll",
          "tile"]


@pytest.mark.parametrize("name", SECOND)
def test_hessian_matches_torch(name):
    _, f, tf, x = next(c for c in CASES if c[0] == name)
    w = np.random.default_rng(1).standard_normal(np.shape(f(nn.Tensor(x)).data))
    h = nn.hessian(lambda v: nn.sum(f(v) * w))(nn.Tensor(x.copy())).data
    ht = torch.autograd.functional.hessian(lambda v: (tf(v) * torch.tensor(w)).sum(), T(x.copy()))
    assert _rel(h, ht.numpy()) <= 1e-10


def test_cumprod_gradient_at_zeros_has_no_nan():
    x = with_zeros(2, 5)
    g = nn.grad(lambda v: nn.sum(nn.cumprod(v, axis=1)))(nn.Tensor(x)).data
    assert np.all(np.isfinite(g))


def test_third_order_through_cumprod_and_std():
    # reverse over reverse over reverse: d3/dx3 of sum(cumprod) is the all-distinct-triples structure
    f = scalarize(lambda v: nn.cumprod(v, axis=0) + nn.std(v, axis=0), normal(4, 2))
    g = nn.grad(f)
    check_second_order(lambda v: nn.sum(g(v) * np.linspace(0.5, 1.5, 8).reshape(4, 2)), [normal(4, 2)], 0)


@pytest.mark.parametrize("f,x", [
    (lambda v: nn.erf(v) * nn.cumprod(v, axis=0), normal(3, 2)),
    (lambda v: nn.quantile(v * v, 0.25, axis=0), distinct(5, 2)),
    (lambda v: nn.pad(v, 1, mode="symmetric") * 2.0, normal(2, 3)),
], ids=["erf_cumprod", "quantile", "pad_symmetric"])
def test_against_finite_differences(f, x):
    check_first_order(scalarize(f, x), [x], 0)
    check_second_order(scalarize(f, x), [x], 0)


# The numlib rules in vjps.RULES, each checked above by a case of the same name (test_vjps counts them)
RULES_COVERED = {"sign", "floor", "ceil", "trunc", "round", "expm1", "log2", "log10", "tan", "arcsin",
                 "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh", "erf", "nan_to_num", "arctan2",
                 "hypot", "mod", "cumsum", "cumprod", "prod"}


def test_every_numlib_rule_has_a_torch_case():
    assert RULES_COVERED <= {c[0] for c in CASES}


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods_match_numpy(method):
    x = np.random.default_rng(1).standard_normal((4, 7))
    for q in [0.0, 0.1, 0.25, 0.5, 0.77, 1.0]:
        ours = nn.quantile(x, q, axis=1, method=method).data
        assert np.allclose(ours, np.quantile(x, q, axis=1, method=method), rtol=1e-14, atol=0)
    ours = nn.percentile(x, [5, 95], method=method).data
    assert np.allclose(ours, np.percentile(x, [5, 95], method=method), rtol=1e-14, atol=0)


def test_cumprod_gradient_with_many_zeros_matches_torch_and_stays_linear():
    # several zeros per slice, adjacent ones, a slice without any; then a length (10**5) whose
    # n x n pair form would need 80 GB: the first-order rule must not build it
    x = rng.uniform(0.8, 1.2, (3, 40))
    x[0, [3, 4, 20]] = 0.0
    x[1, 39] = 0.0
    w = rng.standard_normal(x.shape)
    g = nn.grad(lambda v: nn.sum(nn.cumprod(v, axis=1) * w))(nn.Tensor(x)).data
    xt = T(x)
    (gt,) = torch.autograd.grad((torch.cumprod(xt, 1) * torch.tensor(w)).sum(), xt)
    assert _rel(g, gt.numpy()) <= 1e-10
    long = rng.uniform(0.9, 1.1, 100_000)
    long[[10, 500, 70_000]] = 0.0
    g = nn.grad(lambda v: nn.sum(nn.cumprod(v)))(nn.Tensor(long)).data
    assert np.all(np.isfinite(g)) and np.all(g[11:] == 0.0) and g[10] != 0.0
