"""Parameter trees: map, flatten to dotted names and back, count, global-norm clipping."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record
from apsi_layers import nn


def model():
    return Record(layers=[Record(w=nn.ones(2, 3), b=nn.zeros(3)), Record(w=nn.ones(3, 1), b=nn.zeros(1))],
                  scale=nn.array(2.0))


def test_flatten_names_and_back():
    flat = nn.flatten(model())
    assert [n for n, _ in flat] == ["layers.0.w", "layers.0.b", "layers.1.w", "layers.1.b", "scale"]
    back = nn.unflatten(flat)
    assert isinstance(back.layers, list) and back.layers[1].w.shape == (3, 1)
    assert back.scale.item() == 2.0


def test_unflatten_errors():
    with pytest.raises(ApsiError, match="numbered"):
        nn.unflatten([("a.0", 1), ("a.2", 2)])
    with pytest.raises(ApsiError, match="twice"):
        nn.unflatten([("a", 1), ("a", 2)])


def test_map_count_and_norm():
    t = model()
    doubled = nn.tree_map(lambda v: v * 2, t)
    assert doubled.layers[0].w.data.sum() == 12 and t.layers[0].w.data.sum() == 6
    summed = nn.tree_map(lambda a, b: a + b, t, doubled)
    assert summed.scale.item() == 6.0
    assert nn.param_count(t) == 6 + 3 + 3 + 1 + 1
    assert nn.global_norm(t) == pytest.approx(np.sqrt(6 + 3 + 4))
    with pytest.raises(ApsiError, match="differ in structure"):
        nn.tree_map(lambda a, b: a, t, Record(x=1))


def test_clip_by_global_norm_matches_torch_rule():
    g = Record(a=nn.array([3.0, 4.0]))
    clipped = nn.clip_by_global_norm(g, 1.0)
    np.testing.assert_allclose(clipped.a.data, np.array([3, 4]) * (1.0 / (5 + 1e-6)))
    untouched = nn.clip_by_global_norm(g, 10.0)
    np.testing.assert_allclose(untouched.a.data, [3, 4])
    with pytest.raises(ApsiError, match="max_norm"):
        nn.clip_by_global_norm(g, 0)


@pytest.mark.torch
def test_clip_matches_torch():
    torch = pytest.importorskip("torch")
    arrays = [np.random.default_rng(i).standard_normal((3, 2)) * 5 for i in range(3)]
    ps = [torch.zeros(3, 2, dtype=torch.float64, requires_grad=True) for _ in arrays]
    for p, a in zip(ps, arrays, strict=True):
        p.grad = torch.tensor(a)
    norm = torch.nn.utils.clip_grad_norm_(ps, 2.0)
    ours = nn.clip_by_global_norm([nn.Tensor(a) for a in arrays], 2.0)
    assert nn.global_norm([nn.Tensor(a) for a in arrays]) == pytest.approx(norm.item(), rel=1e-12)
    for mine, p in zip(ours, ps, strict=True):
        np.testing.assert_allclose(mine.data, p.grad.numpy(), rtol=1e-12)
