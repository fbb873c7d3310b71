# ruff: noqa: E501  (the Apsi program below keeps one function per line)
"""numlib (issue 19) on the torch backend: Apsi code written with the new nn functions gives the same
values and gradients on torch tensors as on nn tensors (what fit(backend="torch") runs)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_lang import run_source  # noqa: E402
from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.torch import nn_dispatch  # noqa: E402

SOURCE = """
use nn
let e1 = fn(x) => sign(x) * x + floor(x) + ceil(x) + trunc(x) + round(x) + expm1(x) + tan(x * 0.3)
let e2 = fn(x) => arcsin(x * 0.3) + arccos(x * 0.3) + arctan(x) + sinh(x) + cosh(x) + arcsinh(x)
let e3 = fn(x) => arctanh(x * 0.3) + erf(x) + arctan2(x, 2.0) + hypot(x, 1.5) + mod(x, 0.7)
let e4 = fn(x) => log2(abs(x) + 1) + log10(abs(x) + 1) + nan_to_num(x) + where(isfinite(x), x, 0.0)
let r1 = fn(x) => prod(x, axis=1) + std(x, axis=1) + var(x, axis=1, ddof=1) + nansum(x, axis=1)
let r2 = fn(x) => nanmean(x, axis=1) + cumsum(x, axis=1)[:, 2] + cumprod(x, axis=1)[:, 1] + median(x, axis=1)
let r3 = fn(x) => quantile(x, 0.3, axis=1) + percentile(x, 70, axis=1) + diff(x, axis=1)[:, 0]
let s1 = fn(x) => sort(x, axis=1)[:, 0] + topk(x, 2, axis=1)[0][:, 1] + flip(x, 1)[:, 0] + roll(x, 1, axis=1)[:, 0]
let s2 = fn(x) => squeeze(x[:, none])[:, 0] + tile(x, [1, 2])[:, 4] + repeat(x, 2, axis=1)[:, 3]
let s3 = fn(x) => pad(x, 1)[1:3, 1] + split(x, 3, axis=1)[2][:, 0] + moveaxis(x, 0, 1)[0]
let s4 = fn(x) => astype(x, float64)[:, 0] + full_like(x, 2.0)[:, 0] + std(x, axis=1)
let r4 = fn(x) => sum(quantile(x, [0.2, 0.9], axis=[0, 1], keepdims=true)) + sum(median(x, axis=[1, 0])) + sum(percentile(x, [10, 60], axis=0))
let s5 = fn(x) => sum(pad(x, [[1, 0], [2, 1]], mode="reflect") * 1.5) + sum(pad(x, 1, mode="edge")) + sum(pad(x, 2, mode="wrap") ** 2)
let all_ops = fn(x) => sum(e1(x) + e2(x) + e3(x) + e4(x)) + sum(r1(x) + r2(x) + r3(x)) + sum(s1(x) + s2(x) + s3(x) + s4(x)) + r4(x) + s5(x)
let bools = fn(x) => [all(x > -10, axis=1), any(x > 0, axis=0), count_nonzero(x > 0, axis=1), isnan(x), isinf(x)]
"""


@pytest.fixture(scope="module")
def ns():
    nn_dispatch.install()
    return run_source(SOURCE)


def test_every_numlib_function_gives_the_same_value_and_gradient_on_torch(ns):
    x = np.random.default_rng(5).standard_normal((2, 3)) + 0.1
    f = ns["all_ops"]
    ref = f(nn.Tensor(x)).item()
    g = nn.grad(f)(nn.Tensor(x)).data
    xt = torch.tensor(x, requires_grad=True)
    got = f(xt)
    assert isinstance(got, torch.Tensor)
    assert abs(got.item() - ref) <= 1e-10 * abs(ref)
    got.backward()
    assert np.allclose(xt.grad.numpy(), g, rtol=1e-10, atol=1e-12)


def test_boolean_reductions_on_torch(ns):
    x = np.array([[1.0, -2.0, 0.0], [3.0, 4.0, -1.0]])
    ours = [np.asarray(v.data) for v in ns["bools"](nn.Tensor(x))]
    theirs = [v.numpy() for v in ns["bools"](torch.tensor(x))]
    for a, b in zip(ours, theirs, strict=True):
        assert np.array_equal(a, b)


def test_a_python_float_keeps_float64_digits_on_torch():
    # nn_dispatch._like made a float32 tensor of 0.7 before casting: mod(x, 0.7) was off by 1e-8
    nn_dispatch.install()
    got = nn.maximum(torch.tensor([0.1], dtype=torch.float64), 0.7)
    assert got.item() == 0.7


def test_nan_quantiles_on_torch_as_on_numpy(ns):
    f = run_source("use nn\nlet f = fn(x) => [median(x, axis=1), quantile(x, [0.2, 0.5], axis=1)]\n")["f"]
    x = np.array([[np.nan, 1, 2, 3, 4], [1, 2, 3, 4, 5.0]])
    for a, b, c in zip(f(nn.Tensor(x)), f(torch.tensor(x)), [np.median(x, 1), np.quantile(x, [0.2, 0.5], 1)],
                       strict=True):
        assert np.array_equal(a.data, c, equal_nan=True) and np.array_equal(b.numpy(), c, equal_nan=True)


CALLS = {"histogram": lambda t: nn.histogram(t, 3), "isin": lambda t: nn.isin(t, [1.0, 3.0]),
         "isclose": lambda t: nn.isclose(t, t + 1e-9), "allclose": lambda t: nn.allclose(t, t),
         "array_equal": lambda t: nn.array_equal(t, t),
         "unique": lambda t: nn.unique(t, return_counts=True), "searchsorted": lambda t: nn.searchsorted(t, 1.5)}


@pytest.mark.parametrize("name", list(CALLS))
def test_values_only_functions_give_numpys_answer_on_torch(name):
    """They count and compare (no gradient): on torch tensors they run NumPy's code on the host and
    return torch tensors on the same device, so both backends give the same answer."""
    nn_dispatch.install()
    data = np.array([3.0, 1.0, 2.0, 3.0, 1.0]) if name != "searchsorted" else np.array([1.0, 2.0, 3.0])
    on_numpy, on_torch = CALLS[name](nn.Tensor(data)), CALLS[name](torch.tensor(data))

    def plain(v):
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        if isinstance(v, torch.Tensor):
            return v.numpy().tolist()
        return v.data.tolist() if isinstance(v, nn.Tensor) else v

    assert plain(on_torch) == plain(on_numpy)
    assert all(isinstance(v, torch.Tensor) for v in (on_torch if isinstance(on_torch, list) else [on_torch])
               if not isinstance(v, bool))
