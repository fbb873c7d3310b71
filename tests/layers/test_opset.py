"""The op sets: each implements exactly spec.OPS; the NumPy one matches naive references and its
gradients match central finite differences in float64 (relative error < 1e-6) for every option."""

import numpy as np
import pytest
from nn.gradcheck import check_first_order, rel_error

from apsi_layers import nn
from apsi_layers.backends.numpy import ops as numpy_ops
from apsi_layers.ops.spec import OPS

from . import naive

O = numpy_ops.OPSET
rng = np.random.default_rng(7)


def normal(*shape):
    return rng.standard_normal(shape)


def test_the_opset_protocol_names_exactly_the_spec():
    """ops/protocol.py's OpSet (what mypy checks against) is spec.OPS, name for name, in order."""
    from apsi_layers.ops.protocol import OpSet

    assert [n for n in vars(OpSet) if not n.startswith("_")] == list(OPS)


def test_numpy_opset_implements_exactly_the_spec():
    names = set(vars(O))
    assert names == set(OPS), f"missing {set(OPS) - names}, extra {names - set(OPS)}"
    assert all(callable(getattr(O, n)) for n in OPS)


def test_torch_opset_implements_exactly_the_spec():
    pytest.importorskip("torch")
    from apsi_layers.backends.torch import ops as torch_ops

    names = torch_ops.op_names()
    assert names == set(OPS), f"missing {set(OPS) - names}, extra {names - set(OPS)}"
    ops = torch_ops.TorchOps("cpu")
    assert all(callable(getattr(ops, n)) for n in OPS)


def _weights(outs, seed):
    r = np.random.default_rng(seed)
    return [r.standard_normal(o.shape) for o in outs]


def scalar(f, args, seed=1):
    """sum over f's output(s) times fixed random weights: a scalar that exercises every output."""
    outs = f(*[nn.Tensor(np.asarray(a, dtype=float)) for a in args])
    outs = outs if isinstance(outs, tuple) else (outs,)
    ws = _weights(outs, seed)

    def loss(*xs):
        res = f(*xs)
        res = res if isinstance(res, tuple) else (res,)
        return sum(nn.sum(r * w) for r, w in zip(res, ws))
    return loss


def check_all_grads(f, args, skip=()):
    loss = scalar(f, args)
    for k in range(len(args)):
        if k not in skip:
            check_first_order(loss, args, k)


def close(a, b, tol=1e-10):
    assert np.shape(a) == np.shape(b), (np.shape(a), np.shape(b))
    assert rel_error(a, b) < tol


# --- conv and pools ----------------------------------------------------------------------------

CONVS = {
    "1d": dict(x=(2, 3, 7), w=(4, 3, 3), stride=(1,), padding=((0, 0),), dilation=(1,), groups=1),
    "1d_stride_pad": dict(x=(2, 2, 8), w=(3, 2, 2), stride=(3,), padding=((2, 1),), dilation=(1,), groups=1),
    "2d_asym": dict(x=(2, 2, 5, 6), w=(3, 2, 3, 2), stride=(2, 1), padding=((1, 0), (0, 2)),
                    dilation=(1, 1), groups=1),
    "2d_dilated": dict(x=(1, 2, 7, 6), w=(2, 2, 2, 3), stride=(1, 2), padding=((1, 1), (1, 1)),
                       dilation=(2, 1), groups=1),
    "2d_groups": dict(x=(2, 4, 5, 5), w=(6, 2, 3, 3), stride=(1, 1), padding=((1, 1), (1, 1)),
                      dilation=(1, 1), groups=2),
    "2d_depthwise": dict(x=(1, 3, 4, 4), w=(3, 1, 2, 2), stride=(2, 2), padding=((0, 0), (0, 0)),
                         dilation=(1, 1), groups=3),
    "3d": dict(x=(1, 2, 4, 3, 4), w=(2, 2, 2, 2, 2), stride=(1, 1, 2), padding=((0, 1), (1, 0), (0, 0)),
               dilation=(1, 1, 1), groups=1),
}


def _conv_case(name, bias=True):
    c = dict(CONVS[name])
    x, w = normal(*c.pop("x")), normal(*c.pop("w"))
    b = normal(w.shape[0]) if bias else None
    return x, w, b, c


@pytest.mark.parametrize("name", CONVS)
def test_conv_forward(name):
    x, w, b, opts = _conv_case(name)
    close(O.conv(O.constant(x), O.constant(w), O.constant(b), **opts).data, naive.conv(x, w, b, **opts))


@pytest.mark.parametrize("name", CONVS)
def test_conv_gradients(name):
    x, w, b, opts = _conv_case(name)
    check_all_grads(lambda x, w, b: O.conv(x, w, b, **opts), [x, w, b])


def test_conv_without_bias():
    x, w, _, opts = _conv_case("2d_asym", bias=False)
    close(O.conv(O.constant(x), O.constant(w), None, **opts).data, naive.conv(x, w, None, **opts))
    check_all_grads(lambda x, w: O.conv(x, w, None, **opts), [x, w])


POOLS = {
    "1d": dict(x=(2, 2, 9), size=(3,), stride=(2,), padding=((1, 1),)),
    "2d": dict(x=(2, 3, 6, 5), size=(2, 2), stride=(2, 2), padding=((0, 0), (0, 1))),
    "2d_overlap": dict(x=(1, 2, 5, 5), size=(3, 2), stride=(1, 2), padding=((1, 0), (1, 1))),
}


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("name", POOLS)
def test_pool(kind, name):
    c = dict(POOLS[name])
    x = normal(*c.pop("x"))
    op = O.max_pool if kind == "max" else O.avg_pool
    ref = naive.pool(x, **c, reduce=np.max if kind == "max" else np.mean,
                     fill=-np.inf if kind == "max" else 0.0)
    close(op(O.constant(x), **c).data, ref)
    check_all_grads(lambda x: op(x, **c), [x])


# --- norms -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 2, 4), (2, 3, 2, 3)])
def test_batch_norm(shape):
    x, gamma, beta = normal(*shape), normal(shape[1]), normal(shape[1])
    y, mean, var = O.batch_norm_train(O.constant(x), O.constant(gamma), O.constant(beta), 1e-5)
    ry, rmean, rvar = naive.batch_norm(x, gamma, beta, 1e-5)
    close(y.data, ry)
    close(mean.data, rmean)
    close(var.data, rvar)
    check_all_grads(lambda x, g, b: O.batch_norm_train(x, g, b, 1e-5)[0], [x, gamma, beta])
    m, v = normal(shape[1]), np.abs(normal(shape[1])) + 0.5
    c = O.constant
    ev = O.batch_norm_eval(c(x), c(gamma), c(beta), c(m), c(v), 1e-5)
    cshape = (1, -1) + (1,) * (len(shape) - 2)
    close(ev.data, (x - m.reshape(cshape)) / np.sqrt(v.reshape(cshape) + 1e-5) * gamma.reshape(cshape)
          + beta.reshape(cshape))
    check_all_grads(lambda x, g, b: O.batch_norm_eval(x, g, b, O.constant(m), O.constant(v), 1e-5),
                    [x, gamma, beta])


@pytest.mark.parametrize("with_beta", [True, False])
def test_layer_norm(with_beta):
    x, gamma, beta = normal(2, 3, 5), normal(5), normal(5)
    b = O.constant(beta) if with_beta else None
    close(O.layer_norm(O.constant(x), O.constant(gamma), b, 1e-5).data,
          naive.layer_norm(x, gamma, beta if with_beta else None, 1e-5))
    if with_beta:
        check_all_grads(lambda x, g, b: O.layer_norm(x, g, b, 1e-5), [x, gamma, beta])
    else:
        check_all_grads(lambda x, g: O.layer_norm(x, g, None, 1e-5), [x, gamma])


def test_rms_norm():
    x, gamma = normal(3, 2, 4), normal(4)
    close(O.rms_norm(O.constant(x), O.constant(gamma), 1e-6).data,
          x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * gamma)
    check_all_grads(lambda x, g: O.rms_norm(x, g, 1e-6), [x, gamma])


# --- recurrent ---------------------------------------------------------------------------------

MASK = np.array([[1, 1, 0, 1], [1, 0, 0, 0], [0, 1, 1, 1]], dtype=bool)


@pytest.mark.parametrize("masked", [False, True])
def test_lstm(masked):
    B, T, F, H = 3, 4, 2, 3
    args = [normal(B, T, F), normal(B, H), normal(B, H), normal(4 * H, F) * 0.5, normal(4 * H, H) * 0.5,
            normal(4 * H), normal(4 * H)]
    mask = MASK if masked else None
    got = O.lstm(*[O.constant(a) for a in args], mask=mask)
    for g, r in zip(got, naive.lstm(*args, mask=mask)):
        close(g.data, r)
    check_all_grads(lambda *a: O.lstm(*a, mask=mask), args)


@pytest.mark.parametrize("masked", [False, True])
def test_gru(masked):
    B, T, F, H = 3, 4, 2, 3
    args = [normal(B, T, F), normal(B, H), normal(3 * H, F) * 0.5, normal(3 * H, H) * 0.5,
            normal(3 * H), normal(3 * H)]
    mask = MASK if masked else None
    got = O.gru(*[O.constant(a) for a in args], mask=mask)
    for g, r in zip(got, naive.gru(*args, mask=mask)):
        close(g.data, r)
    check_all_grads(lambda *a: O.gru(*a, mask=mask), args)


# --- attention ---------------------------------------------------------------------------------

PAD = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=bool)[:, None, None, :]   # [B, 1, 1, Tk]


@pytest.mark.parametrize("mask,causal,tq", [(None, False, 3), (None, True, 4), (PAD, False, 3),
                                            (PAD, True, 4), (np.zeros((2, 1, 3, 4), bool), False, 3)],
                         ids=["plain", "causal", "padding", "padding_causal", "all_masked"])
def test_attention(mask, causal, tq):
    q, k, v = normal(2, 2, tq, 3), normal(2, 2, 4, 3), normal(2, 2, 4, 5)
    got = O.attention(O.constant(q), O.constant(k), O.constant(v), mask=mask, causal=causal)
    close(got.data, naive.attention(q, k, v, mask, causal))
    check_all_grads(lambda q, k, v: O.attention(q, k, v, mask=mask, causal=causal), [q, k, v])


# --- losses, dropout, graphs, gather, dense, activations ---------------------------------------


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)])
def test_softmax_cross_entropy(shape):
    x = normal(*shape)
    labels = rng.integers(0, shape[-1], shape[:-1])
    z = x - x.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    ref = -np.take_along_axis(logp, labels[..., None], -1).mean()
    close(O.softmax_cross_entropy(O.constant(x), O.indices(labels)).data, ref)
    check_all_grads(lambda x: O.softmax_cross_entropy(x, O.indices(labels)), [x])


def test_bce_with_logits():
    x, t = normal(4, 3) * 30, rng.uniform(0, 1, (4, 3))
    got = O.bce_with_logits(O.constant(x), O.constant(t)).data
    close(got, np.mean(np.logaddexp(0, x) - x * t))
    check_all_grads(lambda x, t: O.bce_with_logits(x, t), [x / 10, t])


def test_dropout():
    x = normal(200, 50)
    a = O.dropout(O.constant(x), 0.3, O.rng(3)).data
    b = O.dropout(O.constant(x), 0.3, O.rng(3)).data
    assert np.array_equal(a, b)
    kept = a != 0
    assert 0.65 < kept.mean() < 0.75
    close(a[kept], x[kept] / 0.7)
    assert O.dropout(O.constant(x), 0.0, O.rng(3)).data is not None
    check_all_grads(lambda x: O.dropout(x, 0.5, O.rng(1)), [x[:3, :4]])


def test_scatter_add_and_segment_softmax():
    index = np.array([2, 0, 2, 2, 0, 3])
    src = normal(6, 3)
    ref = np.zeros((5, 3))
    np.add.at(ref, index, src)
    close(O.scatter_add(O.constant(src), O.indices(index), 5).data, ref)
    check_all_grads(lambda s: O.scatter_add(s, O.indices(index), 5), [src])
    close(O.segment_softmax(O.constant(src), O.indices(index), 5).data, naive.segment_softmax(src, index, 5))
    check_all_grads(lambda s: O.segment_softmax(s, O.indices(index), 5), [src])
    close(O.bincount(O.indices(index), 5).data, [2.0, 0.0, 3.0, 1.0, 0.0])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take(axis):
    x = normal(4, 5, 3)
    idx = np.array([[1, 0], [3, 1], [1, 1]]) % x.shape[axis]
    close(O.take(O.constant(x), O.indices(idx), axis=axis).data, np.take(x, idx, axis=axis))
    check_all_grads(lambda x: O.take(x, O.indices(idx), axis=axis), [x])


@pytest.mark.parametrize("xshape", [(4, 3), (2, 4, 3)])
def test_dense(xshape):
    x, w, b = normal(*xshape), normal(3, 5), normal(5)
    close(O.dense(O.constant(x), O.constant(w), O.constant(b)).data, x @ w + b)
    close(O.dense(O.constant(x), O.constant(w)).data, x @ w)
    check_all_grads(lambda x, w, b: O.dense(x, w, b), [x, w, b])
    check_all_grads(lambda x, w: O.dense(x, w, None), [x, w])


ACTIVATIONS = {
    "silu": (lambda x: O.silu(x), lambda x: x * naive.sigmoid(x)),
    "leaky_relu": (lambda x: O.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "elu": (lambda x: O.elu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * (np.exp(x) - 1))),
    "gelu": (O.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "softplus": (O.softplus, lambda x: np.logaddexp(0, x)),
    "tanh": (O.tanh, np.tanh),
    "sigmoid": (O.sigmoid, naive.sigmoid),
    "relu": (O.relu, lambda x: np.maximum(x, 0)),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(name):
    op, ref = ACTIVATIONS[name]
    x = rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.1, 3.0, (3, 4))
    close(op(O.constant(x)).data, ref(x), 1e-14)
    check_all_grads(op, [x])


def test_simple_ops_follow_the_spec():
    x = normal(2, 3)
    assert O.zeros((2, 3)).shape == (2, 3) and O.ones(4).data.sum() == 4
    assert O.indices([1.0, 2.0]).data.dtype == np.int64
    t = O.constant(x)
    arr = O.to_numpy(t)
    arr[0, 0] = 99.0
    assert t.data[0, 0] != 99.0                                  # a copy
    close(O.sum(t, axis=(0, 1)).data, x.sum())
    close(O.mean(t, axis=0, keepdims=True).data, x.mean(0, keepdims=True))
    close(O.max(t, axis=1).data, x.max(1))
    close(O.logsumexp(t).data, np.log(np.exp(x).sum(-1)))
    close(O.softmax(t, axis=0).data, np.exp(x) / np.exp(x).sum(0))
    close(O.log_softmax(t).data, x - np.log(np.exp(x).sum(-1, keepdims=True)))
    close(O.transpose(O.reshape(t, (3, 2)), (1, 0)).data, x.reshape(3, 2).T)
    close(O.concat([t, t], 1).data, np.concatenate([x, x], 1))
    close(O.stack([t, t], 0).data, np.stack([x, x]))
    assert O.expand_dims(t, 1).shape == (2, 1, 3)
    close(O.where(x > 0, t, 0.0).data, np.where(x > 0, x, 0.0))
    close(O.clip(t, -0.5, 0.5).data, np.clip(x, -0.5, 0.5))
    assert O.normal((3, 2), O.rng(0)).shape == (3, 2)
    close(O.normal(5, O.rng(1)).data, np.random.default_rng(1).standard_normal(5))


def test_stop_gradient_blocks_the_gradient():
    x = normal(3)
    g = nn.grad(lambda x: nn.sum(x * O.stop_gradient(x)))(nn.Tensor(x)).data
    close(g, x)                                                  # d/dx of x * c with c = x held fixed


def test_batch_norm_eval_gradients_reach_the_statistics():
    x, gamma, beta = normal(4, 3, 2), normal(3), normal(3)
    m, v = normal(3), np.abs(normal(3)) + 0.5
    check_all_grads(lambda x, g, b, m, v: O.batch_norm_eval(x, g, b, m, v, 1e-3), [x, gamma, beta, m, v])


def test_recurrent_without_biases():
    B, T, F, H = 2, 3, 2, 2
    args = [normal(B, T, F), normal(B, H), normal(B, H), normal(4 * H, F), normal(4 * H, H)]
    zeros = np.zeros(4 * H)
    got = O.lstm(*[O.constant(a) for a in args], None, None)
    for g, r in zip(got, naive.lstm(*args, zeros, zeros)):
        close(g.data, r)
    check_all_grads(lambda *a: O.lstm(*a, None, None), args)
    gargs = [args[0], args[1], normal(3 * H, F), normal(3 * H, H)]
    check_all_grads(lambda *a: O.gru(*a, None, None), gargs)


def test_inference_matches_training():
    """Without a tape the fused ops skip saving activations; the values must not change."""
    x, w = normal(2, 3, 6, 6), normal(4, 3, 3, 3)
    plain = O.conv(O.constant(x), O.constant(w), None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1).data
    taped = {}

    def f(w):
        y = O.conv(O.constant(x), w, None, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
        taped["y"] = y.data
        return nn.sum(y)
    nn.grad(f)(nn.Tensor(w))
    assert np.array_equal(plain, taped["y"])


def test_jacobian_runs_a_fused_backward_once_per_output():
    x, w = normal(1, 2, 4), normal(2, 2, 2)
    opts = dict(stride=(1,), padding=((0, 0),), dilation=(1,), groups=1)
    jac = nn.jacobian(lambda w: O.conv(O.constant(x), w, None, **opts))(nn.Tensor(w)).data
    eps = 1e-6
    num = np.zeros(jac.shape)
    for i in np.ndindex(w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        up, down = naive.conv(x, w + d, None, **opts), naive.conv(x, w - d, None, **opts)
        num[(...,) + i] = (up - down) / (2 * eps)
    assert rel_error(jac, num) < 1e-6


def test_second_order_through_a_fused_op_names_it():
    x = normal(3, 4)
    with pytest.raises(nn_error(), match="op 'layer_norm' has no second derivative"):
        nn.hessian(lambda g: nn.sum(O.layer_norm(O.constant(x), g, None, 1e-5) ** 2))(nn.Tensor(normal(4)))


def nn_error():
    from apsi_lang.errors import ApsiError
    return ApsiError


@pytest.mark.parametrize("call,message", [
    (lambda: O.conv(O.constant(normal(1, 3, 5, 5)), O.constant(normal(2, 2, 3, 3)), None, (1, 1),
                    ((0, 0), (0, 0)), (1, 1), 1), "input has 3 channels"),
    (lambda: O.conv(O.constant(normal(1, 2, 2, 2)), O.constant(normal(2, 2, 3, 3)), None, (1, 1),
                    ((0, 0), (0, 0)), (1, 1), 1), "too small for kernel"),
    (lambda: O.max_pool(O.constant(normal(1, 2, 4, 4)), (2, 2), (2, 2), ((2, 2), (0, 0))),
     "more than half the window"),
    (lambda: O.lstm(O.constant(normal(2, 3, 4)), O.constant(normal(2, 5)), O.constant(normal(2, 5)),
                    O.constant(normal(20, 3)), O.constant(normal(20, 5)), None, None),
     r"w_ih has shape \(20, 3\)"),
    (lambda: O.attention(O.constant(normal(2, 1, 3, 4)), O.constant(normal(2, 1, 5, 4)),
                         O.constant(normal(2, 1, 5, 4)), mask=np.ones((3, 3), bool)), "mask of shape"),
    (lambda: O.softmax_cross_entropy(O.constant(normal(3, 4)), O.indices([0, 4, 1])),
     "label 4 is out of range"),
    (lambda: O.scatter_add(O.constant(normal(3, 2)), O.indices([0, 1, 7]), 4), "index 7 is out of range"),
    (lambda: O.layer_norm(O.constant(normal(3, 4)), O.constant(normal(5)), None, 1e-5), "gamma has shape"),
    (lambda: O.dropout(O.constant(normal(3)), 1.0, O.rng(0)), "rate must be"),
])
def test_misuse_is_an_apsi_error(call, message):
    with pytest.raises(nn_error(), match=message):
        call()


@pytest.mark.parametrize("op,ref", [(O.tanh, np.tanh), (O.sigmoid, naive.sigmoid),
                                    (O.gelu, ACTIVATIONS["gelu"][1])],
                         ids=["tanh", "sigmoid", "gelu"])
def test_activations_saturate_without_nan(op, ref):
    x = np.array([-1e308, -800.0, -40.0, -1e-300, 0.0, 1e-300, 40.0, 800.0, 1e308])
    with np.errstate(all="ignore"):
        want = ref(x)
    got = op(O.constant(x)).data
    assert np.all(np.isfinite(got[1:-1])) and np.allclose(got[1:-1], want[1:-1], rtol=1e-15, atol=1e-300)


def test_graph_index_cache_is_keyed_by_the_array_and_pins_it():
    """The second scatter with the same index array reuses its flat positions; the array becomes
    read-only so it cannot change under the cache; a different array with equal values still works."""
    from apsi_layers.nn.fused import graph

    idx = O.indices([1, 0, 1])
    src = normal(3, 2)
    first = O.scatter_add(O.constant(src), idx, 2).data
    assert not idx.data.flags.writeable
    again = O.scatter_add(O.constant(src), idx, 2).data
    other = O.scatter_add(O.constant(src), O.indices([0, 0, 1]), 2).data
    assert np.array_equal(first, again)
    close(other, np.array([src[0] + src[1], src[2]]))
    assert any(k[1] == id(idx.data) for k in graph._CACHE)
