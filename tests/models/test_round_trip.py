"""save_model in one process, load_model in another: predict gives the same bits, for every zoo model,
composition (residual, parallel, dag with shared layers), graph models and lambda / activation(fn)
layers, on NumPy and (with PyTorch) on torch."""

import numpy as np
import pytest

MODELS = '''
use layers
use nn
let k = 1.5
fn squash(x):
    return x / (1 + abs(x)) * k
let shared = dense(4, activation="tanh")
let models = [
    [mlp(3, 2, hidden=[8], activation="tanh", dropout=0.1, batch_norm=true), randn(4, 3, seed=1), none],
    [resnet_mlp(3, 2, width=8, blocks=2), randn(4, 3, seed=1), none],
    [cnn_classifier([1, 6, 6], 3, filters=[2], hidden=8), randn(2, 1, 6, 6, seed=2), none],
    [lstm_classifier(3, 2, units=4, layers=2, cell="gru"), randn(2, 5, 3, seed=3), none],
    [lstm_classifier(0, 2, units=4, vocab=7, embed=3), array([[1, 2, 3], [6, 0, 1]]), none],
    [transformer_lm(11, d=8, heads=2, layers=1, context=6), array([[1, 2, 3, 4], [5, 6, 7, 8]]), none],
    [gcn_classifier(3, 2, hidden=[4], kind="gat"), randn(5, 3, seed=4), array([[0, 1, 2, 3], [1, 2, 3, 4]])],
    [gcn_classifier(3, 2, hidden=[4], kind="gin"), randn(5, 3, seed=4), array([[0, 1, 2, 3], [1, 2, 3, 4]])],
    [vae(6, 2, hidden=[4]), randn(3, 6, seed=5), none],
    [sequential(dense(4, inputs=3), residual(sequential(layer_norm(), dense(4))),
                parallel(dense(2), dense(3), merge="concat"), batch_norm(), dense(2)), randn(4, 3,
                    seed=6), none],
    [dag(inputs={a: [3], b: [3]}, nodes={ea: [shared, "a"], eb: [shared, "b"],
         d: [merge("sub"), ["ea", "eb"]], out: [dense(2), "d"]}, outputs="out"),
     [randn(4, 3, seed=7), randn(4, 3, seed=8)], none],
    [sequential(dense(5, activation=squash, inputs=3), lambda_layer(fn(x) => x[:, :2] * k, output_shape=[2]),
                activation(fn(x) => tanh(x) + squash(x))), randn(4, 3, seed=9), none],
]
'''

SAVE = MODELS + '''
for i, item in enumerate(models):
    let net = item[0]
    let p = net.init(seed=i)
    if i == 0:       # running statistics that are not the initial ones
        p = fit(net, p, item[1], array([0, 1, 0, 1]), loss="cross_entropy", epochs=2, batch_size=2,
                verbose=false).params
    let y = predict(net, p, item[1], graph=item[2], backend=args[0])
    save_model(f"m{i}.apsim", net, p)
    save_params(f"y{i}.npz", {y: y})
print(len(models))
'''

LOAD = MODELS + '''
for i, item in enumerate(models):
    let m = load_model(f"m{i}.apsim")
    save_params(f"z{i}.npz", {y: predict(m.net, m.params, item[1], graph=item[2], backend=args[0])})
    print(m.net)
'''


def _round_trip(run, tmp_path, backend, *flags):
    saved = run(SAVE.replace("args[0]", f'"{backend}"'), *flags, name="save.apsi")
    assert saved.returncode == 0, saved.stderr
    n = int(saved.stdout.split()[-1])
    for i in range(n):
        (tmp_path / f"m{i}.apsim").rename(tmp_path / f"moved{i}.apsim")
        (tmp_path / f"moved{i}.apsim").rename(tmp_path / f"m{i}.apsim")
    # a program that defines none of the models' functions loads them (only `models` for the inputs)
    loaded = run(LOAD.replace("args[0]", f'"{backend}"'), *flags, name="load.apsi")
    assert loaded.returncode == 0, loaded.stderr
    assert "File \"" not in loaded.stderr
    for i in range(n):
        y = np.load(tmp_path / f"y{i}.npz")["y"]
        z = np.load(tmp_path / f"z{i}.npz")["y"]
        assert y.dtype == z.dtype and y.shape == z.shape
        assert y.tobytes() == z.tobytes(), f"model {i} differs after load"
    return loaded.stdout


@pytest.mark.slow
def test_round_trip_numpy_in_another_process(run, tmp_path):
    out = _round_trip(run, tmp_path, "numpy")
    assert "vae(6, 2" in out and "transformer_lm(11" in out and "dag(" in out


@pytest.mark.slow
@pytest.mark.torch
def test_round_trip_torch_in_another_process(run, tmp_path):
    pytest.importorskip("torch")
    _round_trip(run, tmp_path, "torch", "--allow-python")


def test_shared_layer_stays_shared_and_lambda_reads_its_program(run, tmp_path):
    r = run('''
use layers
use nn
let scale = 3.0
let d = dense(2, inputs=2)
let net = sequential(d, lambda_layer(fn(x) => x * scale), d)
let p = net.init(seed=0)
save_model("s.apsim", net, p)
print([name for name, v in flatten(p)])
''')
    assert r.returncode == 0, r.stderr
    r2 = run('''
use layers
use nn
let m = load_model("s.apsim")
print([name for name, v in flatten(m.params)])
print(predict(m.net, m.params, array([[1.0, 2.0]])).tolist())
''', name="q.apsi")
    assert r2.returncode == 0, r2.stderr
    names, out = r2.stdout.splitlines()
    assert names == r.stdout.strip() == '["dense.w", "dense.b"]'
    import json
    import zipfile

    from apsi_layers.nn.io.params_io import load_params  # noqa: F401  (the file's own reader is tested above)

    with zipfile.ZipFile(tmp_path / "s.apsim") as z:
        w = np.load(z.open("params/dense.w.npy"))
        b = np.load(z.open("params/dense.b.npy"))
        d = json.loads(z.read("model.json"))
    x = np.array([[1.0, 2.0]])
    want = ((x @ w + b) * 3.0) @ w + b           # one dense used twice: the same weights both times
    assert json.loads(out) == want.tolist()
    assert d["functions"][0]["text"] == "fn(x) => x * scale"
    assert d["functions"][0]["captures"] == {"scale": 3.0}


def test_fit_continues_after_load(run, tmp_path):
    common = '''
use layers
use nn
let x = randn(32, 3, seed=1)
let y = argmax(x, axis=1)
let net = mlp(3, 3, hidden=[8])
'''
    r = run(common + '''
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", opt=adam(lr=0.01), epochs=2, verbose=false)
save_model("c.apsim", net, r, labels=["a", "b", "c"], meta={data: "toy"})
let more = fit(net, r.params, x, y, loss="cross_entropy", opt=r.opt, epochs=2, verbose=false)
save_params("direct.npz", more.params)
''')
    assert r.returncode == 0, r.stderr
    r2 = run(common + '''
let m = load_model("c.apsim")
print(m.opt.steps, len(m.history.history), m.meta.data, m.labels)
let more = fit(m.net, m.params, x, y, loss="cross_entropy", opt=m.opt, epochs=2, verbose=false)
save_params("loaded.npz", more.params)
''', name="q.apsi")
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout.split()[:4] == ["2", "2", "toy", '["a",']
    a, b = np.load(tmp_path / "direct.npz"), np.load(tmp_path / "loaded.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert a[k].tobytes() == b[k].tobytes(), k


def test_predict_labels_and_proba_against_numpy(run, tmp_path):
    r = run('''
use layers
use nn
let net = mlp(2, 3, hidden=[4])
let p = net.init(seed=0)
save_model("l.apsim", net, p, labels=["cat", "dog", "eel"])
let m = load_model("l.apsim")
let x = array([[1.0, -1.0], [0.5, 2.0], [-3.0, 0.0]])
save_params("o.npz", {y: predict(m.net, m.params, x), p: predict_proba(m, x)})
print(predict_labels(m, x))
''')
    assert r.returncode == 0, r.stderr
    o = np.load(tmp_path / "o.npz")
    e = np.exp(o["y"] - o["y"].max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(o["p"], want, rtol=1e-15, atol=0)
    names = ["cat", "dog", "eel"]
    assert r.stdout.strip() == "[" + ", ".join(f'"{names[i]}"' for i in want.argmax(axis=1)) + "]"


def test_model_from_checkpoint(run, tmp_path):
    r = run('''
use layers
use nn
let x = randn(16, 3, seed=1)
let net = mlp(3, 2, hidden=[4])
let r = fit(net, net.init(seed=0), x, argmax(x[:, :2], axis=1), loss="cross_entropy", epochs=2,
            checkpoint="run.ckpt", verbose=false)
let m = model_from_checkpoint("run.ckpt", net, labels=["a", "b"], path="from_ckpt.apsim")
print(all(predict(m.net, m.params, x) == predict(net, r.params, x)))
let again = load_model("from_ckpt.apsim")
print(all(predict(again.net, again.params, x) == predict(net, r.params, x)), again.labels)
''')
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["true", "true", '["a",', '"b"]']


def test_save_refuses_python_functions_and_wrong_params(run):
    r = run('''
use layers
use nn
let net = mlp(2, 2, hidden=[4])
let other = mlp(3, 2, hidden=[4])
save_model("w.apsim", net, other.init(seed=0))
''')
    assert r.returncode == 1 and "File \"" not in r.stderr
    assert "save_model: parameter" in r.stderr and "[3, 4]" in r.stderr


def test_apsim_is_a_data_kind_without_write_permission(run, tmp_path):
    r = run('''
use layers
let net = mlp(2, 2, hidden=[4])
save_model("sub/../inside.apsim", net, net.init(seed=0))
save_model("inside2", net, net.init(seed=0))
print("ok")
''')
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "inside.apsim").is_file() and (tmp_path / "inside2.apsim").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_docs_models_example_runs(run):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    block = text.split("```apsi\n", 1)[1].split("```", 1)[0]
    r = run(block)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("(2, 3)")


def test_a_model_given_its_input_shape_by_init_round_trips(run):
    """init(input_shape=) is not part of the text the model prints: the description keeps inputs= as
    written and the file's input_shape gives the shape back (a mismatch refused every such save)."""
    r = run('''
use layers
use nn
let net = sequential(dense(3, activation="tanh"), dense(1))
let p = net.init(seed=0, input_shape=[2])
save_model("m.apsim", net, p)
let m = load_model("m.apsim")
let x = randn(4, 2, seed=1)
print(m.net, m.net.input_shape, array_equal(predict(m.net, m.params, x), predict(net, p, x)))
''')
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == 'sequential(dense(3, activation="tanh"), dense(1)) [2] true', r.stdout
