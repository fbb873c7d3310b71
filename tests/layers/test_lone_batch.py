"""Issue 16: batch norm with a last mini-batch of one sample: NumPy trained on it (normalising to beta,
dragging the running variance to 0), torch stopped mid-training with PyTorch's raw message. Both now
refuse before training, naming N and batch_size."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp

X = np.random.default_rng(0).standard_normal((33, 3))
Y = (X[:, 0] > 0).astype(int)


pytestmark = pytest.mark.usefixtures("python_allowed")


@pytest.mark.parametrize("backend", ["numpy", pytest.param("torch", marks=pytest.mark.torch)])
def test_a_lone_last_sample_with_batch_norm_is_refused_before_training(backend):
    if backend == "torch":
        pytest.importorskip("torch")
    net = mlp(3, 2, hidden=[4], batch_norm=True)
    with pytest.raises(ApsiError) as info:
        fit(net, net.init(seed=0), nn.Tensor(X), nn.Tensor(Y), loss="cross_entropy", batch_size=32,
            backend=backend, verbose=False)
    assert info.value.message.startswith("fit: the last mini-batch would hold one sample (N = 33, "
                                         "batch_size = 32)")


def test_without_batch_norm_a_lone_sample_trains():
    net = mlp(3, 2, hidden=[4])
    r = fit(net, net.init(seed=0), nn.Tensor(X), nn.Tensor(Y), loss="cross_entropy", batch_size=32,
            verbose=False)
    assert np.isfinite(r.history[0])
