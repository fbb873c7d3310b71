"""Every layer and combinator: output shape as built, gradients (parameters and float inputs) against
central finite differences in float64 (relative error < 1e-6), and a small model around it learns."""

import numpy as np
import pytest
from nn.gradcheck import rel_error

from apsi_lang.values import Record
from apsi_layers import layers as L
from apsi_layers import nn
from apsi_layers.backends.numpy.ops import OPSET
from apsi_layers.layers.context import Ctx, Graph
from apsi_layers.layers.init_rng import ShapeRng

B = 3
EDGES = np.array([[0, 1, 2, 3, 4, 5, 0, 2], [1, 2, 3, 4, 5, 0, 3, 5]])
N_NODES = 6


def _ids(shape, vocab=7):
    return np.random.default_rng(5).integers(0, vocab, size=shape)


# (id, layer, per-sample input shape, options)
CASES = [
    ("dense", lambda: L.dense(3, activation="tanh"), (4,), {}),
    ("dense_no_bias", lambda: L.dense(2, bias=False), (2, 4), {}),
    ("embedding", lambda: L.embedding(7, 3), (4,), {"ids": 7}),
    ("conv1d_same_stride", lambda: L.conv1d(3, 3, stride=2, padding="same"), (2, 9), {}),
    ("conv1d_dilation_groups", lambda: L.conv1d(4, 2, dilation=2, groups=2, activation="relu"), (2, 8), {}),
    ("conv2d_pad", lambda: L.conv2d(2, 3, padding=1), (2, 5, 5), {}),
    ("conv2d_dilation_groups", lambda: L.conv2d(4, 2, dilation=2, groups=2, padding="same"), (2, 6, 5), {}),
    ("conv2d_rect_same_stride", lambda: L.conv2d(2, [2, 3], stride=2, padding="same"), (1, 5, 6), {}),
    ("max_pool1d", lambda: L.max_pool1d(2), (2, 6), {}),
    ("max_pool2d_same", lambda: L.max_pool2d(2, stride=1, padding="same"), (2, 4, 4), {}),
    ("avg_pool1d", lambda: L.avg_pool1d(3, stride=2), (2, 7), {}),
    ("avg_pool2d", lambda: L.avg_pool2d(2), (2, 4, 4), {}),
    ("global_avg_pool", lambda: L.global_avg_pool(), (3, 4, 4), {}),
    ("global_avg_pool_time", lambda: L.global_avg_pool(axis=1), (5, 3), {}),
    ("flatten", lambda: L.flatten(), (2, 3), {}),
    ("dropout", lambda: L.dropout(0.5), (6,), {"training": True}),
    ("batch_norm_train", lambda: L.batch_norm(), (3,), {"training": True}),
    ("batch_norm_images", lambda: L.batch_norm(), (2, 3, 3), {"training": True}),
    ("batch_norm_eval", lambda: L.batch_norm(), (2, 3, 3), {}),
    ("layer_norm", lambda: L.layer_norm(), (3, 4), {}),
    ("rms_norm", lambda: L.rms_norm(), (3, 4), {}),
    ("activation_name", lambda: L.activation("gelu"), (4,), {}),
    ("activation_fn", lambda: L.activation(lambda x: x * nn.tanh(x)), (4,), {}),
    ("lambda_layer", lambda: L.lambda_layer(lambda x: x[:, :2] * 2.0), (5,), {}),
    ("lstm", lambda: L.lstm_layer(3), (4, 2), {}),
    ("lstm_sequences_masked", lambda: L.lstm_layer(2, return_sequences=True), (4, 2), {"mask": True}),
    ("gru", lambda: L.gru_layer(3, return_sequences=True), (4, 2), {}),
    ("lstm_initial_state", lambda: L.lstm_layer(3, return_sequences=True), [(4, 2), (3,), (3,)], {}),
    ("gru_initial_state_masked", lambda: L.gru_layer(3), [(4, 2), (3,)], {"mask": True}),
    ("attention", lambda: L.attention(2), (3, 4), {}),
    ("attention_causal_masked", lambda: L.attention(2, causal=True), (4, 4), {"mask": True}),
    ("attention_cross", lambda: L.attention(2, dim=6), [(3, 4), (5, 2)], {}),
    ("transformer_block", lambda: L.transformer_block(2, hidden=8, causal=True), (3, 4), {}),
    ("transformer_block_dropout", lambda: L.transformer_block(2, dropout=0.2), (3, 4), {"training": True}),
    ("positions_learned", lambda: L.positions(5), (3, 4), {}),
    ("positions_sinusoidal", lambda: L.positions(5, kind="sinusoidal"), (3, 4), {}),
    ("gcn", lambda: L.gcn_layer(3, activation="relu"), (4,), {"graph": True}),
    ("sage", lambda: L.sage_layer(3), (4,), {"graph": True}),
    ("gat_concat", lambda: L.gat_layer(2, heads=2), (4,), {"graph": True}),
    ("gat_mean", lambda: L.gat_layer(3, heads=2, concat=False), (4,), {"graph": True}),
    ("gin", lambda: L.gin_layer(3, hidden=4, train_eps=True), (4,), {"graph": True}),
    ("sequential", lambda: L.sequential(L.dense(4, activation="relu"), L.dense(2)), (3,), {}),
    ("residual", lambda: L.residual(L.sequential(L.layer_norm(), L.dense(3))), (3,), {}),
    ("parallel_concat", lambda: L.parallel(L.dense(3), L.dense(2, activation="tanh")), (3,), {}),
    ("parallel_add", lambda: L.parallel(L.dense(3), L.dense(3), merge="add"), (3,), {}),
    ("parallel_mean_mul", lambda: L.parallel(L.parallel(L.dense(3), L.dense(3), L.dense(3), merge="mean"),
                                             L.dense(3, activation="tanh"), merge="mul"), (3,), {}),
    ("parallel_concat_axis", lambda: L.parallel(L.conv1d(2, 3, padding="same"), L.conv1d(3, 1),
                                                merge="concat", axis=1), (2, 5), {}),
    ("dag_siamese", lambda: _siamese(), [(3,), (3,)], {}),
    ("dag_two_outputs", lambda: _two_heads(), (3,), {}),
    ("vae", lambda: L.vae(5, 2, hidden=[4]), (5,), {"training": True}),
]


def _siamese():
    enc = L.dense(4, activation="tanh", name="encoder")
    return L.dag(inputs=["a", "b"], nodes=Record(ea=[enc, "a"], eb=[enc, "b"],
                                                  d=[L.merge("sub"), ["ea", "eb"]],
                                                  out=[L.dense(1), "d"]), outputs="out")


def _two_heads():
    return L.dag(inputs="x", nodes=Record(h=[L.dense(4, activation="relu"), "x"], y1=[L.dense(2), "h"],
                                          y2=[L.dense(1), "h"]), outputs=["y1", "y2"])


def _inputs(shape, opts, seed=0):
    rng = np.random.default_rng(seed)
    if isinstance(shape, list):
        return [nn.Tensor(rng.standard_normal((B,) + s)) for s in shape]
    if opts.get("ids"):
        return nn.Tensor(_ids((B,) + shape, opts["ids"]))
    rows = N_NODES if opts.get("graph") else B
    return nn.Tensor(rng.standard_normal((rows,) + shape))


def _ctx(opts):
    graph = Graph(OPSET, EDGES, N_NODES) if opts.get("graph") else None
    mask = None
    if opts.get("mask"):
        m = np.ones((B, 4), dtype=bool)
        m[0, 3:] = False
        m[1, 2:] = False
        mask = nn.Tensor(m)
    return Ctx(OPSET, training=opts.get("training", False), rng=OPSET.rng(0), graph=graph, mask=mask)


def _outputs(y):
    return list(y) if isinstance(y, list | tuple) else [y]


def _matches(shape, want):
    return len(shape) == len(want) and all(w is None or s == w for s, w in zip(shape, want, strict=True))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_output_shape_is_the_built_shape(case):
    _, make, shape, opts = case
    layer = make()
    params = layer.init(seed=0, input_shape=shape)
    _, built = layer.build(ShapeRng(), shape)
    y = layer.apply(params, _inputs(shape, opts), _ctx(opts))
    wants = built if isinstance(built, list) else [built]
    for out, want in zip(_outputs(y), wants, strict=True):
        assert _matches(tuple(out.shape[1:]), tuple(want)), (out.shape, want)


def _scalar(layer, x, opts, seed=3):
    ws = None

    def f(params, xin):
        nonlocal ws
        outs = _outputs(layer.apply(params, xin, _ctx(opts)))
        if ws is None:
            r = np.random.default_rng(seed)
            ws = [r.standard_normal(o.shape) for o in outs]
        total = 0.0
        for o, w in zip(outs, ws, strict=True):
            total = total + nn.sum(o * w)
        return total
    return f


def _numeric(f, params, x, leaf_index, h=1e-6):
    names = nn.flatten(params)
    data = names[leaf_index][1].data
    grad = np.zeros_like(data)
    for i in np.ndindex(data.shape):
        old = data[i]
        data[i] = old + h
        up = float(f(params, x).data)
        data[i] = old - h
        down = float(f(params, x).data)
        data[i] = old
        grad[i] = (up - down) / (2 * h)
    return grad


def _numeric_input(f, params, x, h=1e-6):
    grad = np.zeros_like(x.data)
    for i in np.ndindex(x.data.shape):
        old = x.data[i]
        x.data[i] = old + h
        up = float(f(params, x).data)
        x.data[i] = old - h
        down = float(f(params, x).data)
        x.data[i] = old
        grad[i] = (up - down) / (2 * h)
    return grad


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(case):
    _, make, shape, opts = case
    layer = make()
    params = layer.init(seed=0, input_shape=shape)
    x = _inputs(shape, opts, seed=1)
    if isinstance(x, nn.Tensor) and x.data.dtype == np.float64:
        x.data += 0.05          # keep inputs off relu/max-pool kinks at 0
    f = _scalar(layer, x, opts)
    g_params, g_x = nn.grad(f, argnums=(0, 1))(params, x) if not opts.get("ids") else \
        (nn.grad(f)(params, x), None)
    for k, (name, g) in enumerate(nn.flatten(g_params)):
        if ".state." in f".{name}.":
            continue
        num = _numeric(f, params, x, k)
        # attention's key bias has a gradient of exactly 0 (softmax ignores a shift shared by all keys)
        vanishing = np.abs(num).max() < 1e-8 and np.abs(g.data).max() < 1e-12
        assert vanishing or rel_error(g.data, num) < 1e-6, name
    if g_x is not None and isinstance(x, nn.Tensor):
        assert rel_error(g_x.data, _numeric_input(f, params, x)) < 1e-6, "input"


def _small_task(shape, opts):
    """A model around the layer that must fit a fixed random target better after training."""
    rng = np.random.default_rng(2)
    rows = N_NODES if opts.get("graph") else 24
    if isinstance(shape, list):
        x = [rng.standard_normal((rows,) + s) for s in shape]
    elif opts.get("ids"):
        x = _ids((rows,) + shape, opts["ids"])
    else:
        x = rng.standard_normal((rows,) + shape)
    return x, rng.standard_normal((rows, 1))


TRAINABLE = [c for c in CASES if c[0] not in ("vae", "dag_two_outputs", "attention_cross", "dag_siamese")]


@pytest.mark.parametrize("case", TRAINABLE, ids=[c[0] for c in TRAINABLE])
def test_a_small_model_with_the_layer_learns(case):
    _, make, shape, opts = case
    layer = make()
    x, y = _small_task(shape, opts)
    net = L.sequential(layer, L.flatten(), L.dense(1), inputs=list(shape))
    graph = EDGES if opts.get("graph") else None
    mask = None
    if opts.get("mask"):
        steps = (shape[0] if isinstance(shape, list) else shape)[0]
        mask = np.ones((len(y), steps), dtype=bool)
        mask[::3, -1] = False
    x = [nn.Tensor(a) for a in x] if isinstance(x, list) else nn.Tensor(x)
    r = L.fit(net, net.init(seed=0), x, nn.Tensor(y), loss="mse", opt=nn.adam(lr=0.02),
              epochs=30 if graph is not None else 15, batch_size=8, graph=graph, mask=mask, seed=0)
    assert r.history[-1] < 0.9 * r.history[0], r.history


def test_vae_trains_with_its_loss():
    rng = np.random.default_rng(0)
    x = (rng.random((40, 6)) < 0.3).astype(float)
    v = L.vae(6, 2, hidden=[8])
    r = L.fit(v, v.init(seed=0), nn.Tensor(x), None, epochs=20, batch_size=10, opt=nn.adam(lr=0.01))
    assert r.history[-1] < 0.85 * r.history[0]
    probs = L.predict(v, r.params, nn.Tensor(x))
    assert probs.shape == (40, 6) and 0 < probs.data.min() and probs.data.max() < 1


def test_siamese_weights_are_one_set():
    net = _siamese()
    p = net.init(seed=0, input_shape=[[3], [3]])
    # the shared encoder is stored once, under the first node that uses it
    assert [n for n, _ in nn.flatten(p)] == ["ea.w", "ea.b", "out.w", "out.b"]
    a = nn.Tensor(np.ones((2, 3)))
    y = L.predict(net, p, [a, a])
    assert np.allclose(y.data, p.out.b.data)       # same weights on both sides: the difference is 0


def test_recurrent_initial_state_and_return_state():
    lstm = L.lstm_layer(3, return_sequences=True, return_state=True)
    p = lstm.init(seed=0, input_shape=[4, 2])
    x = nn.Tensor(np.random.default_rng(0).standard_normal((2, 4, 2)))
    ctx = Ctx(OPSET)
    ys, h, c = lstm.apply(p, x, ctx)
    assert ys.shape == (2, 4, 3) and np.array_equal(ys.data[:, -1], h.data) and c.shape == (2, 3)
    # running the first two steps, then the last two from the state they left, gives the same end
    _, h2, c2 = lstm.apply(p, x[:, :2], ctx)
    ys_b, h_b, _ = lstm.apply(p, [x[:, 2:], h2, c2], ctx)
    assert np.allclose(h_b.data, h.data, atol=1e-14) and np.allclose(ys_b.data, ys.data[:, 2:], atol=1e-14)
    gru = L.gru_layer(3, return_state=True)
    pg = gru.init(seed=0, input_shape=[4, 2])
    y, hg = gru.apply(pg, x, ctx)
    assert np.array_equal(y.data, hg.data)
    _, h_first = gru.apply(pg, x[:, :3], ctx)
    assert np.allclose(gru.apply(pg, [x[:, 3:], h_first], ctx)[1].data, hg.data, atol=1e-14)


def test_masked_steps_carry_the_state_over():
    lstm = L.lstm_layer(3)
    p = lstm.init(seed=0, input_shape=[4, 2])
    x = np.random.default_rng(1).standard_normal((2, 4, 2))
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    masked = L.predict(lstm, p, nn.Tensor(x), mask=mask)
    short = L.predict(lstm, p, nn.Tensor(x[:, :2]))
    assert np.allclose(masked.data[0], short.data[0], atol=1e-14)
    assert not np.allclose(masked.data[1], short.data[1])


def test_vae_samples_from_the_fit_seed():
    """One full-batch step with lr 0: the loss is loss="vae" with noise drawn from the stream that
    fit derives from its seed (z = mu + exp(logvar/2) * noise); the same seed repeats it exactly."""
    from apsi_layers.layers.training.batches import seeds

    x = (np.random.default_rng(1).random((8, 5)) < 0.4).astype(float)
    v = L.vae(5, 2, hidden=[4])
    p = v.init(seed=0)

    def first_loss(seed):
        return L.fit(v, p, nn.Tensor(x), None, opt=nn.sgd(lr=0.0), batch_size=8, seed=seed).history[0]

    order = np.random.default_rng(seeds(7)[0]).permutation(8)
    ctx = Ctx(OPSET, training=True, rng=OPSET.rng(seeds(7)[1]))
    xb = nn.Tensor(x[order])
    recon, mu, logvar = (o.data for o in v.apply(p, xb, ctx))
    bce = np.maximum(recon, 0) - recon * xb.data + np.log1p(np.exp(-np.abs(recon)))
    kl = -0.5 * (1 + logvar - mu ** 2 - np.exp(logvar)).sum(1)
    want = (bce.sum(1) + kl).mean()         # reconstruction summed over pixels, plus KL, per sample
    assert np.isclose(first_loss(7), want, rtol=1e-13, atol=0)
    assert first_loss(7) == first_loss(7) and first_loss(7) != first_loss(8)
    # predict uses z = mu: no noise, the same output every time
    assert np.array_equal(L.predict(v, p, xb).data, L.predict(v, p, xb).data)


def test_layers_given_a_function_print_it_by_name():
    def squash(x):
        return x

    assert repr(L.activation(squash)) == "activation(<fn squash>)"
    assert repr(L.lambda_layer(squash)) == "lambda_layer(<fn squash>)"
    assert repr(L.dense(3, activation=squash)) == "dense(3, activation=<fn squash>)"
    assert repr(L.conv2d(2, 3, activation=squash)) == "conv2d(2, 3, activation=<fn squash>)"
    assert repr(L.gcn_layer(2, activation=squash)) == "gcn_layer(2, activation=<fn squash>)"
    assert repr(L.activation("relu")) == 'activation("relu")'


LAYER_FILES = ["base", "core", "conv", "norm", "recurrent", "attention", "graph", "compose", "zoo", "custom"]


@pytest.mark.parametrize("module", LAYER_FILES)
def test_layer_files_compute_only_through_their_op_set(module):
    """The design rule: a layer written against numpy, torch or nn directly would need a second copy
    for the other backend, so the files that define layers import none of them."""
    import ast
    from pathlib import Path

    import apsi_layers.layers as pkg

    source = (Path(pkg.__file__).parent / f"{module}.py").read_text(encoding="utf-8")
    imported = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.append(node.module)
    banned = ("numpy", "torch", "apsi_layers.nn", "apsi_layers.ops", "apsi_layers.backends.torch")
    assert [m for m in imported if m.split(".")[0] in ("numpy", "torch") or m.startswith(banned)] == []
    assert "np." not in source and ".data" not in source
