"""Issue 28: fit's sample_weight= and class_weight= (Keras's definitions), weighted_metrics=, and val's
sample weights, on both backends, against losses and gradients computed here by hand (NumPy) and by
torch.autograd on the same formula."""

import subprocess
import sys

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp

rng = np.random.default_rng(7)
N, F, C = 50, 3, 3
X = rng.standard_normal((N, F))
Y = np.argmax(X + 0.3 * rng.standard_normal((N, F)), axis=1)
W = rng.uniform(0.0, 3.0, N)                     # sample weights, not normalised
NET = mlp(F, C, hidden=[])                       # one dense layer: logits = x @ w + b
P = NET.init(seed=0)

BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]


@pytest.fixture(autouse=True)
def grants(project_with_python):
    return project_with_python


def _on(backend):
    if backend == "torch":
        pytest.importorskip("torch")
        return {"backend": "torch", "precision": "fp64"}
    return {}


def _logits(x=X, params=P):
    return x @ params.dense.w.data + params.dense.b.data


def _ce_each(logits, y):
    """-log softmax(logits)[y] per sample, by hand."""
    z = logits - logits.max(axis=1, keepdims=True)
    return np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]


def _frozen(backend, **kw):
    """A fit that does not move the weights (lr 0): its epoch loss is the loss at P."""
    return fit(NET, P, X, Y, opt=nn.sgd(lr=0.0), epochs=1, verbose=False, **_on(backend), **kw)


# --- the loss: Keras's sum_over_batch_size --------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch_size", [N, 16])
def test_weighted_cross_entropy_is_the_weighted_sum_over_the_samples(backend, batch_size):
    r = _frozen(backend, loss="cross_entropy", sample_weight=W, batch_size=batch_size)
    expected = np.sum(W * _ce_each(_logits(), Y)) / N                # not / sum(W) as torch's weight=
    assert r.history[0] == pytest.approx(expected, rel=1e-12)
    assert abs(expected - np.sum(W * _ce_each(_logits(), Y)) / W.sum()) > 1e-3   # the two differ


@pytest.mark.parametrize("backend", BACKENDS)
def test_weighted_regression_and_bce_losses(backend):
    target = rng.standard_normal((N, C))
    out = _logits()
    each = {"mse": np.mean((out - target) ** 2, axis=1), "mae": np.mean(np.abs(out - target), axis=1)}
    for loss, values in each.items():
        r = fit(NET, P, X, target, loss=loss, opt=nn.sgd(lr=0.0), sample_weight=W, batch_size=N,
                verbose=False, **_on(backend))
        assert r.history[0] == pytest.approx(np.sum(W * values) / N, rel=1e-12)
    t01 = (target > 0).astype(float)
    bce = np.mean(np.logaddexp(0.0, out) - out * t01, axis=1)
    r = fit(NET, P, X, t01, loss="bce", opt=nn.sgd(lr=0.0), sample_weight=W, batch_size=N, verbose=False,
            **_on(backend))
    assert r.history[0] == pytest.approx(np.sum(W * bce) / N, rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_match_torch_autograd_on_the_keras_formula(backend):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tF

    w = torch.tensor(P.dense.w.data, requires_grad=True)
    b = torch.tensor(P.dense.b.data, requires_grad=True)
    each = tF.cross_entropy(torch.tensor(X) @ w + b, torch.tensor(Y), reduction="none")
    (torch.sum(each * torch.tensor(W)) / N).backward()
    r = fit(NET, P, X, Y, loss="cross_entropy", opt=nn.sgd(lr=1.0), sample_weight=W, batch_size=N,
            verbose=False, **_on(backend))                    # one step: new = old - grad
    np.testing.assert_allclose(P.dense.w.data - r.params.dense.w.data, w.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(P.dense.b.data - r.params.dense.b.data, b.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loss_function_gives_one_loss_per_sample_and_fit_weighs_them(backend):
    def per_sample(pred, target):
        return nn.mean((pred - target) ** 2, axis=1)
    target = rng.standard_normal((N, C))
    r = fit(NET, P, X, target, loss=per_sample, opt=nn.sgd(lr=0.0), sample_weight=W, batch_size=10,
            verbose=False, **_on(backend))
    want = np.sum(W * np.mean((_logits() - target) ** 2, axis=1)) / N
    assert r.history[0] == pytest.approx(want, rel=1e-12)
    plain = fit(NET, P, X, target, loss=per_sample, opt=nn.sgd(lr=0.0), batch_size=10, verbose=False,
                **_on(backend))                                  # unweighted: the mean, as Keras
    assert plain.history[0] == pytest.approx(np.mean((_logits() - target) ** 2), rel=1e-12)


# --- class weights --------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_class_weight_is_each_samples_class_weight(backend):
    table = {0: 0.5, 2: 4.0}                                      # class 1 not named: weight 1 (Keras)
    as_samples = np.array([table.get(int(c), 1.0) for c in Y])
    kw = dict(loss="cross_entropy", opt=nn.adam(lr=0.05), epochs=3, batch_size=16, verbose=False,
              **_on(backend))
    by_class = fit(NET, P, X, Y, class_weight=table, **kw)
    by_sample = fit(NET, P, X, Y, sample_weight=as_samples, **kw)
    by_list = fit(NET, P, X, Y, class_weight=[0.5, 1.0, 4.0], **kw)
    assert by_class.history == by_sample.history == by_list.history
    assert np.array_equal(by_class.params.dense.w.data, by_sample.params.dense.w.data)
    frozen = _frozen(backend, loss="cross_entropy", class_weight=table, batch_size=N)
    assert frozen.history[0] == pytest.approx(np.sum(as_samples * _ce_each(_logits(), Y)) / N, rel=1e-12)


def test_class_weight_reads_bce_targets_and_one_hot_rows():
    t = (X[:, :1] > 0).astype(float)                              # [N, 1] 0/1 targets
    net = mlp(F, 1, hidden=[])
    p = net.init(seed=0)
    out = X @ p.dense.w.data + p.dense.b.data
    each = (np.logaddexp(0.0, out) - out * t)[:, 0]
    r = fit(net, p, X, t, loss="bce", class_weight={1: 3.0}, opt=nn.sgd(lr=0.0), batch_size=N, verbose=False)
    assert r.history[0] == pytest.approx(np.sum(np.where(t[:, 0] == 1, 3.0, 1.0) * each) / N, rel=1e-12)
    one_hot = np.eye(C)[Y]
    r = fit(NET, P, X, one_hot, loss="mse", class_weight={2: 5.0}, opt=nn.sgd(lr=0.0), batch_size=N,
            verbose=False)
    w = np.where(Y == 2, 5.0, 1.0)                                # argmax of the rows, as Keras
    want = np.sum(w * np.mean((_logits() - one_hot) ** 2, axis=1)) / N
    assert r.history[0] == pytest.approx(want, rel=1e-12)


# --- all weights 1 is the unweighted run, bit for bit ------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_weights_of_one_are_the_unweighted_run_bit_for_bit(backend):
    kw = dict(loss="cross_entropy", opt=nn.adam(lr=0.05), epochs=3, batch_size=16, metrics=["accuracy"],
              val={"x": X[:10], "y": Y[:10]}, verbose=False, **_on(backend))
    plain = fit(NET, P, X, Y, **kw)
    for extra in ({"sample_weight": np.ones(N)}, {"class_weight": {0: 1, 1: 1.0, 2: 1}},
                  {"class_weight": [1.0, 1.0, 1.0]}):
        r = fit(NET, P, X, Y, **dict(kw, **extra))
        assert r.history == plain.history and r.val_history == plain.val_history
        assert np.array_equal(r.params.dense.w.data, plain.params.dense.w.data)
    ones_val = fit(NET, P, X, Y, **dict(kw, val={"x": X[:10], "y": Y[:10], "sample_weight": [1.0] * 10}))
    assert ones_val.val_history == plain.val_history


def test_an_apsi_program_weighs_its_classes(tmp_path):
    (tmp_path / "w.apsi").write_text("""use layers
use nn
let x = randn(60, 3, seed=1)
let y = argmax(x, axis=1)
let net = mlp(3, 3, hidden=[8])
let p = net.init(seed=0)
let a = fit(net, p, x, y, loss="cross_entropy", epochs=3, verbose=false)
let ones = fit(net, p, x, y, loss="cross_entropy", epochs=3, verbose=false,
               sample_weight=[1.0 for i in range(60)])
let same = fit(net, p, x, y, loss="cross_entropy", epochs=3, verbose=false, class_weight={0: 1, 1: 1, 2: 1})
let heavy = fit(net, p, x, y, loss="cross_entropy", epochs=3, verbose=false, class_weight={2: 10.0},
                metrics=["accuracy"], weighted_metrics=["accuracy"])
print(a.history == ones.history, a.history == same.history, heavy.history[0] > a.history[0])
print(len(heavy.metrics.weighted_accuracy), heavy.metrics.accuracy == a.history)
""")
    p = subprocess.run([sys.executable, "-m", "apsi", "w.apsi"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["true true true", "3 false"]


# --- validation and weighted metrics ----------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_val_sample_weights_and_weighted_metrics(backend):
    xv, yv = X[:20], Y[:20]
    wv = rng.uniform(0.5, 2.0, 20)
    r = _frozen(backend, loss="cross_entropy", sample_weight=W, batch_size=N, metrics=["accuracy"],
                weighted_metrics=["accuracy", "top5"], val={"x": xv, "y": yv, "sample_weight": wv})
    assert r.val_history[0] == pytest.approx(np.sum(wv * _ce_each(_logits(xv), yv)) / 20, rel=1e-12)
    hit = np.argmax(_logits(), axis=1) == Y
    hit_v = np.argmax(_logits(xv), axis=1) == yv
    assert r.metrics.accuracy[0] == np.mean(hit)                              # metrics= stay unweighted
    assert r.metrics.weighted_accuracy[0] == pytest.approx(np.sum(W * hit) / W.sum(), rel=1e-12)
    assert r.val_metrics.weighted_accuracy[0] == pytest.approx(np.sum(wv * hit_v) / wv.sum(), rel=1e-12)
    assert r.metrics.weighted_top5[0] == 1.0                                   # 3 classes


def test_weighted_regression_metrics_match_their_definitions():
    sklearn = pytest.importorskip("sklearn.metrics")
    target = rng.standard_normal((N, C))
    r = fit(NET, P, X, target, loss="mse", opt=nn.sgd(lr=0.0), sample_weight=W, batch_size=N, verbose=False,
            weighted_metrics=["mae", "mse", "rmse", "r2"])
    out = _logits()
    m = r.metrics
    mae = sklearn.mean_absolute_error(target, out, sample_weight=W)
    mse = sklearn.mean_squared_error(target, out, sample_weight=W)
    assert m.weighted_mae[0] == pytest.approx(mae, rel=1e-12)
    assert m.weighted_mse[0] == pytest.approx(mse, rel=1e-12)
    assert m.weighted_rmse[0] == pytest.approx(np.sqrt(m.weighted_mse[0]), rel=1e-12)
    assert m.weighted_r2[0] == pytest.approx(sklearn.r2_score(target, out, sample_weight=W), rel=1e-12)


def test_validation_split_splits_the_weights_as_keras():
    r = _frozen("numpy", loss="cross_entropy", sample_weight=W, batch_size=N, validation_split=0.2)
    held = slice(40, None)
    assert r.val_history[0] == pytest.approx(np.sum(W[held] * _ce_each(_logits(X[held]), Y[held])) / 10,
                                             rel=1e-12)
    assert r.history[0] == pytest.approx(np.sum(W[:40] * _ce_each(_logits(X[:40]), Y[:40])) / 40, rel=1e-12)


def test_a_sequence_mask_spreads_each_samples_weight_over_its_kept_steps():
    from apsi_layers.layers import dense

    T = 4
    xs = rng.standard_normal((12, T, F))
    ys = rng.integers(0, C, (12, T))
    mask = rng.random((12, T)) > 0.3
    mask[:, 0] = True
    net = dense(C)                                   # per step: logits [12, T, C]
    p = net.init(seed=0, input_shape=[T, F])
    w = rng.uniform(0.5, 2.0, 12)
    r = fit(net, p, xs, ys, loss="cross_entropy", mask=mask, sample_weight=w, opt=nn.sgd(lr=0.0),
            batch_size=5, verbose=False)
    each = _ce_each((xs @ p.w.data + p.b.data).reshape(-1, C), ys.reshape(-1)).reshape(12, T)
    spread = np.broadcast_to(w[:, None], (12, T))
    # Keras's mask rule: sum(w * loss) over the kept steps / their count
    assert r.history[0] == pytest.approx(np.sum((spread * each)[mask]) / mask.sum(), rel=1e-12)


# --- refusals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, message", [
    ({"sample_weight": W, "class_weight": {0: 2.0}}, "give sample_weight= or class_weight=, not both"),
    ({"sample_weight": W[:10]}, r"sample_weight must hold one weight per sample \(50\).*got shape \[10\]"),
    ({"sample_weight": -W}, r"sample_weight\[0\] is -.*weights must be finite numbers >= 0"),
    ({"sample_weight": np.zeros(N)}, "every sample_weight is 0"),
    ({"class_weight": {"a": 1.0}}, "class_weight's classes must be ints >= 0"),
    ({"class_weight": 3}, r"class_weight must be a map \{class: weight\}"),
    ({"class_weight": {0: float("nan")}}, r"class_weight\[0\] is nan"),
    ({"weighted_metrics": [lambda p, t: 1.0]}, "weighted_metrics takes metric names"),
    ({"val": {"x": X[:5], "y": Y[:5], "sample_weight": [1.0, 2.0]}},
     r"fit \(val\): sample_weight must hold one weight per sample \(5\)"),
    ({"sample_weight": W, "loss": lambda p, t: nn.mean(p)},
     r"with sample_weight= or class_weight= it must return one loss per sample \(shape \[50\]\)"),
])
def test_weight_mistakes_are_named(kw, message):
    kw = dict({"loss": "cross_entropy", "batch_size": N, "verbose": False}, **kw)
    with pytest.raises(ApsiError, match=message):
        fit(NET, P, X, Y, **kw)


def test_class_weight_needs_one_class_per_sample():
    from apsi_layers.layers import dense, vae

    net = dense(C)
    xs, ys = rng.standard_normal((N, 2, F)), rng.integers(0, C, (N, 2))        # a label per step
    with pytest.raises(ApsiError, match=r"class_weight needs one class per sample .*shape \[50, 2\]"):
        fit(net, net.init(seed=0, input_shape=[2, F]), xs, ys, loss="cross_entropy", class_weight={0: 2.0},
            verbose=False)
    v = vae(F, 2, hidden=[4])
    with pytest.raises(ApsiError, match=r'sample_weight= does not apply to loss="vae"'):
        fit(v, v.init(seed=0), X, sample_weight=W, verbose=False)


def test_a_resume_with_other_weights_is_refused_and_the_same_continues_exactly():
    kw = dict(loss="cross_entropy", opt=nn.adam(lr=0.05), batch_size=16, verbose=False, sample_weight=W)
    whole = fit(NET, P, X, Y, epochs=4, **kw)
    fit(NET, P, X, Y, epochs=2, checkpoint="run.ckpt", **kw)
    with pytest.raises(ApsiError, match="sample_weight/class_weight differs"):
        fit(NET, P, X, Y, epochs=4, resume="run.ckpt", **dict(kw, sample_weight=W[::-1].copy()))
    rest = fit(NET, P, X, Y, epochs=4, resume="run.ckpt", **kw)
    assert rest.history == whole.history
    assert np.array_equal(rest.params.dense.w.data, whole.params.dense.w.data)
