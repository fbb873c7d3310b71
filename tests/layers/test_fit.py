"""fit and predict on NumPy: training works, options behave, the same call gives the same numbers."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import batch_norm, dense, dropout, fit, mlp, predict, sequential


def blobs(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2))
    y = (x[:, 0] * x[:, 1] > 0).astype(np.int64)
    return nn.Tensor(x), nn.Tensor(y.astype(float))


def test_mlp_learns_and_predicts():
    x, y = blobs()
    net = mlp(2, 2, hidden=[32, 32])
    r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", opt=nn.adam(lr=0.02), epochs=30, batch_size=16)
    assert r.history[-1] < r.history[0] / 4
    assert r.backend == "numpy" and r.device == "cpu" and r.steps == 30 * 8 and r.seconds > 0
    accuracy = (predict(net, r.params, x).data.argmax(1) == y.data).mean()
    assert accuracy > 0.9


def test_same_call_same_numbers_bit_for_bit():
    x, y = blobs()
    net = sequential(dense(16, activation="relu", inputs=2), batch_norm(), dropout(0.3), dense(2))
    p = net.init(seed=3)
    runs = [fit(net, p, x, y, loss="cross_entropy", opt="adam", epochs=3, batch_size=10, seed=7)
            for _ in range(2)]
    for (_, a), (_, b) in zip(nn.flatten(runs[0].params), nn.flatten(runs[1].params), strict=True):
        assert np.array_equal(a.data, b.data)
    assert runs[0].history == runs[1].history
    other = fit(net, p, x, y, loss="cross_entropy", opt="adam", epochs=3, batch_size=10, seed=8)
    assert runs[0].history != other.history
    # with one batch per epoch the order hardly matters (rounding): the seed then moves the losses
    # only through dropout's draws
    def whole(model, seed):
        return np.array(fit(model, model.init(seed=3), x, y, loss="cross_entropy", opt="adam", epochs=2,
                            batch_size=120, seed=seed).history)
    plain = sequential(dense(16, activation="relu", inputs=2), batch_norm(), dense(2))
    assert np.allclose(whole(plain, 7), whole(plain, 8), rtol=1e-12, atol=0)
    assert np.array_equal(whole(net, 7), whole(net, 7))
    assert np.abs(whole(net, 7) - whole(net, 8)).max() > 1e-4


def test_fit_leaves_the_callers_tree_and_optimizer_alone():
    x, y = blobs()
    net = mlp(2, 2, hidden=[8])
    p = net.init(seed=0)
    before = [v.data.copy() for _, v in nn.flatten(p)]
    opt = nn.adam(lr=0.01)
    fit(net, p, x, y, loss="cross_entropy", opt=opt, epochs=1)
    assert all(np.array_equal(a, v.data) for a, (_, v) in zip(before, nn.flatten(p), strict=True))
    assert opt.steps == 0


def test_batch_norm_running_statistics_are_updated_by_fit_not_the_optimizer():
    x, y = blobs()
    net = sequential(dense(4, inputs=2), batch_norm(momentum=0.5), dense(2))
    p = net.init(seed=0)
    r = fit(net, p, x, y, loss="cross_entropy", opt=nn.sgd(lr=0.0), epochs=1, batch_size=120)
    # lr 0: trainable weights unchanged, the running mean moved halfway to the batch mean
    assert np.array_equal(r.params.dense.w.data, p.dense.w.data)
    h = x.data @ p.dense.w.data + p.dense.b.data
    assert np.allclose(r.params.batch_norm.state.mean.data, 0.5 * h.mean(0))
    assert np.allclose(r.params.batch_norm.state.var.data, 0.5 + 0.5 * h.var(0, ddof=1))


def test_nan_loss_stops_naming_epoch_and_step():
    x, y = blobs()
    net = mlp(2, 1, hidden=[8])
    with pytest.raises(ApsiError, match=r"the loss became (NaN|infinite) at epoch 1, step \d+ .*clip=1.0"):
        fit(net, net.init(seed=0), x, y, loss="mse", opt=nn.sgd(lr=1e6), epochs=3, batch_size=8)
