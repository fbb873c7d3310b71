"""Issue 16: bad data is named before training, on both backends: NaN/inf in inputs, targets or val
(reported before as "the loss became NaN ... lower the learning rate", or a silent val_history of
NaN), and labels too large for an int (1e30 printed as -9223372036854775808)."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp, predict

BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]
X = np.random.default_rng(0).standard_normal((10, 3))
Y = X @ np.array([1.0, -2.0, 0.5])


pytestmark = pytest.mark.usefixtures("python_allowed")


def with_value(a, where, value):
    a = a.copy()
    a[where] = value
    return a


def train(backend, x=X, y=Y, loss="mse", classes=1, **kw):
    if backend == "torch":
        pytest.importorskip("torch")
    net = mlp(3, classes, hidden=[4])
    return fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss=loss, epochs=1, batch_size=4,
               backend=backend, verbose=False, **kw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case, message", [
    (dict(x=with_value(X, (3, 2), np.nan)), "fit: inputs hold nan at row 3, column 2"),
    (dict(x=with_value(X, (7, 0), -np.inf)), "fit: inputs hold -inf at row 7, column 0"),
    (dict(y=with_value(Y, 5, np.inf)), "fit: targets hold inf at row 5"),
    (dict(val=[nn.Tensor(with_value(X, (1, 1), np.nan)), nn.Tensor(Y)]),
     "fit (val): inputs hold nan at row 1"),
    (dict(val=[nn.Tensor(X), nn.Tensor(with_value(Y, 2, np.nan))]), "fit (val): targets hold nan at row 2"),
])
def test_non_finite_data_is_named_before_training(backend, case, message):
    with pytest.raises(ApsiError) as info:
        train(backend, **case)
    assert message in info.value.message and "learning rate" not in info.value.message


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("label, message", [
    (1e30, "fit: label 1e+30 is out of range: the model has 2 classes"),
    (-1e30, "fit: label -1e+30 is out of range"),
    (np.inf, "fit: targets hold inf at row 4")])
def test_huge_labels_show_their_value(backend, label, message):
    y = with_value((X[:, 0] > 0).astype(float), 4, label)
    with pytest.raises(ApsiError) as info:
        train(backend, y=y, loss="cross_entropy", classes=2)
    assert message in info.value.message


def test_predict_names_non_finite_inputs():
    net = mlp(3, 1)
    with pytest.raises(ApsiError, match="predict: inputs hold nan at row 0, column 0"):
        predict(net, net.init(seed=0), nn.Tensor(with_value(X, (0, 0), np.nan)))
