"""The torch op set against the NumPy one, op by op, in float64: outputs and gradients agree to 1e-12.

Every case runs one function `f(ops, *xs)` on both op sets; the gradients are those of
sum(output * fixed random weights) with respect to every float argument.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from layers.test_opset import CONVS, MASK, PAD, POOLS  # noqa: E402
from nn.gradcheck import rel_error  # noqa: E402

from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.numpy import ops as numpy_ops  # noqa: E402
from apsi_layers.backends.torch.ops import TorchOps  # noqa: E402

O = numpy_ops.OPSET
T = TorchOps("cpu", torch.float64)
TOL = 1e-12
rng = np.random.default_rng(11)


def normal(*shape):
    return rng.standard_normal(shape)


def _tuple(out):
    return out if isinstance(out, tuple) else (out,)


def compare(f, *arrays, tol=TOL):
    """f on both op sets: every output and every gradient within `tol` (relative)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    outs_np = _tuple(f(O, *[nn.Tensor(a) for a in arrays]))
    weights = [rng.standard_normal(np.shape(o.data)) for o in outs_np]

    def loss(*xs):
        return sum(nn.sum(o * w) for o, w in zip(_tuple(f(O, *xs)), weights))

    grads_np = ()
    if arrays:
        grads_np = nn.grad(loss, argnums=tuple(range(len(arrays))))(*[nn.Tensor(a) for a in arrays])
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs_t = _tuple(f(T, *xs))
    assert len(outs_t) == len(outs_np)
    for i, (a, b) in enumerate(zip(outs_np, outs_t)):
        a, b = a.data, b.detach().numpy()
        assert a.shape == b.shape, (i, a.shape, b.shape)
        assert rel_error(a, b) < tol, f"output {i}: {rel_error(a, b):.2e}"
    if not arrays:
        return
    total = sum((o * torch.from_numpy(w)).sum() for o, w in zip(outs_t, weights) if o.requires_grad)
    if isinstance(total, torch.Tensor):
        total.backward()
    for i, (g, x) in enumerate(zip(_tuple(grads_np), xs)):
        gt = x.grad.numpy() if x.grad is not None else np.zeros(x.shape)
        assert rel_error(g.data, gt) < tol, f"gradient {i}: {rel_error(g.data, gt):.2e}"


@pytest.mark.parametrize("name", CONVS)
def test_conv(name):
    c = dict(CONVS[name])
    x, w = normal(*c.pop("x")), normal(*c.pop("w"))
    compare(lambda ops, x, w, b: ops.conv(x, w, b, **c), x, w, normal(w.shape[0]))
    compare(lambda ops, x, w: ops.conv(x, w, None, **c), x, w)


@pytest.mark.parametrize("kind", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("name", list(POOLS) + ["symmetric"])
def test_pool(kind, name):
    c = dict(POOLS.get(name) or dict(x=(2, 2, 6, 6), size=(3, 3), stride=(2, 2), padding=((1, 1), (1, 1))))
    x = normal(*c.pop("x"))
    compare(lambda ops, x: getattr(ops, kind)(x, **c), x)


@pytest.mark.parametrize("shape", [(5, 3), (3, 2, 4), (2, 3, 2, 3)])
def test_batch_norm(shape):
    x, g, b = normal(*shape), normal(shape[1]), normal(shape[1])
    compare(lambda ops, x, g, b: ops.batch_norm_train(x, g, b, 1e-5), x, g, b)
    m, v = normal(shape[1]), np.abs(normal(shape[1])) + 0.5
    compare(lambda ops, x, g, b, m, v: ops.batch_norm_eval(x, g, b, m, v, 1e-5), x, g, b, m, v)


def test_norms():
    x, g, b = normal(2, 3, 5), normal(5), normal(5)
    compare(lambda ops, x, g, b: ops.layer_norm(x, g, b, 1e-5), x, g, b)
    compare(lambda ops, x, g: ops.layer_norm(x, g, None, 1e-5), x, g)
    compare(lambda ops, x, g: ops.rms_norm(x, g, 1e-6), x, g)


@pytest.mark.parametrize("masked", [False, True])
def test_lstm_and_gru(masked):
    B, Tn, F, H = 3, 4, 2, 3
    mask = MASK if masked else None
    compare(lambda ops, *a: ops.lstm(*a, mask=None if mask is None else ops.indices(mask) > 0),
            normal(B, Tn, F), normal(B, H), normal(B, H), normal(4 * H, F) * 0.5, normal(4 * H, H) * 0.5,
            normal(4 * H), normal(4 * H))
    compare(lambda ops, *a: ops.gru(*a, mask=mask),
            normal(B, Tn, F), normal(B, H), normal(3 * H, F) * 0.5, normal(3 * H, H) * 0.5,
            normal(3 * H), normal(3 * H))


@pytest.mark.parametrize("mask,causal,tq", [(None, False, 3), (None, True, 4), (PAD, False, 3),
                                            (PAD, True, 4), (np.zeros((2, 1, 3, 4), bool), False, 3)],
                         ids=["plain", "causal", "padding", "padding_causal", "all_masked"])
def test_attention(mask, causal, tq):
    compare(lambda ops, q, k, v: ops.attention(q, k, v, mask=mask, causal=causal),
            normal(2, 2, tq, 3), normal(2, 2, 4, 3), normal(2, 2, 4, 5))


@pytest.mark.parametrize("mask,causal,tq", [(PAD, False, 3), (PAD, True, 4),
                                            (np.zeros((2, 1, 3, 4), bool), False, 3)],
                         ids=["padding", "padding_causal", "all_masked"])
def test_attention_as_on_a_gpu(monkeypatch, mask, causal, tq):
    """The branch GPUs take (rows that may attend nowhere are computed unmasked, then zeroed), on the CPU."""
    from apsi_layers.backends.torch import ops as torch_ops

    monkeypatch.setattr(torch_ops, "_sdpa_zeroes_empty_rows", lambda device: False)
    compare(lambda ops, q, k, v: ops.attention(q, k, v, mask=mask, causal=causal),
            normal(2, 2, tq, 3), normal(2, 2, 4, 3), normal(2, 2, 4, 5))


def test_losses():
    labels = rng.integers(0, 5, (2, 3))
    compare(lambda ops, x: ops.softmax_cross_entropy(x, ops.indices(labels)), normal(2, 3, 5))
    compare(lambda ops, x, t: ops.bce_with_logits(x, t), normal(4, 3) * 5, rng.uniform(0, 1, (4, 3)))


def test_graph_ops():
    index = np.array([2, 0, 2, 2, 0, 3])
    compare(lambda ops, s: ops.scatter_add(s, ops.indices(index), 5), normal(6, 3))
    compare(lambda ops, s: ops.segment_softmax(s, ops.indices(index), 5), normal(6, 3))
    compare(lambda ops, s: ops.segment_softmax(s, ops.indices(index), 5), normal(6))
    compare(lambda ops: ops.bincount(ops.indices(index), 5))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_and_dense(axis):
    idx = np.array([[1, 0], [2, 1], [1, 1]])
    compare(lambda ops, x: ops.take(x, ops.indices(idx), axis=axis), normal(4, 3, 3))
    compare(lambda ops, x, w, b: ops.dense(x, w, b), normal(2, 4, 3), normal(3, 5), normal(5))
    compare(lambda ops, x, w: ops.dense(x, w), normal(4, 3), normal(3, 5))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "gelu",
                                  "softplus", "silu"])
def test_elementwise(name):
    x = rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.1, 3.0, (3, 4))
    if name in ("log", "sqrt"):
        x = np.abs(x)
    compare(lambda ops, x: getattr(ops, name)(x), x)
    compare(lambda ops, x: getattr(ops, name)(x), x * 15)        # the tails (softplus, sigmoid)


def test_parameterised_and_binary():
    x, y = normal(3, 4), normal(3, 4)
    compare(lambda ops, x: ops.leaky_relu(x, 0.1), x)
    compare(lambda ops, x: ops.elu(x, 1.5), x)
    compare(lambda ops, x, y: ops.maximum(x, y), x, y)
    compare(lambda ops, x, y: ops.minimum(x, y), x, y)
    compare(lambda ops, x: ops.maximum(x, 0.0), x)
    compare(lambda ops, x, y: ops.where(x > 0, x, y), x, y)
    compare(lambda ops, x: ops.clip(x, -0.5, 0.5), x)
    compare(lambda ops, x, y: ops.matmul(x, ops.transpose(y, (1, 0))), x, y)


def test_reductions_and_shapes():
    x = normal(2, 3, 4)
    for axis in (None, 0, -1, (0, 2)):
        compare(lambda ops, x, axis=axis: ops.sum(x, axis=axis), x)
        compare(lambda ops, x, axis=axis: ops.mean(x, axis=axis, keepdims=True), x)
        compare(lambda ops, x, axis=axis: ops.max(x, axis=axis), x)
    compare(lambda ops, x: ops.logsumexp(x, axis=1), x)
    compare(lambda ops, x: ops.softmax(x, axis=0), x)
    compare(lambda ops, x: ops.log_softmax(x), x)
    compare(lambda ops, x: ops.reshape(x, (4, 6)), x)
    compare(lambda ops, x: ops.transpose(x, (2, 0, 1)), x)
    compare(lambda ops, x: ops.concat([x, x * 2.0], 1), x)
    compare(lambda ops, x: ops.stack([x, x * 2.0], 0), x)
    compare(lambda ops, x: ops.expand_dims(x, 1), x)
    compare(lambda ops, x: x * ops.stop_gradient(x), x)
    compare(lambda ops, x: x[:, -1] @ ops.ones((4, 2)) + ops.zeros(2) - ops.constant([1.0, 2.0]), x)


def test_random_ops_follow_the_spec():
    x = T.constant(np.ones((300, 40)))
    a = T.dropout(x, 0.3, T.rng(3))
    assert torch.equal(a, T.dropout(x, 0.3, T.rng(3)))          # the seed fixes the mask
    kept = a != 0
    assert 0.65 < kept.double().mean().item() < 0.75
    assert torch.allclose(a[kept], torch.tensor(1 / 0.7, dtype=torch.float64))
    assert T.dropout(x, 0.0, T.rng(3)) is x
    assert T.normal((3, 2), T.rng(0)).shape == (3, 2)
    assert torch.equal(T.normal(5, T.rng(1)), T.normal(5, T.rng(1)))


def test_conversions():
    t = T.constant([[1.0, 2.0]])
    assert t.dtype == torch.float64 and T.indices([1.0, 2.0]).dtype == torch.int64
    arr = T.to_numpy(t)
    arr[0, 0] = 99.0
    assert t[0, 0].item() == 1.0                                  # a copy
    half = TorchOps("cpu", torch.float32)
    assert half.constant([1.5]).dtype == torch.float32 and half.zeros((2,)).dtype == torch.float32
    assert T.to_numpy(torch.ones(2, dtype=torch.bfloat16)).dtype == np.float64


def test_cudnn_weight_packing_warning_is_kept_from_the_user(monkeypatch):
    """On CUDA, torch warns on each fused RNN call with separate weight tensors (advising
    flatten_parameters()); the backend keeps the weights apart on purpose, so the warning is dropped."""
    import warnings

    real = torch._VF.lstm

    def warns(*args):
        warnings.warn("RNN module weights are not part of single contiguous chunk of memory. This means "
                      "they need to be compacted at every call", UserWarning, stacklevel=2)
        return real(*args)

    monkeypatch.setattr(torch._VF, "lstm", warns, raising=False)
    H = 3
    w = [normal(4 * H, 2), normal(4 * H, H), normal(4 * H), normal(4 * H)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ys, h, c = T.lstm(T.constant(normal(2, 4, 2)), None, None, *[T.constant(a) for a in w])
    assert ys.shape == (2, 4, H)
