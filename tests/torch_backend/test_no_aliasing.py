"""Issue 16: the tree a caller passes in is never changed. At float64 on the CPU torch.as_tensor shared
the caller's NumPy memory, so torch.optim's in-place updates (and batch norm's running statistics)
rewrote the caller's parameters."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.torch.module import torch_module  # noqa: E402
from apsi_layers.layers import fit, mlp  # noqa: E402
from apsi_layers.nn.autograd import tree  # noqa: E402

pytestmark = pytest.mark.usefixtures("python_allowed")


def snapshot(params):
    return [(name, np.array(leaf.data, copy=True)) for name, leaf in tree.named_leaves(params)]


def assert_unchanged(params, before):
    for (name, leaf), (_, old) in zip(tree.named_leaves(params), before, strict=True):
        assert np.array_equal(leaf.data, old), name


NET = mlp(4, 2, hidden=[8], batch_norm=True)
X = np.random.default_rng(0).standard_normal((40, 4))
Y = (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_fit_on_torch_leaves_the_callers_tree_alone(precision):
    params = NET.init(seed=0)
    before = snapshot(params)
    r = fit(NET, params, nn.Tensor(X), nn.Tensor(Y), loss="cross_entropy", epochs=2, batch_size=8,
            backend="torch", precision=precision, device="cpu", verbose=False)
    assert_unchanged(params, before)
    changed = [not np.array_equal(leaf.data, old) for (_, leaf), (_, old)
               in zip(tree.named_leaves(r.params), before, strict=True)]
    assert any(changed)                      # it did train: the result differs from the input


def test_torch_module_float64_leaves_the_callers_tree_alone():
    params = NET.init(seed=0)
    before = snapshot(params)
    m = torch_module(NET, params, dtype="float64")
    m.train()
    out = m(torch.tensor(X))                 # batch norm updates its running statistics here
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    out.sum().backward()
    opt.step()
    assert_unchanged(params, before)
