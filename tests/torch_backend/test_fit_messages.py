"""Issue 16: messages from the torch backend read like NumPy's: prefixed with fit:/predict:, no raw
PyTorch text (an lr beyond float32 stopped with "value cannot be converted ... without overflow")."""

import numpy as np
import pytest

pytest.importorskip("torch")

from apsi_lang.errors import ApsiError  # noqa: E402
from apsi_layers import nn  # noqa: E402
from apsi_layers.layers import fit, mlp, predict  # noqa: E402

pytestmark = pytest.mark.usefixtures("python_allowed")    # whatever an earlier test left installed

NET = mlp(3, 1, hidden=[4])
X = nn.Tensor(np.random.default_rng(0).standard_normal((8, 3)))
Y = nn.Tensor(np.random.default_rng(1).standard_normal((8, 1)))


def _fit(**kw):
    return fit(NET, NET.init(seed=0), X, Y, loss="mse", epochs=1, verbose=False, **kw)


@pytest.mark.parametrize("backend", ["numpy", "torch", "auto"])
def test_an_unknown_precision_is_named_the_same_on_every_backend(backend):
    with pytest.raises(ApsiError, match=r'^fit: precision="fp8" is not one of fp64, fp32, tf32, bf16, fp16'):
        _fit(backend=backend, precision="fp8")
    with pytest.raises(ApsiError, match=r'^predict: precision="fp8" is not one of'):
        predict(NET, NET.init(seed=0), X, backend=backend, precision="fp8")


def test_device_problems_carry_the_function_name():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(ApsiError, match=r'^fit: device="cuda": PyTorch sees no CUDA/ROCm GPU'):
        _fit(backend="torch", device="cuda")
    with pytest.raises(ApsiError, match=r'^predict: device="gpu" is not a device'):
        predict(NET, NET.init(seed=0), X, backend="torch", device="gpu")


def test_an_lr_beyond_float32_is_named_not_pytorchs_overflow_text():
    with pytest.raises(ApsiError, match=r"^fit: sgd's lr=1e\+300 is beyond float32's range"):
        _fit(backend="torch", opt=nn.sgd(lr=1e300))
    with pytest.raises(ApsiError, match=r"^fit: the schedule's lr=1e\+39 is beyond float32's range"):
        _fit(backend="torch", schedule=lambda step: 1e39)
    r = _fit(backend="torch", precision="fp64", opt=nn.sgd(lr=1e-300))   # fine in float64
    assert r.backend == "torch"
