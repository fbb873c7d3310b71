"""fit and predict with backend="torch": the same semantics as NumPy, every precision, compile and its
fallback, optimizers and schedules mapped one to one, Apsi-written functions, and every message."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_lang import permissions  # noqa: E402
from apsi_lang.errors import ApsiError  # noqa: E402
from apsi_lang.values import Record  # noqa: E402
from apsi_layers import nn  # noqa: E402
from apsi_layers.layers import (  # noqa: E402
    CustomLayer,
    dense,
    fit,
    gcn_classifier,
    lambda_layer,
    lstm_classifier,
    mlp,
    predict,
    sequential,
    vae,
)


@pytest.fixture(autouse=True)
def python_allowed():
    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset({"python"})))
    yield
    permissions.set_current(before)


r = np.random.default_rng(0)
X = r.standard_normal((96, 6))
Y = (X[:, 0] + X[:, 1] > 0).astype(int)
NET = mlp(6, 2, hidden=[12], batch_norm=True)
P = NET.init(seed=0)


def leaves(tree):
    return [v.data for _, v in nn.flatten(tree)]


def max_diff(a, b):
    return max(float(np.max(np.abs(u - v))) for u, v in zip(leaves(a), leaves(b), strict=True))


def both(model, params, x, y, **opts):
    a = fit(model, params, x, y, verbose=False, **opts)
    b = fit(model, params, x, y, verbose=False, backend="torch", device="cpu", precision="fp64", **opts)
    return a, b


def test_fp64_reproduces_the_numpy_fit():
    a, b = both(NET, P, X, Y, loss="cross_entropy", opt=nn.sgd(lr=0.1, momentum=0.9), epochs=3,
                batch_size=16, seed=3, val=[X[:20], Y[:20]])
    assert (b.backend, b.device, b.steps) == ("torch", "cpu", a.steps)
    assert np.allclose(a.history, b.history, rtol=0, atol=1e-12)
    assert np.allclose(a.val_history, b.val_history, rtol=0, atol=1e-12)
    assert max_diff(a.params, b.params) < 1e-12                   # weights and running statistics
    assert all(type(v) is nn.Tensor and v.data.dtype == np.float64 for v in nn.tree.leaves(b.params))
    assert b.seconds > 0


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam"])
def test_optimizers_map_one_to_one(opt):
    a, b = both(NET, P, X, Y, loss="cross_entropy", opt=opt, epochs=2, batch_size=32, clip=0.5)
    # adaptive rules divide by running gradient sizes (Adagrad's first step is about g / |g|), which
    # magnifies rounding in tiny gradients; a wrong hyper-parameter shows at 1e-3
    assert max_diff(a.params, b.params) < 1e-7, opt


def test_schedules_and_lr_functions_map_like_lambdalr():
    sched = lambda s: nn.cosine_lr(s, 12, base=0.05, warmup=3)      # noqa: E731
    a, b = both(NET, P, X, Y, loss="cross_entropy", opt=nn.adam(lr=1.0), schedule=sched, epochs=2,
                batch_size=16)
    assert max_diff(a.params, b.params) < 1e-8
    a, b = both(NET, P, X, Y, loss="cross_entropy", opt=nn.sgd(lr=lambda s: 0.1 / (1 + s)), epochs=2,
                batch_size=16)
    assert max_diff(a.params, b.params) < 1e-12


def test_masks_graphs_and_several_outputs_match_numpy():
    seqs = r.standard_normal((24, 5, 3))
    labels = r.integers(0, 3, 24)
    mask = np.ones((24, 5), dtype=bool)
    mask[::3, 3:] = False
    net = lstm_classifier(3, 3, units=8)
    a, b = both(net, net.init(seed=1), seqs, labels, loss="cross_entropy", epochs=2, batch_size=8, mask=mask)
    assert max_diff(a.params, b.params) < 1e-10
    edges = np.array([[0, 1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 0]])
    feats, nodes = r.standard_normal((8, 4)), r.integers(0, 2, 8)
    g = gcn_classifier(4, 2, hidden=[6], dropout=0.0)
    train = np.arange(8) < 5
    a, b = both(g, g.init(seed=0), feats, nodes, loss="cross_entropy", epochs=3, graph=edges, mask=train)
    assert np.allclose(a.history, b.history, atol=1e-12) and max_diff(a.params, b.params) < 1e-12
    pa = predict(g, a.params, feats, graph=edges)
    pb = predict(g, a.params, feats, graph=edges, backend="torch", precision="fp64")
    assert type(pb) is nn.Tensor and np.max(np.abs(pa.data - pb.data)) < 1e-12


def test_vae_trains_with_the_same_noise_stream_shape():
    v = vae(6, 2, hidden=[8])
    res = fit(v, v.init(seed=0), X, None, epochs=2, batch_size=32, verbose=False, backend="torch")
    assert len(res.history) == 2 and all(np.isfinite(res.history))
    out = predict(v, res.params, X[:4], backend="torch")
    assert out.shape == (4, 6) and 0 < out.data.min() and out.data.max() < 1


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16", "fp16"])
def test_every_precision_trains(precision):
    res = fit(NET, P, X, Y, loss="cross_entropy", opt=nn.adam(lr=1e-2), epochs=4, batch_size=16,
              verbose=False, backend="torch", device="cpu", precision=precision, clip=1.0)
    assert all(v.data.dtype == np.float64 for v in nn.tree.leaves(res.params))
    ref = fit(NET, P, X, Y, loss="cross_entropy", opt=nn.adam(lr=1e-2), epochs=4, batch_size=16,
              verbose=False, clip=1.0)
    tol = {"fp32": 1e-4, "tf32": 1e-4, "bf16": 0.05, "fp16": 0.05}[precision]
    assert abs(res.history[-1] - ref.history[-1]) < tol


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_layers_under_mixed_precision(cell, precision):
    # the fused CPU kernels have no low-precision version on many CPUs: they run in float32 there
    seqs, labels = r.standard_normal((32, 6, 3)), r.integers(0, 2, 32)
    net = lstm_classifier(3, 2, units=8, cell=cell)
    res = fit(net, net.init(seed=0), seqs, labels, loss="cross_entropy", epochs=2, verbose=False,
              backend="torch", precision=precision)
    ref = fit(net, net.init(seed=0), seqs, labels, loss="cross_entropy", epochs=2, verbose=False)
    assert abs(res.history[-1] - ref.history[-1]) < 0.02


def test_the_same_seed_gives_the_same_numbers():
    d = mlp(6, 2, hidden=[16], dropout=0.3)
    runs = [fit(d, d.init(seed=0), X, Y, loss="cross_entropy", epochs=2, seed=5, verbose=False,
                backend="torch") for _ in range(2)]
    assert runs[0].history == runs[1].history and max_diff(runs[0].params, runs[1].params) == 0.0


def test_compile_falls_back_with_the_note(monkeypatch, capsys):
    def broken(fn, **kw):
        def run(*a):
            raise RuntimeError("no working C++ compiler found\nmore detail")
        return run

    monkeypatch.setattr(torch, "compile", broken)
    res = fit(NET, P, X, Y, loss="cross_entropy", epochs=2, verbose=False, backend="torch", compile=True)
    err = capsys.readouterr().err
    assert err.startswith("torch.compile failed (RuntimeError: no working C++ compiler found); "
                          "continuing eagerly")
    eager = fit(NET, P, X, Y, loss="cross_entropy", epochs=2, verbose=False, backend="torch")
    assert res.history == eager.history


def test_compile_missing_entirely(monkeypatch, capsys):
    def missing(fn, **kw):
        raise RuntimeError("Dynamo is not supported on this Python")

    monkeypatch.setattr(torch, "compile", missing)
    fit(NET, P, X, Y, loss="cross_entropy", epochs=1, verbose=False, backend="torch", compile=True)
    assert "torch.compile failed (RuntimeError: Dynamo is not supported" in capsys.readouterr().err


@pytest.mark.slow
def test_compile_for_real(capsys):
    net = mlp(6, 2, hidden=[8])
    res = fit(net, net.init(seed=0), X, Y, loss="cross_entropy", epochs=2, verbose=False, backend="torch",
              compile=True)
    eager = fit(net, net.init(seed=0), X, Y, loss="cross_entropy", epochs=2, verbose=False, backend="torch")
    err = capsys.readouterr().err
    if "torch.compile failed" not in err:          # a machine with a working compiler: same numbers
        assert np.allclose(res.history, eager.history, rtol=1e-4)


def test_apsi_losses_and_lambda_layers_run_on_torch():
    def my_loss(pred, target):
        return nn.mean((nn.softmax(pred) - target) ** 2) + 0.01 * nn.mean(nn.abs(pred))

    onehot = np.eye(2)[Y]
    net = sequential(dense(8, inputs=6), lambda_layer(lambda v: nn.tanh(v) * 2.0), dense(2))
    a, b = both(net, net.init(seed=0), X, onehot, loss=my_loss, epochs=2, batch_size=32)
    assert max_diff(a.params, b.params) < 1e-12


def test_a_lambda_layer_without_a_torch_version_says_so():
    def numpy_only(v):
        return nn.Tensor(np.tanh(v.data))            # .data of a torch tensor is not an array

    net = sequential(dense(4, inputs=6), lambda_layer(numpy_only), dense(2))
    with pytest.raises(ApsiError) as e:
        fit(net, net.init(seed=0), X, Y, loss="cross_entropy", verbose=False, backend="torch")
    assert e.value.message.startswith("the torch backend has no implementation of lambda_layer")
    assert "lambda_layer(fn, torch_fn=...)" in e.value.message
    net = sequential(dense(4, inputs=6), lambda_layer(numpy_only, torch_fn=torch.tanh), dense(2))
    fit(net, net.init(seed=0), X, Y, loss="cross_entropy", verbose=False, backend="torch")


class Scale(CustomLayer):
    kind = "scale"

    def params(self, rng, input_shape):
        return {"s": rng.full((input_shape[-1],), 2.0)}, input_shape

    def forward(self, params, x, ctx):
        return nn.Tensor(x.data * params.s.data)          # NumPy only


class TorchScale(Scale):
    kind = "torch_scale"

    def torch_forward(self, params, x, ctx):
        return x * params.s


def test_custom_layers_need_a_torch_forward():
    net = sequential(dense(4, inputs=6), Scale(), dense(2))
    with pytest.raises(ApsiError) as e:
        fit(net, net.init(seed=0), X, Y, loss="cross_entropy", verbose=False, backend="torch")
    assert e.value.message.startswith("the torch backend has no implementation of scale")
    assert "torch_forward" in e.value.message
    net = sequential(dense(4, inputs=6), TorchScale(), dense(2))
    res = fit(net, net.init(seed=0), X, Y, loss="cross_entropy", verbose=False, backend="torch")
    assert len(res.history) == 1


def test_a_nan_loss_stops_and_names_the_step():
    with pytest.raises(ApsiError) as e:
        fit(NET, P, X * 1e300, Y, loss="cross_entropy", opt=nn.sgd(lr=1e10), epochs=2, verbose=False,
            backend="torch")
    assert e.value.message.startswith("fit: the loss became ")
    assert "at epoch 1, step 1 (step 1 overall)" in e.value.message


def test_device_and_precision_messages(monkeypatch):
    with pytest.raises(ApsiError, match='^device="cuda": PyTorch sees no CUDA/ROCm GPU'):
        fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="torch", device="cuda")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    with pytest.raises(ApsiError, match='^precision="fp64" is not supported on Apple MPS'):
        fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="torch", device="mps",
            precision="fp64")
    with pytest.raises(ApsiError, match="precision='fp12' is not one of"):
        predict(NET, P, X, backend="torch", precision="fp12")


def test_without_permission():
    permissions.set_current(permissions.Grants())
    with pytest.raises(ApsiError) as e:
        fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="torch")
    assert e.value.message.startswith("fit(backend=\"torch\") needs permission 'python'")
    assert fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="auto").backend == "numpy"
    permissions.set_current(permissions.Grants(granted=frozenset({"python"})))
    assert fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="auto").backend == "torch"


def test_params_round_trip_between_backends():
    res = fit(NET, P, X, Y, loss="cross_entropy", epochs=1, verbose=False, backend="torch", precision="fp64")
    a = predict(NET, res.params, X)
    b = predict(NET, res.params, X, backend="torch", precision="fp64")
    assert np.max(np.abs(a.data - b.data)) < 1e-12
    assert [n for n, _ in nn.flatten(res.params)] == [n for n, _ in nn.flatten(P)]
    assert isinstance(res.params, Record)
