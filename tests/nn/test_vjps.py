"""Every gradient rule against central finite differences, first and second order (rel. error < 1e-6)."""

import numpy as np
import pytest

from apsi_layers import nn

from .gradcheck import check_first_order, check_second_order, scalarize

rng = np.random.default_rng(42)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def away_from_zero(*shape):
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.2, 1.5, shape)


UNARY = [
    ("neg", lambda x: -x, normal(3, 4)),
    ("exp", nn.exp, normal(3, 4)),
    ("log", nn.log, positive(3, 4)),
    ("log1p", nn.log1p, positive(3, 4)),
    ("sqrt", nn.sqrt, positive(3, 4)),
    ("abs", nn.abs, away_from_zero(3, 4)),
    ("tanh", nn.tanh, normal(3, 4)),
    ("sigmoid", nn.sigmoid, normal(3, 4) * 3),
    ("relu", nn.relu, away_from_zero(3, 4)),
    ("gelu", nn.gelu, normal(3, 4)),
    ("softplus", nn.softplus, normal(3, 4) * 3),
    ("sin", nn.sin, normal(3, 4)),
    ("cos", nn.cos, normal(3, 4)),
    ("clip", lambda x: nn.clip(x, -0.5, 0.5) * x, away_from_zero(3, 4)),
    ("pow_const", lambda x: x ** 3 + x ** 2.5, positive(3, 4)),
    ("rpow", lambda x: 2.0 ** x, normal(3, 4)),
    ("rdiv", lambda x: 1.0 / x, positive(3, 4)),
    ("rsub", lambda x: 2.0 - x * x, normal(3, 4)),
    # reductions
    ("sum", nn.sum, normal(3, 4)),
    ("sum_axis0", lambda x: nn.sum(x * x, axis=0), normal(3, 4)),
    ("sum_keepdims", lambda x: nn.sum(x * x, axis=1, keepdims=True) * x, normal(3, 4)),
    ("sum_axes", lambda x: nn.sum(x * x, axis=[0, 2]), normal(2, 3, 4)),
    ("mean", lambda x: nn.mean(x * x, axis=-1), normal(3, 4)),
    ("max", lambda x: nn.max(x * x, axis=1), normal(3, 4)),
    ("max_all", lambda x: nn.max(x * x), normal(3, 4)),
    ("min", lambda x: nn.min(x * x, axis=0, keepdims=True), normal(3, 4)),
    ("logsumexp", lambda x: nn.logsumexp(x, axis=1), normal(3, 4)),
    ("logsumexp_all", nn.logsumexp, normal(3, 4)),
    ("softmax", nn.softmax, normal(3, 4)),
    ("softmax_axis0", lambda x: nn.softmax(x, axis=0), normal(3, 4)),
    ("log_softmax", nn.log_softmax, normal(3, 4)),
    # shapes and indexing
    ("reshape", lambda x: nn.reshape(x * x, [4, 3]), normal(3, 4)),
    ("transpose", lambda x: nn.transpose(x * x, [2, 0, 1]), normal(2, 3, 4)),
    ("T", lambda x: (x * x).T, normal(3, 4)),
    ("broadcast_to", lambda x: nn.broadcast_to(x * x, [2, 3, 4]), normal(3, 1)),
    ("expand_dims", lambda x: nn.expand_dims(x * x, 1), normal(3, 4)),
    ("slice", lambda x: (x * x)[1:, ::2], normal(3, 4)),
    ("int_index", lambda x: (x * x)[-1], normal(3, 4)),
    ("newaxis", lambda x: (x * x)[:, None, 1], normal(3, 4)),
    ("fancy_repeats", lambda x: (x * x)[[0, 2, 0, 0]], normal(3, 4)),
    ("mask", lambda x: (x * x)[x.data > 0], normal(3, 4)),
    ("take_along", lambda x: nn.take_along(x * x, np.array([[1], [0], [3]]), axis=1), normal(3, 4)),
    ("take_along_repeats", lambda x: nn.take_along(x * x, np.array([[1, 1, 2, 0], [1, 1, 0, 0]]), axis=0),
     normal(3, 4)),
    ("concat", lambda x: nn.concat([x * x, x, x[:1] * 3], axis=0), normal(3, 4)),
    ("concat_axis1", lambda x: nn.concat([x * x, x], axis=-1), normal(3, 4)),
    ("stack", lambda x: nn.stack([x * x, x], axis=1), normal(3, 4)),
    ("iterate", lambda x: nn.stack([row * row for row in x]), normal(3, 4)),
    # losses
    ("cross_entropy", lambda x: nn.cross_entropy(x, [0, 3, 1]), normal(3, 4)),
    ("cross_entropy_smooth", lambda x: nn.cross_entropy(x, [[0, 3], [1, 1]], label_smoothing=0.1),
     normal(2, 2, 4)),
    ("bce", lambda x: nn.bce(x, nn.array([[0, 1, 1, 0.3]] * 3)), normal(3, 4) * 2),
    ("mse", lambda x: nn.mse(x, nn.ones(3, 4)), normal(3, 4)),
    ("mae", lambda x: nn.mae(x, nn.zeros(3, 4)), away_from_zero(3, 4)),
    ("huber", lambda x: nn.huber(x * 2, nn.zeros(3, 4)), away_from_zero(3, 4)),
]

BINARY = [
    ("add", lambda a, b: a + b, normal(3, 4), normal(4)),
    ("sub", lambda a, b: a - b, normal(3, 4), normal(3, 1)),
    ("mul", lambda a, b: a * b, normal(3, 4), normal(3, 4)),
    ("mul_broadcast", lambda a, b: a * b * a, normal(2, 1, 4), normal(3, 1)),
    ("div", lambda a, b: a / b, normal(3, 4), positive(4)),
    ("pow", lambda a, b: a ** b, positive(3, 4), normal(3, 4)),
    ("maximum", nn.maximum, normal(3, 4), normal(3, 4)),
    ("minimum", nn.minimum, normal(3, 4), normal(1, 4)),
    ("where", lambda a, b: nn.where(a.data > 0, a * a, b * b * b), normal(3, 4), normal(4)),
    ("matmul", lambda a, b: a @ b, normal(3, 4), normal(4, 2)),
    ("matmul_vec_mat", lambda a, b: a @ b, normal(4), normal(4, 2)),
    ("matmul_mat_vec", lambda a, b: a @ b, normal(3, 4), normal(4)),
    ("matmul_vec_vec", nn.matmul, normal(4), normal(4)),
    ("matmul_batched", lambda a, b: a @ b, normal(2, 3, 4), normal(2, 4, 5)),
    ("matmul_batch_broadcast", lambda a, b: a @ b, normal(3, 4), normal(2, 4, 5)),
    ("matmul_batched_vec", lambda a, b: a @ b, normal(4), normal(2, 4, 3)),
    ("matmul_batched_mat_vec", lambda a, b: a @ b, normal(2, 3, 4), normal(4)),
    ("vae", lambda a, b: nn.vae(a * 2, nn.array([[0, 1, 0.5]] * 2), b[:, :2], b[:, 2:]), normal(2, 3),
     normal(2, 4) * 0.5),
]


@pytest.mark.parametrize("name,f,x", UNARY, ids=[c[0] for c in UNARY])
def test_unary_first_order(name, f, x):
    check_first_order(scalarize(f, x), [x], 0)


@pytest.mark.parametrize("name,f,x", UNARY, ids=[c[0] for c in UNARY])
def test_unary_second_order(name, f, x):
    check_second_order(scalarize(f, x), [x], 0)


@pytest.mark.parametrize("name,f,a,b", BINARY, ids=[c[0] for c in BINARY])
@pytest.mark.parametrize("argnum", [0, 1])
def test_binary_first_order(name, f, a, b, argnum):
    check_first_order(scalarize(f, a, b), [a, b], argnum)


@pytest.mark.parametrize("name,f,a,b", BINARY, ids=[c[0] for c in BINARY])
@pytest.mark.parametrize("argnum,other", [(0, 0), (1, 1), (0, 1), (1, 0)])
def test_binary_second_order(name, f, a, b, argnum, other):
    check_second_order(scalarize(f, a, b), [a, b], argnum, other)


def test_check_fails_for_a_wrong_rule(monkeypatch):
    """The checker itself must be able to fail: break tanh's rule and watch it catch that."""
    from apsi_layers.nn.autograd import ops

    x = normal(3)
    monkeypatch.setitem(ops.RULES, "tanh", (lambda xp, g, ans, x: g * (1.0 - ans),))
    broken = ops._unary("tanh", np.tanh, "")
    with pytest.raises(AssertionError, match="relative error"):
        check_first_order(scalarize(broken, x), [x], 0)


def test_every_rule_is_exercised():
    """Each op in the rule table appears in the cases above (directly or through an op built on it)."""
    from apsi_layers.nn.autograd.extend import DEFINED
    from apsi_layers.nn.autograd.vjps import RULES

    covered = {"neg", "exp", "log", "log1p", "sqrt", "abs", "tanh", "sigmoid", "relu", "gelu", "softplus",
               "sin", "cos", "clip", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where",
               "matmul", "sum", "max", "min", "logsumexp", "softmax", "log_softmax", "reshape",
               "transpose", "broadcast_to", "sum_to", "getitem", "index_add", "take_along", "put_along",
               "identity"}
    from apsi_layers.nn.numlib.linalg_more_vjps import MORE_RULES  # test_linalg_more.py
    from apsi_layers.nn.numlib.linalg_vjps import (
        EDGE_RULES,
        LINALG_RULES,  # exercised in test_linalg_torch.py
    )
    from apsi_layers.nn.numlib.spectral import SPECTRAL_RULES  # hessians in test_numeric_edges.py
    from apsi_layers.nn.numlib.toolbox_vjps import TOOLBOX_RULES  # test_special.py, test_sequences.py (torch)

    from .test_numlib_grads import RULES_COVERED  # numlib's rules, checked against torch there

    rest = (set(RULES) - DEFINED - set(LINALG_RULES) - set(SPECTRAL_RULES) - set(EDGE_RULES)
            - set(MORE_RULES) - set(TOOLBOX_RULES))
    assert rest == covered | RULES_COVERED
