"""A step of fit(backend="torch") does no more work than the same step written with torch.nn (issue 36:
the torch backend within 1.05x of a hand-written loop), with the same numbers.

dense() calls addmm directly, as F.linear does inside, without wrapping the weight in two transposes:
the graph an MLP's loss builds has no more nodes than torch.nn's, and the outputs and gradients are
bit for bit those of F.linear.
"""

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from apsi_layers import layers as L  # noqa: E402
from apsi_layers.backends.torch import convert  # noqa: E402
from apsi_layers.backends.torch.losses import loss_value  # noqa: E402
from apsi_layers.backends.torch.ops import TorchOps  # noqa: E402
from apsi_layers.layers.context import Ctx  # noqa: E402


def nodes(t):
    """The backward graph's nodes under t (each once)."""
    seen, todo = set(), [t.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return [fn.name() for fn in seen]


def test_an_mlp_step_builds_no_more_graph_than_torch_nn():
    torch.manual_seed(0)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    model = L.mlp(8, 3, hidden=[16, 16])
    params = model.init(seed=0)
    leaves = [t.requires_grad_(True) for _, t in convert.leaves_to_torch(params, torch.device("cpu"),
                                                                          torch.float32)]
    ops = TorchOps("cpu", torch.float32)
    out = model.apply(convert.rebuild(params, leaves), x, Ctx(ops, training=True))
    mine = nodes(loss_value(ops, "cross_entropy", out, y))
    nn = torch.nn
    ref = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
    theirs = nodes(F.cross_entropy(ref(x), y))
    assert "TBackward0" not in mine
    assert len(mine) <= len(theirs), (sorted(mine), sorted(theirs))


def linear_both_ways(shape, dtype, autocast, contiguous=True):
    """(F.linear's, dense's) output and gradients for the same x, w [in, out] and b."""
    torch.manual_seed(1)
    x = torch.randn(*shape, dtype=dtype)
    if not contiguous:
        x = x.transpose(0, 1)
    x.requires_grad_(True)
    w = torch.randn(shape[-1], 7, dtype=dtype, requires_grad=True)
    b = torch.randn(7, dtype=dtype, requires_grad=True)
    results = []
    for fn in (lambda: F.linear(x, w.t(), b), lambda: TorchOps.dense(x, w, b)):
        for t in (x, w, b):
            t.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = fn()
        weights = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
        (out.float() * weights).sum().backward()
        results.append([out.detach(), x.grad, w.grad, b.grad])
    return results


@pytest.mark.parametrize("shape", [(16, 5), (4, 6, 5), (2, 3, 4, 5), (0, 5), (3, 0, 5)])
@pytest.mark.parametrize("dtype, autocast", [(torch.float32, False), (torch.float64, False),
                                             (torch.float32, True)])
def test_dense_gives_f_linears_bits(shape, dtype, autocast):
    expected, got = linear_both_ways(shape, dtype, autocast)
    for e, g in zip(expected, got, strict=True):
        assert e.dtype == g.dtype and e.shape == g.shape and torch.equal(e, g)


def test_dense_on_a_non_contiguous_input_gives_f_linears_bits():
    expected, got = linear_both_ways((4, 6, 5), torch.float32, False, contiguous=False)
    for e, g in zip(expected, got, strict=True):
        assert torch.equal(e, g)
