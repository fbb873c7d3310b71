"""Issue 16: `val=` takes a mask like the training data ([x, y, mask] or {x, y, mask}); the validation
loss is then the masked loss, computed here independently from predict's outputs."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record
from apsi_layers import nn
from apsi_layers.layers import fit, lstm_classifier, mlp, predict

rng = np.random.default_rng(3)
N, T, F = 24, 6, 3
X = rng.standard_normal((N, T, F))
LENGTHS = rng.integers(2, T + 1, N)
MASK = np.arange(T)[None, :] < LENGTHS[:, None]          # padded sequences: true = a real step
X[~MASK] = 7.0                                          # padding values that change the loss if read
Y = rng.integers(0, 3, N)
NET = lstm_classifier(F, 3, units=5)


def cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()




BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["list", "record"])
def test_val_mask_gives_the_masked_loss(backend, form, python_allowed):
    if backend == "torch":
        pytest.importorskip("torch")
    val = [nn.Tensor(X), nn.Tensor(Y), nn.Tensor(MASK)] if form == "list" else \
        Record(x=nn.Tensor(X), y=nn.Tensor(Y), mask=nn.Tensor(MASK))
    r = fit(NET, NET.init(seed=0), nn.Tensor(X), nn.Tensor(Y), mask=nn.Tensor(MASK), loss="cross_entropy",
            epochs=1, batch_size=8, val=val, backend=backend, precision="fp64", verbose=False)
    logits = predict(NET, r.params, nn.Tensor(X), mask=nn.Tensor(MASK), backend="numpy").data
    assert abs(r.val_history[0] - cross_entropy(logits, Y)) < 1e-10
    unmasked = predict(NET, r.params, nn.Tensor(X), backend="numpy").data
    assert abs(cross_entropy(unmasked, Y) - cross_entropy(logits, Y)) > 1e-3   # the mask matters here


@pytest.mark.parametrize("backend", BACKENDS)
def test_val_mask_over_targets_restricts_the_loss(backend, python_allowed):
    if backend == "torch":
        pytest.importorskip("torch")
    net = mlp(2, 1, hidden=[4])
    x = rng.standard_normal((10, 2))
    y = rng.standard_normal(10)
    keep = np.arange(10) % 3 == 0
    r = fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss="mse", epochs=1, batch_size=4,
            val=[nn.Tensor(x), nn.Tensor(y), nn.Tensor(keep)], backend=backend, precision="fp64",
            verbose=False)
    pred = predict(net, r.params, nn.Tensor(x)).data[:, 0]
    assert abs(r.val_history[0] - np.mean((pred[keep] - y[keep]) ** 2)) < 1e-10


def test_val_record_with_other_fields_is_refused():
    with pytest.raises(ApsiError, match="val as a record needs the fields x and y"):
        fit(NET, NET.init(seed=0), nn.Tensor(X), nn.Tensor(Y), loss="cross_entropy", epochs=1,
            val=Record(inputs=nn.Tensor(X), y=nn.Tensor(Y)), verbose=False)


def test_custom_loss_gets_targets_shaped_like_the_output():
    """[N] targets for a one-output model reach a loss function as [N, 1], as for named losses."""
    net = mlp(2, 1, hidden=[4])
    x = rng.standard_normal((12, 2))
    y = rng.standard_normal(12)
    seen = []

    def loss(pred, target):
        seen.append((tuple(pred.shape), tuple(target.shape)))
        return nn.mean((pred - target) ** 2)

    custom = fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss=loss, epochs=2, batch_size=4,
                 verbose=False)
    named = fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss="mse", epochs=2, batch_size=4,
                verbose=False)
    assert all(p == t for p, t in seen), seen
    assert np.allclose(custom.history, named.history, rtol=1e-12)


def test_custom_loss_with_accidentally_broadcasting_targets_is_refused():
    net = mlp(2, 1, hidden=[4])
    x = rng.standard_normal((12, 2))
    with pytest.raises(ApsiError, match=r"shape \[1\] but the targets have per-sample shape \[3\]"):
        fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(rng.standard_normal((12, 3))),
            loss=lambda p, t: nn.mean((p - t) ** 2), epochs=1, verbose=False)
