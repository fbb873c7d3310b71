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
    # the promise: fp64 matches NumPy to ~1e-15 (here 3 epochs of SGD with batch norm)
    assert np.allclose(a.history, b.history, rtol=0, atol=1e-14)
    assert np.allclose(a.val_history, b.val_history, rtol=0, atol=1e-14)
    assert max_diff(a.params, b.params) < 1e-14                   # weights and running statistics
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
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("note: compiling the model with torch.compile")
    assert err[1].startswith("torch.compile failed (RuntimeError: no working C++ compiler found); "
                             "continuing eagerly")
    eager = fit(NET, P, X, Y, loss="cross_entropy", epochs=2, verbose=False, backend="torch")
    assert res.history == eager.history


def test_compile_missing_entirely(monkeypatch, capsys):
    def missing(fn, **kw):
        raise RuntimeError("Dynamo is not supported on this Python")

    monkeypatch.setattr(torch, "compile", missing)
    fit(NET, P, X, Y, loss="cross_entropy", epochs=1, verbose=False, backend="torch", compile=True)
    assert "torch.compile failed (RuntimeError: Dynamo is not supported" in capsys.readouterr().err


def test_each_fit_compiles_its_own_function(monkeypatch, capsys):
    """Issue 16: every fit shared one code object, so after Dynamo's recompile limit (8) the ninth
    model in a process ran uncompiled, with raw Dynamo log lines. A counting backend sees each graph."""
    compiled = []

    def counting(gm, example_inputs):
        compiled.append(len(example_inputs))
        return gm.forward

    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: real(fn, backend=counting, dynamic=False))
    torch._dynamo.reset()
    models = [mlp(6, 2, hidden=[h]) for h in range(3, 13)]
    for net in models:
        before = len(compiled)
        fit(net, net.init(seed=0), X[:16], Y[:16], loss="cross_entropy", batch_size=16, verbose=False,
            backend="torch", compile=True)
        assert len(compiled) > before, f"the fit of {net!r} ran uncompiled"
    err = capsys.readouterr().err
    assert "recompile" not in err and "torch._dynamo" not in err, err
    assert err.count("note: compiling the model with torch.compile") == len(models)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mlp", "lstm", "transformer_lm"])
def test_compile_for_real(capsys, kind):
    import shutil

    from torch._dynamo.utils import counters

    from apsi_layers.layers import transformer_lm

    if kind == "mlp":
        net, x, y = mlp(6, 2, hidden=[8]), X, Y
    elif kind == "lstm":
        net, x, y = lstm_classifier(3, 2, units=4), r.standard_normal((32, 5, 3)), r.integers(0, 2, 32)
    else:
        net, x = transformer_lm(7, d=8, heads=2, layers=1, context=5), r.integers(0, 7, (32, 5))
        y = x
    torch._dynamo.reset()
    counters.clear()
    opts = dict(loss="cross_entropy", epochs=2, batch_size=16, verbose=False, backend="torch",
                precision="fp64")
    res = fit(net, net.init(seed=0), x, y, compile=True, **opts)
    breaks = dict(counters["graph_break"])
    eager = fit(net, net.init(seed=0), x, y, **opts)
    err = capsys.readouterr().err
    if not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
        assert "torch.compile failed" in err        # Inductor needs a C++ compiler on the CPU
        return
    assert "torch.compile failed" not in err, err
    assert np.allclose(res.history, eager.history, rtol=0, atol=1e-10)
    # the model is one graph: the parameter tree is built outside it; the fused LSTM runs beside it,
    # as torch.nn.LSTM does under torch.compile
    if kind == "lstm":
        assert breaks and all("torch.compiler.disable" in reason for reason in breaks), breaks
    else:
        assert not breaks, breaks


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
    with pytest.raises(ApsiError, match='^fit: device="cuda": PyTorch sees no CUDA/ROCm GPU'):
        fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="torch", device="cuda")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    with pytest.raises(ApsiError, match='^fit: precision="fp64" is not supported on Apple MPS'):
        fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="torch", device="mps",
            precision="fp64")
    with pytest.raises(ApsiError, match='^predict: precision="fp12" is not one of'):
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


def test_without_pytorch_fit_and_predict_say_how_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)       # find_spec("torch") is None: not installed
    for call in (lambda: fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="torch"),
                 lambda: predict(NET, P, X, backend="torch")):
        with pytest.raises(ApsiError) as e:
            call()
        assert e.value.message.startswith('backend="torch" needs PyTorch')
        assert "apsi pkg install torch-auto" in e.value.message
    assert fit(NET, P, X, Y, loss="cross_entropy", verbose=False, backend="auto").backend == "numpy"


class Probe(CustomLayer):
    """Records, inside fit, the dtypes a layer meets and the autocast / matmul settings in force."""

    kind = "probe"
    seen = []

    def params(self, rng, input_shape):
        return {"s": rng.full((input_shape[-1],), 1.0)}, input_shape

    def forward(self, params, x, ctx):
        return x * params.s

    def torch_forward(self, params, x, ctx):
        Probe.seen.append(dict(weight=params.s.dtype, x=x.dtype, autocast=torch.is_autocast_enabled("cpu"),
                               matmul=torch.get_float32_matmul_precision()))
        return x * params.s


@pytest.mark.parametrize("name,weight,x,autocast,matmul,scaled", [
    ("fp64", torch.float64, torch.float64, False, "highest", False),
    ("fp32", torch.float32, torch.float32, False, "highest", False),
    ("tf32", torch.float32, torch.float32, False, "high", False),
    ("bf16", torch.float32, torch.bfloat16, True, "highest", False),
    ("fp16", torch.float32, torch.float16, True, "highest", True),
])
def test_each_precision_means_what_it_says_inside_fit(monkeypatch, name, weight, x, autocast, matmul, scaled):
    scales = []

    class Scaler(torch.amp.GradScaler):
        def scale(self, outputs):
            scales.append(self.get_scale())
            return super().scale(outputs)

    monkeypatch.setattr(torch.amp, "GradScaler", Scaler)
    Probe.seen = []
    net = sequential(dense(8, inputs=6), Probe(), dense(2))
    before = torch.get_float32_matmul_precision()
    res = fit(net, net.init(seed=0), X, Y, loss="cross_entropy", epochs=1, batch_size=48, verbose=False,
              backend="torch", precision=name)
    # the weights keep their dtype; the dense layer's output shows the autocast dtype
    assert Probe.seen[0] == dict(weight=weight, x=x, autocast=autocast, matmul=matmul)
    assert len(scales) == (2 if scaled else 0)              # GradScaler scales every step's loss
    assert torch.get_float32_matmul_precision() == before    # TF32 is switched off again
    assert all(type(v) is nn.Tensor and v.data.dtype == np.float64 for v in nn.tree.leaves(res.params))


def test_the_loss_is_read_from_the_device_once_per_epoch(monkeypatch):
    """No per-step synchronisation: Apsi's code reads a tensor's value only in _epoch_loss (and when it
    hands the trained parameters back)."""
    import sys

    reads = []
    for method in ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__"):
        real = getattr(torch.Tensor, method)

        def spy(self, *a, _real=real, _method=method, **k):
            caller = sys._getframe(1)
            via = []
            while caller.f_code.co_filename.endswith("convert.py"):      # the shared host copy
                via.append(caller.f_code.co_name)
                caller = caller.f_back
            if "apsi_layers" in caller.f_code.co_filename:
                reads.append((_method, "to_nn" if "to_nn" in via else caller.f_code.co_name))
            return _real(self, *a, **k)
        monkeypatch.setattr(torch.Tensor, method, spy)
    seqs, labels = r.standard_normal((32, 5, 3)), r.integers(0, 2, 32)
    cases = [(NET, P, X, Y, dict(batch_size=16, val=[X, Y])),
             (lstm_classifier(3, 2, units=4), None, seqs, labels, dict(batch_size=8, val=[seqs, labels])),
             (gcn_classifier(6, 2, hidden=[4]), None, X[:8], Y[:8],
              dict(graph=np.array([[0, 1, 2, 3], [1, 2, 3, 0]]), mask=np.arange(8) < 5))]
    for net, params, x, y, opts in cases:
        reads.clear()
        fit(net, params or net.init(seed=0), x, y, loss="cross_entropy", epochs=3, verbose=False,
            backend="torch", **opts)
        during = [(m, fn) for m, fn in reads if fn not in ("to_nn", "_val_loss", "nn_state")]   # (after)
        assert during == [("cpu", "_epoch_loss"), ("numpy", "_epoch_loss")] * 3, (net, during)


def test_the_hot_spots_are_single_torch_kernels(monkeypatch):
    import torch.nn.functional as F

    calls = {"sdpa": 0, "lstm": 0, "gru": 0, "index_add": 0}

    def counted(key, real):
        def run(*a, **k):
            calls[key] += 1
            return real(*a, **k)
        return run

    monkeypatch.setattr(F, "scaled_dot_product_attention",
                        counted("sdpa", F.scaled_dot_product_attention))
    monkeypatch.setattr(torch._VF, "lstm", counted("lstm", torch._VF.lstm), raising=False)
    monkeypatch.setattr(torch._VF, "gru", counted("gru", torch._VF.gru), raising=False)
    monkeypatch.setattr(torch.Tensor, "index_add", counted("index_add", torch.Tensor.index_add))
    from apsi_layers.layers import transformer_lm

    ids = r.integers(0, 7, (16, 5))
    lm = transformer_lm(7, d=8, heads=2, layers=2, context=5)
    fit(lm, lm.init(seed=0), ids, ids, loss="cross_entropy", epochs=1, batch_size=8, verbose=False,
        backend="torch")
    assert calls["sdpa"] == 2 * 2                              # layers x steps
    seqs, labels = r.standard_normal((16, 5, 3)), r.integers(0, 2, 16)
    for cell in ("lstm", "gru"):
        net = lstm_classifier(3, 2, units=4, cell=cell)
        fit(net, net.init(seed=0), seqs, labels, loss="cross_entropy", epochs=1, batch_size=8,
            verbose=False, backend="torch")
        assert calls[cell] == 2                                # one fused call per step, not per time step
    g = gcn_classifier(6, 2, hidden=[4])
    fit(g, g.init(seed=0), X[:8], Y[:8], loss="cross_entropy", epochs=1, verbose=False, backend="torch",
        graph=np.array([[0, 1, 2, 3], [1, 2, 3, 0]]))
    assert calls["index_add"] >= 2                             # the messages are summed with index_add


def test_the_cpu_lstm_projects_all_inputs_in_one_matrix_product():
    from torch.profiler import ProfilerActivity, profile

    from apsi_layers.backends.torch.ops import TorchOps

    steps, h = 10, 4
    for dtype in (torch.float32, torch.float64):
        w = [torch.randn(*s, dtype=dtype) for s in ((4 * h, 3), (4 * h, h), (4 * h,), (4 * h,))]
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            TorchOps("cpu", dtype).lstm(torch.randn(2, steps, 3, dtype=dtype), None, None, *w)
        names = [e.name for e in prof.events()]
        assert names.count("aten::lstm") == 1
        if "aten::mkldnn_rnn_layer" not in names:                  # oneDNN's fused LSTM (float32)
            # ATen's own loop: one product for the inputs of every step + one per step for h (a
            # projection per step would make 2 * steps)
            assert names.count("aten::linear") == steps + 1, (dtype, names.count("aten::linear"))


def test_verbose_prints_the_epochs_as_on_numpy(capsys):
    fit(NET, P, X, Y, loss="cross_entropy", epochs=2, batch_size=32, verbose=True)
    numpy_lines = [line.split("  ")[:2] for line in capsys.readouterr().out.splitlines()]
    fit(NET, P, X, Y, loss="cross_entropy", epochs=2, batch_size=32, verbose=True, backend="torch",
        precision="fp64")
    torch_lines = [line.split("  ")[:2] for line in capsys.readouterr().out.splitlines()]
    assert torch_lines == numpy_lines and len(torch_lines) == 2
    assert torch_lines[0] == ["epoch 1/2", torch_lines[0][1]] and torch_lines[0][1].startswith("loss ")


@pytest.mark.parametrize("loss,kernel", [("mse", "mse_loss"), ("mae", "l1_loss"), ("huber", "huber_loss")])
def test_named_losses_are_torch_functional_kernels(monkeypatch, loss, kernel):
    import torch.nn.functional as F

    from apsi_layers.backends.torch import losses

    calls = []
    real = losses.FUNCTIONAL[loss]
    monkeypatch.setitem(losses.FUNCTIONAL, loss, lambda *a: calls.append(1) or real(*a))
    assert real is getattr(F, kernel)
    g = np.random.default_rng(7)                               # this test's own data, whatever ran before
    net = mlp(6, 3, hidden=[8])
    targets = g.standard_normal((96, 3)) * 2.0                  # huber: beyond delta for some
    sgd = nn.sgd(lr=0.05, momentum=0.9)          # (Adam's g / sqrt(v) would magnify rounding in mae's steps)
    a, b = both(net, net.init(seed=0), X, targets, loss=loss, opt=sgd, epochs=2, batch_size=32,
                val=[X, targets])
    assert np.allclose(a.history, b.history, rtol=0, atol=1e-14) and max_diff(a.params, b.params) < 1e-14
    assert np.allclose(a.val_history, b.val_history, rtol=0, atol=1e-14)
    assert len(calls) == 2 * 3 + 2 * 3                        # every step, and every validation batch
    mask = np.ones((24, 5), dtype=bool)
    mask[::2, 3:] = False                                      # a step mask restricts the loss
    seqs = g.standard_normal((24, 5, 3))
    seq_net = sequential(dense(4, inputs=[5, 3]), dense(2))
    goal = g.standard_normal((24, 5, 2))
    a, b = both(seq_net, seq_net.init(seed=0), seqs, goal, loss=loss, opt=sgd, epochs=2, batch_size=8,
                mask=mask)
    assert max_diff(a.params, b.params) < 1e-14


def test_a_custom_layers_torch_forward_serves_predict_val_and_torch_module():
    """Issue 16: the torch version was used for the training step only; predict, val= and
    torch_module(...)(x) called the NumPy-only forward and failed with a raw TypeError."""
    from apsi_layers.backends.torch.module import torch_module

    net = sequential(dense(4, inputs=6), TorchScale(), dense(2))
    p = net.init(seed=0)
    res = fit(net, p, X, Y, loss="cross_entropy", verbose=False, backend="torch", precision="fp64",
              val=[X[:8], Y[:8]], epochs=2)
    on_torch = predict(net, res.params, X, backend="torch", precision="fp64")
    z = on_torch.data[:8] - on_torch.data[:8].max(axis=1, keepdims=True)     # the val loss by hand
    ce = -(z - np.log(np.exp(z).sum(axis=1, keepdims=True)))[np.arange(8), Y[:8]].mean()
    assert abs(res.val_history[-1] - ce) < 1e-12
    assert np.allclose(on_torch.data, predict(net, res.params, X).data, rtol=0, atol=1e-12)
    m = torch_module(net, res.params, dtype="float64").eval()
    assert np.allclose(m(torch.as_tensor(X)).detach().numpy(), on_torch.data, rtol=0, atol=1e-12)
    numpy_only = sequential(dense(4, inputs=6), Scale(), dense(2))
    with pytest.raises(ApsiError, match="the torch backend has no implementation of scale"):
        predict(numpy_only, numpy_only.init(seed=0), X, backend="torch")
