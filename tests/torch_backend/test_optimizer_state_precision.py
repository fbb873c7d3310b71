"""Issue 16: NAdam at fp64 drifted 1e-10 from NumPy: torch.optim kept its scalar state (mu_product, the
step) in float32. The state now follows the weights' precision."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.torch.optim import TorchOptimizer  # noqa: E402
from apsi_layers.layers import fit, mlp  # noqa: E402
from apsi_layers.nn.autograd import tree  # noqa: E402

pytestmark = pytest.mark.usefixtures("python_allowed")


@pytest.mark.parametrize("make", [lambda: nn.nadam(lr=0.05), lambda: nn.radam(lr=0.05),
                                  lambda: nn.adam(lr=0.05)], ids=["nadam", "radam", "adam"])
def test_fp64_torch_matches_numpy_to_rounding(make):
    x = np.random.default_rng(1).standard_normal((64, 5))
    y = np.sin(x @ np.arange(1.0, 6.0))
    net = mlp(5, 1, hidden=[16])
    runs = [fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss="mse", opt=make(), epochs=15,
                batch_size=8, backend=b, precision="fp64", verbose=False) for b in ("numpy", "torch")]
    assert np.allclose(runs[0].history, runs[1].history, rtol=1e-13, atol=0)
    for a, b in zip(tree.leaves(runs[0].params), tree.leaves(runs[1].params), strict=True):
        assert np.max(np.abs(a.data - b.data)) < 1e-12


def test_scalar_state_is_float64_for_float64_weights():
    w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt = TorchOptimizer(nn.nadam(lr=0.1), [w])
    w.grad = torch.ones(3, dtype=torch.float64)
    opt.step()
    state = opt.torch.state[w]
    assert state["mu_product"].dtype == torch.float64 and state["step"].dtype == torch.float64
    assert torch.get_default_dtype() == torch.float32          # restored after the step
