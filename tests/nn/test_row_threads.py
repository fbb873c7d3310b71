"""GELU, layer norm and attention split their rows (the batch axis) over threads (issue 36): on 1 and 3
threads the values and gradients are the same bits, and they match PyTorch's float64 ops."""

import importlib

import numpy as np
import pytest

bt = importlib.import_module("apsi_layers.nn.fused.batch_threads")
elementwise = importlib.import_module("apsi_layers.nn.fused.elementwise")
norm = importlib.import_module("apsi_layers.nn.fused.norm")
attention = importlib.import_module("apsi_layers.nn.fused.attention")

ALL = (True, True, True)


def _threads(monkeypatch, n):
    monkeypatch.setattr(bt, "MIN_BYTES", 0)           # split even these small arrays
    monkeypatch.setattr(bt, "SPLIT_ROWS", True)       # (off by default: see batch_threads)
    monkeypatch.setitem(bt._pool, "size", n)
    monkeypatch.setitem(bt._pool, "executor", None)


def _gelu(x, g):
    y, saved = elementwise._gelu_forward(x, True)
    return (y, *elementwise._gelu_backward(g, saved, ALL[:1]))


def _ln(x, g, gamma, beta):
    y, saved = norm._ln_forward(x, gamma, beta, True, 1e-5)
    return (y, *norm._ln_backward(g, saved, ALL))


def _attention(q, k, v, g, keep):
    out, saved = attention._forward(q, k, v, True, keep, 1.0 / np.sqrt(q.shape[-1]))
    return (out, *attention._backward(g, saved, ALL))


def _cases():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 5, 12)) * 3
    x[0, 0, :3] = [0.0, -0.0, 40.0]
    causal = np.tri(6, 6, dtype=bool)
    q, k, v, ga = (rng.standard_normal((5, 2, 6, 4)) for _ in range(4))
    batch_mask = rng.random((5, 1, 6, 6)) > 0.3           # per sample: the unsplit path
    batch_mask[0, 0, 2] = False                            # a row that may attend to nothing
    return {
        "gelu": (_gelu, (x, rng.standard_normal(x.shape))),
        "gelu 1-d": (_gelu, (x[0, 0], rng.standard_normal(12))),
        "layer_norm": (_ln, (x, rng.standard_normal(x.shape), *rng.standard_normal((2, 12)))),
        "layer_norm 1-d": (_ln, (x[1, 1], rng.standard_normal(12), rng.standard_normal(12), None)),
        "attention causal": (_attention, (q, k, v, ga, causal)),
        "attention unmasked": (_attention, (q, k, v, ga, None)),
        "attention per-sample mask": (_attention, (q, k, v, ga, batch_mask)),
        "attention broadcast k": (_attention, (q, k[:1], v[:1], ga, causal)),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_three_threads_give_the_bits_of_one(case, monkeypatch):
    fn, args = _cases()[case]
    _threads(monkeypatch, 1)
    one = fn(*args)
    _threads(monkeypatch, 3)
    three = fn(*args)
    assert len(one) == len(three)
    for a, b in zip(one, three):
        assert (a is None and b is None) or np.array_equal(a, b, equal_nan=True)


def test_rows_stay_on_one_call_by_default(monkeypatch):
    monkeypatch.setattr(bt, "MIN_BYTES", 0)
    monkeypatch.setitem(bt._pool, "size", 3)
    calls = []
    bt.over_rows(lambda x: calls.append(len(x)), np.ones((6, 4)))
    assert calls == [6]


def test_the_split_really_runs_on_the_pool(monkeypatch):
    import threading

    _threads(monkeypatch, 3)
    calls = []
    real = elementwise._gelu_rows

    def spy(x, t, y):
        calls.append((len(x), threading.current_thread().name))
        real(x, t, y)

    monkeypatch.setattr(elementwise, "_gelu_rows", spy)
    elementwise._gelu_forward(np.ones((6, 4)), False)
    assert sorted(n for n, _ in calls) == [2, 2, 2]
    assert {name for _, name in calls} - {threading.current_thread().name}      # a pool thread took part


@pytest.mark.parametrize("case", ["gelu", "layer_norm", "attention causal", "attention per-sample mask",
                                  "attention broadcast k"])
def test_they_match_pytorch(case, monkeypatch):
    torch = pytest.importorskip("torch")
    _threads(monkeypatch, 3)
    fn, args = _cases()[case]
    ours = fn(*args)
    ts = [None if a is None or a.dtype == bool else torch.tensor(a, requires_grad=True) for a in args]
    F = torch.nn.functional  # noqa: N806
    if case == "gelu":
        out = F.gelu(ts[0], approximate="tanh")
    elif case == "layer_norm":
        out = F.layer_norm(ts[0], (12,), ts[2], ts[3], 1e-5)
    else:
        keep = torch.tensor(args[4])
        scores = ts[0] @ ts[1].transpose(-1, -2) / np.sqrt(args[0].shape[-1])
        p = torch.softmax(scores.masked_fill(~keep, -torch.inf), dim=-1).nan_to_num(0.0)
        out = p @ ts[2]
    g = torch.tensor(args[3] if case.startswith("attention") else args[1])
    out.backward(g)
    inputs = [t for t in ts if t is not None and t is not ts[3 if case.startswith("attention") else 1]]
    np.testing.assert_allclose(ours[0], out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for mine, t in zip(ours[1:], inputs):
        np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", ["gelu", "gelu 1-d"])
def test_gelu_in_cache_sized_blocks_gives_the_bits_of_one_call(case, monkeypatch):
    fn, args = _cases()[case]
    monkeypatch.setattr(bt, "BLOCK", 1 << 30)
    one = fn(*args)
    blocks = []
    real = elementwise._gelu_chain

    def spy(x, t, y):
        blocks.append(x.size)
        real(x, t, y)

    monkeypatch.setattr(elementwise, "_gelu_chain", spy)
    monkeypatch.setattr(bt, "BLOCK", 7)             # blocks that end inside rows, and a short last one
    split = fn(*args)
    assert blocks and max(blocks) == 7 and sum(blocks) == args[0].size
    for a, b in zip(one, split):
        assert np.array_equal(a, b, equal_nan=True)


def test_blocks_need_contiguous_arrays_of_one_shape(monkeypatch):
    monkeypatch.setattr(bt, "BLOCK", 4)
    calls = []
    x = np.arange(24.0).reshape(4, 6)
    bt.in_blocks(lambda *a: calls.append(a[0].shape), x, np.empty_like(x))
    assert calls == [(4,)] * 6
    calls.clear()
    bt.in_blocks(lambda *a: calls.append(a[0].shape), x.T, np.empty((6, 4)))   # a transposed view
    assert calls == [(6, 4)]


def test_attention_outputs_follow_the_heads_layout():
    """q, k, v as [B, H, T, D] views of [B, T, H, D] arrays (as the attention layer makes them): the
    output and the gradients come in the same layout, so going back to [B, T, H * D] copies nothing,
    and the values are those of contiguous inputs."""
    rng = np.random.default_rng(2)
    q, k, v, g = (rng.standard_normal((3, 6, 2, 4)).transpose(0, 2, 1, 3) for _ in range(4))
    causal = np.tri(6, 6, dtype=bool)
    got = _attention(q, k, v, g, causal)
    for a in got:
        assert a.transpose(0, 2, 1, 3).flags.c_contiguous
    want = _attention(*(np.ascontiguousarray(a) for a in (q, k, v, g)), causal)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
