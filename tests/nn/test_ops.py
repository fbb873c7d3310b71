"""Forward behaviour of tensors and ops, and the error messages users meet."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn


def test_operators_mix_with_numbers_on_both_sides():
    a = nn.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose((2 - a).data, [1, 0, -2])
    np.testing.assert_allclose((1 / a).data, [1, 0.5, 0.25])
    np.testing.assert_allclose((2 ** a).data, [2, 4, 16])
    np.testing.assert_allclose((a ** 2 * 3 + 1).data, [4, 13, 49])
    np.testing.assert_allclose((-a).data, [-1, -2, -4])
    assert (a > 1.5).data.tolist() == [False, True, True]
    assert (np.ones(3) + a).data.tolist() == [2, 3, 5]      # ndarray on the left defers to Tensor


def test_shapes_that_do_not_broadcast():
    with pytest.raises(ApsiError, match=r"add: shapes \(3,\) and \(4,\) do not broadcast"):
        nn.array([1, 2, 3]) + nn.array([1, 2, 3, 4])


def test_matmul_alignment_message():
    with pytest.raises(ApsiError) as e:
        nn.matmul(nn.zeros(3, 4), nn.zeros(5, 2))
    assert str(e.value) == ("matmul: shapes (3, 4) and (5, 2) do not align: the last axis of a (4) "
                            "must equal the first of b (5)")


def test_labels_out_of_range():
    with pytest.raises(ApsiError, match="label 3 is out of range for 3 classes"):
        nn.cross_entropy(nn.zeros(2, 3), [0, 3])
    with pytest.raises(ApsiError, match="labels have shape"):
        nn.cross_entropy(nn.zeros(2, 3), [0, 1, 2])
    with pytest.raises(ApsiError, match="out of range"):
        nn.one_hot([1, -1], 2)


def test_creation_and_seeds():
    assert nn.zeros(2, 3).shape == (2, 3) and nn.ones([4]).shape == (4,)
    assert nn.full([2], 7).data.tolist() == [7.0, 7.0]
    assert nn.eye(2).data.tolist() == [[1, 0], [0, 1]]
    assert nn.arange(3).data.tolist() == [0, 1, 2] and nn.arange(3).dtype == "int64"
    assert nn.linspace(0, 1, 3).data.tolist() == [0, 0.5, 1]
    np.testing.assert_array_equal(nn.randn(3, seed=1).data, nn.randn(3, seed=1).data)
    assert not np.array_equal(nn.randn(3, seed=1).data, nn.randn(3, seed=2).data)
    r = nn.randint(0, 5, [100], seed=0).data
    assert r.min() >= 0 and r.max() < 5 and r.dtype == np.int64
    assert 0 <= nn.rand(10, seed=0).data.min() and nn.rand(10, seed=0).data.max() < 1
    assert sorted(nn.permutation(5, seed=0).data.tolist()) == [0, 1, 2, 3, 4]
    assert nn.one_hot([0, 2], 3).data.tolist() == [[1, 0, 0], [0, 0, 1]]
    with pytest.raises(ApsiError, match="zeros: the shape"):
        nn.zeros(-1)
    with pytest.raises(ApsiError, match="array: expects"):
        nn.array([[1, 2], [3]])


def test_reductions_and_keepdims():
    x = nn.array([[1.0, 5.0], [3.0, 2.0]])
    assert nn.sum(x).item() == 11
    assert nn.max(x, axis=1).data.tolist() == [5, 3]
    assert nn.min(x, axis=0, keepdims=True).shape == (1, 2)
    assert nn.argmax(x, axis=1).data.tolist() == [1, 0]
    assert nn.mean(x, axis=[0, 1]).item() == 2.75
    np.testing.assert_allclose(nn.softmax(x).data.sum(axis=-1), [1, 1])
    np.testing.assert_allclose(nn.logsumexp(nn.array([1000.0, 1000.0])).item(), 1000 + np.log(2))
    with pytest.raises(ApsiError, match="sum: axis=2"):
        nn.sum(x, axis=2)


def test_indexing_and_immutability():
    x = nn.arange(12).reshape(3, 4) * 1.0
    assert x[1, 2].item() == 6 and x[-1].shape == (4,) and x[:, 1:3].shape == (3, 2)
    assert x[nn.array([0, 2], dtype="int")].shape == (2, 4)
    assert x[x > 5].shape == (6,)
    assert [row.shape for row in x] == [(4,)] * 3 and len(x) == 3
    with pytest.raises(ApsiError, match="immutable"):
        x[0] = 1
    with pytest.raises(ApsiError, match=r"index 5 is out of range for axis 0, of length 3"):
        x[5]


def test_printing_and_scalars():
    assert str(nn.array([1, 2]) * 2) == "tensor([2., 4.])"
    assert str(nn.sum(nn.array([1.5, 1.0]))) == "2.5"
    assert f"{nn.array(0.123456):.3f}" == "0.123"
    assert float(nn.array([2.0])) == 2.0
    with pytest.raises(ApsiError, match="ambiguous"):
        bool(nn.array([1, 2]))


def test_sigmoid_and_softplus_are_stable():
    x = nn.array([-800.0, 0.0, 800.0])
    assert nn.sigmoid(x).data.tolist() == [0.0, 0.5, 1.0]
    np.testing.assert_allclose(nn.softplus(x).data, [0.0, np.log(2), 800.0])
    np.testing.assert_allclose(nn.bce(nn.array([800.0, -800.0]), nn.array([1.0, 0.0])).item(), 0.0)


def test_losses_match_their_definitions():
    p, t = nn.array([1.0, -2.0, 0.5]), nn.array([0.0, 0.0, 0.0])
    assert nn.mse(p, t).item() == pytest.approx((1 + 4 + 0.25) / 3)
    assert nn.mae(p, t).item() == pytest.approx(3.5 / 3)
    assert nn.huber(p, t).item() == pytest.approx((0.5 + 1.5 + 0.125) / 3)
    assert nn.huber(delta=2.0)(p, t).item() == pytest.approx((0.5 + 2.0 + 0.125) / 3)
    logits = nn.array([[2.0, 0.0, -1.0]])
    logp = logits.data - np.log(np.exp(logits.data).sum())
    assert nn.cross_entropy(logits, [0]).item() == pytest.approx(-logp[0, 0])
    smooth = 0.9 * -logp[0, 0] + 0.1 * -logp.mean()
    assert nn.cross_entropy(logits, [0], label_smoothing=0.1).item() == pytest.approx(smooth)
    with pytest.raises(ApsiError, match="pred has shape"):
        nn.mse(nn.zeros(2), nn.zeros(3))


def test_floor_division_and_modulo_give_values():
    x = nn.arange(5)
    assert (x // 2).data.tolist() == [0, 0, 1, 1, 2] and (x % 3).data.tolist() == [0, 1, 2, 0, 1]
    assert (x // 2).dtype == "int64"
    assert (7 % nn.array([3.0, 4.0])).data.tolist() == [1.0, 3.0]
    with pytest.raises(ApsiError, match="do not broadcast"):
        nn.zeros(2) // nn.zeros(3)
