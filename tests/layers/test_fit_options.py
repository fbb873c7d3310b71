"""fit's options one by one, predict's batching, and memory staying flat over a long fit."""

import resource

import numpy as np
import pytest

from apsi_layers import layers as L
from apsi_layers import nn
from apsi_layers.nn.autograd.tape import STATE

rng = np.random.default_rng(0)
X = rng.standard_normal((40, 3))
W = rng.standard_normal((3, 1))
Y = X @ W + 0.1


def reg(**kw):
    net = L.mlp(3, 1, hidden=[8])
    kw.setdefault("loss", "mse")
    kw.setdefault("opt", nn.adam(lr=0.01))
    return net, L.fit(net, net.init(seed=0), nn.Tensor(X), nn.Tensor(Y), **kw)


def test_val_adds_val_history_in_eval_mode():
    _, r = reg(epochs=4, val=[nn.Tensor(X[:10]), nn.Tensor(Y[:10])])
    assert len(r.val_history) == 4 and r.val_history[-1] < r.val_history[0]
    _, r = reg(epochs=2)
    assert r.val_history == []


def test_schedule_sets_the_learning_rate_each_step():
    seen = []

    def zero(step):
        seen.append(step)
        return 0.0
    net, r = reg(epochs=2, batch_size=10, schedule=zero)
    assert seen == list(range(8))
    p0 = net.init(seed=0)
    assert all(np.array_equal(a.data, b.data) for (_, a), (_, b) in zip(nn.flatten(p0), nn.flatten(r.params),
                                                                        strict=True))


def test_clip_bounds_the_update():
    net = L.mlp(3, 1, hidden=[8])
    p = net.init(seed=0)
    big = nn.Tensor(Y * 1000)
    x = nn.Tensor(X)
    clipped = L.fit(net, p, x, big, loss="mse", opt=nn.sgd(lr=0.1), epochs=1, batch_size=40, clip=1e-3)
    free = L.fit(net, p, x, big, loss="mse", opt=nn.sgd(lr=0.1), epochs=1, batch_size=40)
    pairs = zip(nn.flatten(clipped.params), nn.flatten(p), strict=True)
    moved = [np.abs(a.data - b.data).max() for (_, a), (_, b) in pairs]
    assert max(moved) <= 0.1 * 1e-3 + 1e-12
    assert np.abs(free.params.dense.w.data - p.dense.w.data).max() > 1e-2


@pytest.mark.parametrize("loss", ["mae", "huber", "bce", "mse"])
def test_named_losses_train(loss):
    y = (Y > 0).astype(float) if loss == "bce" else Y
    net = L.mlp(3, 1, hidden=[8])
    r = L.fit(net, net.init(seed=0), nn.Tensor(X), nn.Tensor(y), loss=loss, opt=nn.adam(lr=0.02), epochs=10)
    assert r.history[-1] < r.history[0]


def test_a_function_loss_and_one_dimensional_targets():
    net = L.mlp(3, 1, hidden=[8])
    r = L.fit(net, net.init(seed=0), nn.Tensor(X), nn.Tensor(Y[:, 0]),
              loss=lambda p, t: nn.mean((p - t) ** 2), opt="adam", epochs=3)
    assert len(r.history) == 3


def test_verbose_prints_one_line_per_epoch_when_not_a_terminal(capsys):
    reg(epochs=3, verbose=True, val=[nn.Tensor(X), nn.Tensor(Y)])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("epoch 1/3  loss ") and " val " in lines[0]
    assert lines[0].endswith("steps/s")
    reg(epochs=2)
    assert capsys.readouterr().out == ""


def test_several_inputs_and_outputs():
    net = L.dag(inputs=["a", "b"], nodes=nn_record(
        h=[L.merge("concat"), ["a", "b"]], y1=[L.dense(1), "h"], y2=[L.dense(2), "h"]), outputs=["y1", "y2"])
    a, b = rng.standard_normal((20, 2)), rng.standard_normal((20, 3))
    p = net.init(seed=0, input_shape=[[2], [3]])
    t1, t2 = rng.standard_normal((20, 1)), rng.standard_normal((20, 2))
    r = L.fit(net, p, [nn.Tensor(a), nn.Tensor(b)], [nn.Tensor(t1), nn.Tensor(t2)], loss="mse", opt="adam",
              epochs=5, batch_size=5)
    assert r.history[-1] < r.history[0]
    y1, y2 = L.predict(net, r.params, [nn.Tensor(a), nn.Tensor(b)], batch_size=7)
    assert y1.shape == (20, 1) and y2.shape == (20, 2)


def nn_record(**fields):
    from apsi_lang.values import Record
    return Record(**fields)


def test_graph_fit_uses_the_node_mask():
    n = 30
    edges = np.array([[i for i in range(n)] + [(i + 1) % n for i in range(n)],
                      [(i + 1) % n for i in range(n)] + [i for i in range(n)]])
    labels = (np.arange(n) // 15).astype(float)
    feats = np.eye(n)
    train = np.zeros(n, dtype=bool)
    train[[0, 1, 14, 15, 16, 29]] = True
    g = L.gcn_classifier(n, 2, hidden=[8], dropout=0.0)
    r = L.fit(g, g.init(seed=0), nn.Tensor(feats), nn.Tensor(labels), loss="cross_entropy", graph=edges,
              mask=train, opt=nn.adam(lr=0.05), epochs=40)
    assert r.steps == 40 and r.history[-1] < 0.2
    # a label outside the training mask may be anything: only masked labels are checked
    labels[5] = 7
    L.fit(g, g.init(seed=0), nn.Tensor(feats), nn.Tensor(labels), loss="cross_entropy", graph=edges,
          mask=train)


def test_sequence_mask_restricts_the_loss_to_real_steps():
    lm = L.transformer_lm(6, d=8, heads=2, layers=1, context=5)
    p = lm.init(seed=0)
    x = rng.integers(0, 6, (4, 5))
    y = rng.integers(0, 6, (4, 5))
    mask = np.ones((4, 5), dtype=bool)
    mask[:, 3:] = False
    sgd0 = nn.sgd(lr=0.0)
    a = L.fit(lm, p, x, y, loss="cross_entropy", mask=mask, opt=sgd0, batch_size=4).history[0]
    y2 = y.copy()
    y2[:, 3:] = (y2[:, 3:] + 1) % 6          # changing padded targets changes nothing
    b = L.fit(lm, p, x, y2, loss="cross_entropy", mask=mask, opt=sgd0, batch_size=4).history[0]
    c = L.fit(lm, p, x, y2, loss="cross_entropy", opt=sgd0, batch_size=4).history[0]
    assert a == b and a != c


def test_predict_is_the_same_in_any_batch_size():
    net = L.sequential(L.dense(4, inputs=3), L.batch_norm(), L.dropout(0.5), L.dense(2))
    p = net.init(seed=0)
    whole = L.predict(net, p, nn.Tensor(X))
    parts = L.predict(net, p, nn.Tensor(X), batch_size=7)
    assert np.allclose(whole.data, parts.data, rtol=0, atol=1e-14)


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.slow
def test_memory_stays_flat_over_a_long_fit():
    net = L.mlp(3, 1, hidden=[64, 64])
    data = nn.Tensor(np.tile(X, (5, 1)))
    target = nn.Tensor(np.tile(Y, (5, 1)))
    p = net.init(seed=0)
    L.fit(net, p, data, target, loss="mse", epochs=2, batch_size=10)      # warm up allocators
    before = _rss_mb()
    r = L.fit(net, p, data, target, loss="mse", epochs=40, batch_size=10)
    assert r.steps == 800
    assert _rss_mb() - before < 20          # peak resident memory did not grow with the steps
    assert STATE.tape is None


def test_the_progress_bar_runs_on_a_terminal(monkeypatch, capsys):
    import sys

    from apsi_layers.layers.training import progress

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "160")
    assert isinstance(progress.progress(True, 2, 3), progress.Bar)
    _, r = reg(epochs=3, verbose=True, val=[nn.Tensor(X), nn.Tensor(Y)])
    assert len(r.history) == 3
    out = capsys.readouterr().out
    # one bar per epoch, each left with its loss and validation loss; steps/s while it runs
    for epoch, (loss, val) in enumerate(zip(r.history, r.val_history, strict=True), 1):
        assert f"epoch {epoch}/3" in out and f"loss {loss:.4f}  val {val:.4f}" in out
    assert "steps/s" in out and "2/2" in out
    bar = progress.Bar(2, 4)               # while an epoch runs: its running loss, rate, time left
    bar.start()
    bar.step(0.5)
    bar.step(0.25)
    info = bar.bar.tasks[-1].fields["info"]
    bar.close()
    assert info.startswith("loss 0.3750  ") and "steps/s" in info and info.endswith(" left")
    assert progress._duration(59) == "59s" and progress._duration(125) == "2m05s"


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam"])
def test_every_optimizer_name_is_nns_optimizer_with_its_defaults(name):
    from apsi_layers.layers.training.plan import fit_plan

    net = L.mlp(3, 1, hidden=[8])
    plan = fit_plan(net, net.init(seed=0), X, Y, {"loss": "mse", "opt": name})
    fresh = getattr(nn, name)()
    assert type(plan.opt) is type(fresh) and vars(plan.opt) == vars(fresh)
    r = L.fit(net, net.init(seed=0), nn.Tensor(X), nn.Tensor(Y), loss="mse", opt=name, epochs=8, batch_size=8)
    assert r.history[-1] < r.history[0]


def test_named_losses_compute_their_formulas():
    """history[0] of a full-batch fit with lr 0 is the loss of the initial model, as written."""
    net = L.mlp(3, 2, hidden=[4])
    p = net.init(seed=0)
    out = L.predict(net, p, nn.Tensor(X)).data
    t = rng.standard_normal((40, 2))
    labels = (X[:, 0] > 0).astype(int)
    bits = (t > 0).astype(float)
    d = out - t
    a = np.abs(d)
    z = out - out.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    want = {
        "mse": ((d ** 2).mean(), t), "mae": (a.mean(), t),
        "huber": (np.where(a < 1, 0.5 * d ** 2, a - 0.5).mean(), t),
        "cross_entropy": (-logp[np.arange(40), labels].mean(), labels.astype(float)),
        "bce": ((np.maximum(out, 0) - out * bits + np.log1p(np.exp(-np.abs(out)))).mean(), bits),
    }
    for loss, (value, target) in want.items():
        r = L.fit(net, p, nn.Tensor(X), nn.Tensor(target), loss=loss, opt=nn.sgd(lr=0.0), batch_size=40)
        assert np.isclose(r.history[0], value, rtol=1e-12, atol=0), loss
