"""Every mistake fit, predict and the layers catch: one clear ApsiError, before any training step."""
# ruff: noqa: E501  (the expected messages read best whole, one per line)

import importlib.util

import numpy as np
import pytest

from apsi_lang import permissions
from apsi_lang.errors import ApsiError, PermissionDenied
from apsi_lang.values import Record
from apsi_layers import layers as L
from apsi_layers import nn

HAVE_TORCH = importlib.util.find_spec("torch") is not None

X = nn.Tensor(np.random.default_rng(0).standard_normal((10, 2)))
Y = nn.Tensor(np.arange(10) % 2 * 1.0)


def net():
    return L.mlp(2, 2, hidden=[4])


def fit(**kw):
    m = kw.pop("model", None) or net()
    p = kw.pop("params", None) or m.init(seed=0)
    x = kw.pop("x", X)
    y = kw.pop("y", Y)
    kw.setdefault("loss", "cross_entropy")
    return L.fit(m, p, x, y, **kw)


@pytest.mark.parametrize("kwargs, message", [
    ({"epoch": 3}, r"fit: unknown option 'epoch'; valid: loss, opt, epochs, .* \(did you mean 'epochs'\?\)"),
    ({"loss": "cross_entropie"}, r"unknown loss 'cross_entropie'; valid: mse, .*did you mean 'cross_entropy'"),
    ({"opt": "adamm"}, r"unknown optimizer 'adamm'; valid: sgd, adam, .*did you mean 'adam'"),
    ({"batch_size": 0}, r"fit: batch_size must be a positive int \(samples per step\), got 0"),
    ({"batch_size": -4}, r"batch_size must be a positive int"),
    ({"epochs": 0}, r"fit: epochs must be a positive int, got 0"),
    ({"clip": -1.0}, r"fit: clip must be a positive number"),
    ({"seed": 1.5}, r"fit: seed must be an int >= 0"),
    ({"backend": "jax"}, r"unknown backend 'jax'; valid: numpy, auto, torch"),
    ({"device": "cuda"}, r'fit: device="cuda" needs backend="torch"'),
    ({"precision": "bf16"}, r'precision="bf16" needs backend="torch"'),
    ({"compile": True}, r'compile=true needs backend="torch"'),
    ({"verbose": "yes"}, r"verbose must be true or false"),
    ({"schedule": 0.1}, r"schedule must be a function"),
    ({"val": [X]}, r"val must be \[inputs, targets\]"),
    ({"y": nn.Tensor(np.arange(9) * 0.0)}, r"inputs and targets have different lengths \(10 inputs, 9 targets\)"),
    ({"y": nn.Tensor(np.arange(10) * 1.0)}, r"label 9 is out of range: the model has 2 classes \(labels 0..1\)"),
    ({"y": nn.Tensor(-np.ones(10))}, r"label -1 is out of range"),
    ({"y": nn.Tensor(np.full(10, 0.5))}, r"needs int class labels"),
    ({"x": nn.Tensor(np.zeros((0, 2))), "y": nn.Tensor(np.zeros(0))}, r"fit: the inputs are empty \(0 samples\)"),
    ({"x": nn.Tensor(np.zeros((10, 3)))}, r"^fit: the model expects 2 input features per sample and got 3 "
                                           r"\(inputs of shape \[10, 3\]\); give inputs of shape \[N, 2\]"),
    ({"loss": "mse"}, r'loss="mse": the model outputs per-sample shape \[2\] but the targets have per-sample '
                      r"shape \[\]"),
    ({"loss": None}, r"fit: give a loss"),
    ({"loss": "vae"}, r'loss="vae" needs a vae'),
    ({"opt": 3}, r"opt must be an optimizer"),
    ({"mask": np.ones((10, 3), dtype=bool)}, r"fit: mask has shape \[10, 3\] but the inputs have shape \[10, 2\]; a "
                                               r"sequence mask is \[N, T\]"),
    ({"mask": np.ones(9, dtype=bool)}, r"fit: mask has 9 rows but the inputs have 10"),
    ({"val": [nn.Tensor(np.zeros((3, 5))), nn.Tensor(np.zeros(3))]},
     r"fit \(val\): the model expects 2 input features per sample and got 5 \(inputs of shape \[3, 5\]\)"),
    ({"val": [X, nn.Tensor(np.full(10, 3.0))]}, r"fit \(val\): label 3 is out of range"),
    ({"loss": lambda p, t: p}, r"fit: the loss function returned a tensor of shape \[\d+, 2\]; it must return one "
                               r"number, e.g. loss=fn\(pred, target\) => mean"),
    ({"loss": lambda p, t: "low"}, r'fit: the loss function returned "low"; it must return one number'),
])
def test_fit_refuses(kwargs, message):
    with pytest.raises(ApsiError, match=message):
        fit(**kwargs)


def test_wrong_tree_structure_names_the_parameters():
    with pytest.raises(ApsiError, match=r"do not have the model's structure \(missing dense.w, .*; unexpected w, b\)"):
        fit(params=L.mlp(2, 2, hidden=[4, 4]).init(seed=0).dense)   # a subtree
    other = Record(dense=net().init(seed=0).dense, extra=nn.zeros(2))
    with pytest.raises(ApsiError, match="unexpected extra"):
        fit(params=other)


def test_conv_given_flat_data_says_how_to_reshape():
    cnn = L.cnn_classifier([1, 4, 4], 2, filters=[2], hidden=4)
    with pytest.raises(ApsiError, match=r"conv2d: expects per-sample inputs \[channels, height, width\].*got \[16\]"
                                        r"; reshape flat images first"):
        L.fit(cnn, cnn.init(seed=0), nn.Tensor(np.zeros((3, 16))), nn.Tensor(np.zeros(3)), loss="cross_entropy")


def test_token_ids_out_of_range():
    lm = L.transformer_lm(5, d=4, heads=2, layers=1, context=4)
    with pytest.raises(ApsiError, match=r"token id 7 is out of range for embedding\(5, 4\) \(ids 0..4\)"):
        L.fit(lm, lm.init(seed=0), [[1, 7]], [[1, 2]], loss="cross_entropy")
    with pytest.raises(ApsiError, match=r"\(inputs of shape \[3\]\); the model takes per-sample inputs \[\?\], so "
                                        r"batches of shape \[N, \?\]: give one sample as a batch of one, \[x\]"):
        L.predict(lm, lm.init(seed=0), [1, 2, 3])
    with pytest.raises(ApsiError, match=r"generate: token id 9 is out of range for embedding\(5, 4\)"):
        L.generate(lm, lm.init(seed=0), [1, 9], steps=2)
    with pytest.raises(ApsiError, match=r"positions: sequences of 6 steps are longer than context=4"):
        L.predict(lm, lm.init(seed=0), [[1, 2, 3, 4, 0, 1]])


def test_graph_layer_without_graph_and_bad_graphs():
    g = L.gcn_classifier(2, 2, hidden=[3])
    p = g.init(seed=0)
    with pytest.raises(ApsiError, match=r"gcn_layer: is a graph layer: pass the graph with graph="):
        L.predict(g, p, X)
    with pytest.raises(ApsiError, match=r"graph= must be an int edge list of shape \[2, E\]"):
        L.predict(g, p, X, graph=nn.Tensor(np.zeros((3, 4))))
    with pytest.raises(ApsiError, match=r"the graph has an edge to node 12, outside 0..9"):
        L.predict(g, p, X, graph=[[0, 1], [12, 2]])


def test_torch_backend_needs_python_permission_and_auto_stays_on_numpy(capsys, monkeypatch):
    from apsi_layers.layers.training import api

    monkeypatch.setattr(api, "_NOTED", set())
    old = permissions.current()
    permissions.set_current(permissions.Grants())
    try:
        with pytest.raises(PermissionDenied, match=r"fit\(backend=\"torch\"\) needs permission 'python': run with "
                                                   r"--allow-python"):
            fit(backend="torch")
        with pytest.raises(PermissionDenied, match=r"predict\(backend=\"torch\"\) needs permission 'python'"):
            L.predict(net(), net().init(seed=0), X, backend="torch")
        assert fit(backend="auto").backend == "numpy"
        assert capsys.readouterr().err == ""
        # issue 16: "auto" is for programs that run everywhere: torch-only options are set aside, once
        for _ in range(3):
            assert fit(backend="auto", device="cuda", precision="bf16", compile=True).backend == "numpy"
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith('note: fit(backend="auto") runs on NumPy here')
        # the reason named is the first one that keeps it off torch here
        assert ("permission 'python' is not granted" if HAVE_TORCH else "(PyTorch is not installed)") in err
        assert 'ignoring device="cuda", precision="bf16", compile=true' in err
        with pytest.raises(ApsiError, match=r'^fit: precision="fp8" is not one of'):
            fit(backend="auto", precision="fp8")
        with pytest.raises(ApsiError, match=r'^fit: device="cuda" needs backend="torch"; the NumPy'):
            fit(backend="numpy", device="cuda")
    finally:
        permissions.set_current(old)


def test_predict_refuses_unknown_options_and_bad_batch_size():
    with pytest.raises(ApsiError, match=r"predict: unknown option 'batchsize'.*did you mean 'batch_size'"):
        L.predict(net(), net().init(seed=0), X, batchsize=2)
    with pytest.raises(ApsiError, match=r"predict: batch_size must be a positive int"):
        L.predict(net(), net().init(seed=0), X, batch_size=0)


@pytest.mark.parametrize("make, message", [
    (lambda: L.dense(0), r"dense: units must be a positive int, got 0"),
    (lambda: L.dense(3, activation="relux"), r"unknown activation 'relux'.*did you mean 'relu'"),
    (lambda: L.conv2d(4, 3, padding="full"), r'padding must be "valid", "same"'),
    (lambda: L.conv2d(3, 3, groups=2), r"filters \(3\) must be a multiple of groups \(2\)"),
    (lambda: L.dropout(1.0), r"dropout: rate must be a number in \[0, 1\)"),
    (lambda: L.parallel(L.dense(2)), r"parallel: needs at least two layers"),
    (lambda: L.parallel(L.dense(2), L.dense(2), merge="max"), r"unknown merge 'max'"),
    (lambda: L.sequential(), r"sequential: needs at least one layer"),
    (lambda: L.sequential(3), r"sequential: each argument must be a layer"),
    (lambda: L.dense(2, name="state"), r"the name \"state\" is reserved"),
    (lambda: L.dag("x", Record(h=[L.dense(2), "y"]), "h"), r"node 'h' reads 'y', which is neither an input"),
    (lambda: L.dag("x", Record(h=[L.dense(2), "x"]), "z"), r"outputs must name nodes or inputs"),
    (lambda: L.positions(8, kind="rotary"), r'kind must be "learned" or "sinusoidal"'),
    (lambda: L.transformer_lm(10, d=10, heads=3), r"d=10 must be a multiple of heads=3"),
    (lambda: L.mlp(2, 2, hidden="a"), r'mlp: hidden must be a list of positive ints, got "a"'),
    (lambda: L.gcn_classifier(2, 2, hidden=[0]), r"gcn_classifier: hidden must be a list of positive ints"),
    (lambda: L.global_avg_pool(axis=5).init(seed=0, input_shape=[3, 4]),
     r"global_avg_pool: axis=5 is outside inputs of per-sample shape \[3, 4\]"),
])
def test_layer_options_are_checked_when_made(make, message):
    with pytest.raises(ApsiError, match=message):
        make()


def test_build_errors_name_the_layer_and_shapes():
    with pytest.raises(ApsiError, match=r"residual: the inner layer maps \[3\] to \[2\]"):
        L.residual(L.dense(2)).init(seed=0, input_shape=[3])
    with pytest.raises(ApsiError, match=r'merge="concat" on axis -1 needs the other axes equal'):
        L.parallel(L.lstm_layer(2, return_sequences=True), L.conv1d(2, 2)).init(seed=0, input_shape=[4, 3])
    with pytest.raises(ApsiError, match=r"the model does not know the shape of its inputs"):
        L.sequential(L.dense(2)).init(seed=0)
    with pytest.raises(ApsiError, match=r"conv2d: the input size 2 is too small for kernel 3"):
        L.conv2d(1, 3).init(seed=0, input_shape=[1, 2, 2])
    with pytest.raises(ApsiError, match=r"flatten: takes one input but gets 3 \(\(\[5\], \[5\], \[5\]\)\): the layer "
                                        r"before it gives several outputs \(like return_state=true\)"):
        L.sequential(L.lstm_layer(5, return_state=True), L.flatten()).init(seed=0, input_shape=[4, 3])
    with pytest.raises(ApsiError, match=r"shared layer 'dense' is used with inputs that need other weight shapes"):
        d = L.dense(3)
        L.sequential(d, L.dense(4), d).init(seed=0, input_shape=[3])


def test_apply_time_shape_error_names_the_layer():
    d = L.dense(2)
    p = d.init(seed=0, input_shape=[3])
    from apsi_layers.backends.numpy.ops import OPSET
    from apsi_layers.layers.context import Ctx
    with pytest.raises(ApsiError, match=r"dense: expects inputs with 3 features on the last axis, got shape \[4, 5\]"):
        d.apply(p, nn.zeros(4, 5), Ctx(OPSET))


PROGRAM = """use layers
use nn
let x = randn(10, 2, seed=0)
let y = array([i % 2 for i in range(10)])
let net = mlp(2, 2, hidden=[4])
{line}
"""


@pytest.mark.parametrize("line, message", [
    ('let r = fit(net, net.init(seed=0), randn(10, 3, seed=0), y, loss="cross_entropy")',
     "fit: the model expects 2 input features per sample and got 3 (inputs of shape [10, 3])"),
    ('let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", backend="torch")',
     "fit(backend=\"torch\") needs permission 'python': run with --allow-python"),
    ('let r = fit(mlp(2, 1), mlp(2, 1).init(seed=0), x, y, loss="mse", opt=sgd(lr=1e9), epochs=5)',
     "fit: the loss became"),
])
def test_an_apsi_program_sees_the_message_at_its_own_line(tmp_path, line, message):
    import subprocess
    import sys

    program = tmp_path / "train.apsi"
    program.write_text(PROGRAM.format(line=line))
    r = subprocess.run([sys.executable, "-m", "apsi", str(program)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode != 0
    assert f"train.apsi:6:9: error: {message}" in r.stderr, r.stderr
    assert ".py" not in r.stderr and "Warning" not in r.stderr       # no Python frames or warnings


@pytest.mark.parametrize("model, params, x, message", [
    # the model does not know its input; its parameters do (a first dense weight is [inputs, units])
    (lambda: L.sequential(L.dense(8), L.dense(2)), lambda m: m.init(seed=0, input_shape=[3]), (4, 5),
     "predict: the model expects 3 input features per sample and got 5 (inputs of shape [4, 5]); give "
     "inputs of shape [N, 3]"),
    (lambda: L.mlp(1, 2), lambda m: m.init(seed=0), (4, 2),
     "predict: the model expects 1 input feature per sample and got 2"),
    (lambda: L.cnn_classifier([1, 8, 8], 2), lambda m: m.init(seed=0), (2, 3, 8, 8),
     "predict: the model expects inputs of per-sample shape [1, 8, 8] and got [3, 8, 8] (inputs of shape "
     "[2, 3, 8, 8]); give inputs of shape [N, 1, 8, 8]"),
    # the right width, parameters of another model: the parameter is named
    (lambda: L.mlp(2, 2, hidden=[8]), lambda m: L.mlp(2, 2, hidden=[4]).init(seed=0), (4, 2),
     "predict: parameter dense.w has shape [2, 4] but layer"),
])
def test_inputs_of_the_wrong_width_say_so_in_the_datas_terms(model, params, x, message):
    m = model()
    with pytest.raises(ApsiError) as e:
        L.predict(m, params(m), nn.Tensor(np.zeros(x)))
    assert e.value.message.startswith(message), e.value.message


def test_sequences_without_a_feature_axis_are_told_to_add_one():
    """issue 28: [N, T] data for an LSTM said "give one sample as a batch of one, [x]"."""
    net = L.lstm_classifier(1, 2, units=4)
    with pytest.raises(ApsiError) as e:
        L.predict(net, net.init(seed=0), nn.Tensor(np.zeros((20, 7))))
    assert "got [7] (one feature per step still needs its axis: [steps, 1])" in e.value.message
    assert e.value.message.endswith("so batches of shape [N, ?, 1]: reshape(x, [20, 7, 1])"), e.value.message
    assert "batch of one" not in e.value.message
    bare = L.sequential(L.lstm_layer(4), L.dense(2))          # a model that does not know its input
    with pytest.raises(ApsiError, match=r"got \[7\] \(one feature per step still needs its axis"):
        bare.init(seed=0, input_shape=[7])
    # one sample of a 3-feature sequence, without its batch axis: that tip stays
    net = L.lstm_classifier(3, 2, units=4)
    with pytest.raises(ApsiError, match=r"give one sample as a batch of one, \[x\]$"):
        L.predict(net, net.init(seed=0), nn.Tensor(np.zeros((7, 3))))
