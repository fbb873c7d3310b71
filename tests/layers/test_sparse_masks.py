"""Issue 16: a sample mask where some mini-batches keep no sample (every 20th sample labelled, batch 32)
crashed on NumPy ("no labels") and stopped on torch ("the loss became NaN"). Such batches are skipped,
the epoch loss is the mean over the kept samples, and an all-false mask is refused before training."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp, predict

rng = np.random.default_rng(5)
N = 200
X = rng.standard_normal((N, 4))
Y = (X[:, 0] + X[:, 1] > 0).astype(int)
LABELLED = np.arange(N) % 20 == 0          # 10 labelled samples; most batches of 32 keep 1 or 2, some 0
NET = mlp(4, 2, hidden=[6])
BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]


pytestmark = pytest.mark.usefixtures("python_allowed")


def cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_batches_without_labels_are_skipped(backend):
    if backend == "torch":
        pytest.importorskip("torch")
    mask = LABELLED.copy()
    mask[:64] = False                      # the first two batches of the unshuffled order keep nothing
    r = fit(NET, NET.init(seed=0), nn.Tensor(X), nn.Tensor(Y), mask=nn.Tensor(mask), loss="cross_entropy",
            opt=nn.sgd(lr=0.0), epochs=2, batch_size=32, backend=backend, precision="fp64", verbose=False)
    # lr 0: the parameters never move, so each epoch's loss is the masked loss of the initial model
    want = cross_entropy(predict(NET, NET.init(seed=0), nn.Tensor(X)).data[mask], Y[mask])
    assert np.allclose(r.history, [want, want], rtol=1e-12, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sparse_labels_train(backend):
    if backend == "torch":
        pytest.importorskip("torch")
    r = fit(NET, NET.init(seed=0), nn.Tensor(X), nn.Tensor(Y), mask=nn.Tensor(LABELLED), loss="cross_entropy",
            epochs=3, batch_size=32, backend=backend, precision="fp64", verbose=False)
    assert len(r.history) == 3 and all(np.isfinite(r.history))


def test_an_all_false_mask_is_refused_before_training():
    with pytest.raises(ApsiError, match="mask is false everywhere, so it keeps no sample to train on"):
        fit(NET, NET.init(seed=0), nn.Tensor(X), nn.Tensor(Y), mask=nn.Tensor(np.zeros(N, bool)),
            loss="cross_entropy", epochs=1, verbose=False)
