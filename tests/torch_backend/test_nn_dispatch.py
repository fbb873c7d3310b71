"""nn's functions on torch tensors: an Apsi-written loss or activation runs on the torch backend."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_lang import run_source  # noqa: E402
from apsi_lang.errors import ApsiError  # noqa: E402
from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.torch import nn_dispatch  # noqa: E402
from apsi_layers.nn.autograd import foreign  # noqa: E402

SOURCE = """
use nn
let sq = fn(p, t) => mean((p - t) * (p - t)) + 0.1 * sum(abs(p)) + max(relu(p))
let my_loss = fn(p, t) => sq(p, t) + mse(p, t) + huber(p, t) + mae(p, t)
let classes = fn(p, labels) => cross_entropy(p, labels) + bce(p, sigmoid(p)) + mean(log_softmax(p, axis=0))
let a1 = fn(x) => softplus(x) * sigmoid(x) + concat([x, x], 1)[:, :3] + reshape(x, [2, 3]) + maximum(x, 0.5)
let a2 = fn(x) => exp(x) * 2 + where(x > 0, x, tanh(x)) + transpose(transpose(x)) + clip(x, -1, 1) + gelu(x)
let a3 = fn(x) => min(x) + sum(x, axis=1, keepdims=true) + logsumexp(x) + softmax(x) + stack([x, x], 0)[1]
let a4 = fn(x) => expand_dims(x, 0)[0] + matmul(x, transpose(x)) @ x + broadcast_to(mean(x, axis=0), [2, 3])
let a5 = fn(x) => take_along(x, argmax(x, axis=1, keepdims=true), axis=1) + sqrt(abs(x)) + log(abs(x) + 1)
let act = fn(x) => a1(x) + a2(x) + a3(x) + a4(x) + a5(x) + log1p(abs(x)) + sin(x) * cos(x)
let uses_grad = fn(x) => grad(fn(y) => sum(y * y))(x)
"""


@pytest.fixture(scope="module")
def ns():
    nn_dispatch.install()
    return run_source(SOURCE)


def both(f, *arrays):
    """f on nn tensors and on torch float64 tensors: values and gradients agree."""
    ref = f(*[nn.Tensor(a) for a in arrays])
    nums = tuple(range(len(arrays)))
    grads = nn.grad(lambda *xs: nn.sum(f(*xs)), argnums=nums)(*[nn.Tensor(a) for a in arrays])
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    got = f(*xs)
    assert isinstance(got, torch.Tensor)
    assert np.allclose(got.detach().numpy(), ref.data, rtol=1e-12, atol=1e-12)
    got.sum().backward()
    for g, x in zip(grads if isinstance(grads, tuple) else (grads,), xs):
        assert np.allclose(x.grad.numpy(), g.data, rtol=1e-12, atol=1e-12)


def test_an_apsi_loss_runs_on_torch_tensors(ns):
    r = np.random.default_rng(0)
    both(ns["my_loss"], r.standard_normal((2, 3)), r.standard_normal((2, 3)))


def test_an_apsi_activation_runs_on_torch_tensors(ns):
    both(ns["act"], np.random.default_rng(1).standard_normal((2, 3)))


def test_class_losses_take_int_labels(ns):
    p = np.random.default_rng(2).standard_normal((2, 3))
    labels = np.array([0, 2])
    ref = ns["classes"](nn.Tensor(p), nn.Tensor(labels)).item()
    got = ns["classes"](torch.tensor(p), torch.tensor(labels)).item()
    assert abs(ref - got) < 1e-12


def test_a_function_without_a_torch_version_says_so(ns):
    with pytest.raises(ApsiError) as e:
        ns["uses_grad"](torch.ones(3, dtype=torch.float64))
    assert e.value.message.startswith("the torch backend has no implementation of nn.")
    assert "lambda_layer(fn, torch_fn=...)" in e.value.message


def test_shape_checks_keep_nn_meaning(ns):
    with pytest.raises(ApsiError, match="mse: pred has shape"):
        nn.mse(torch.ones(2, 3), torch.ones(3, 2))


def test_nn_tensors_are_untouched():
    nn_dispatch.install()
    assert torch.Tensor in foreign.TYPES
    x = nn.Tensor(np.arange(3.0))
    assert type(nn.exp(x)) is nn.Tensor and type(nn.mean(x)) is nn.Tensor
    assert type(nn.mse(x, x)) is nn.Tensor
    with pytest.raises(ApsiError, match="argument x must be a tensor"):
        nn.exp("text")
