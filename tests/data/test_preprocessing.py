"""Preprocessing layers that learn from data (issue 32): adapt in one streamed pass, the state in the
parameter tree, applied identically by predict on both backends."""

from collections import Counter

import numpy as np
import pytest

from .run import error, ok


@pytest.fixture
def table(tmp_path):
    r = np.random.default_rng(3)
    x = (r.normal(size=(3000, 3)) * [1.0, 10.0, 0.1] + [5.0, -2.0, 0.0]).astype(np.float32)
    x[r.random(x.shape) < 0.1] = np.nan
    np.save(tmp_path / "x0.npy", x[:1000])
    np.save(tmp_path / "x1.npy", x[1000:])
    return x.astype(np.float64)


def test_impute_then_normalization_adapted_streaming_over_shards(tmp_path, table):
    ok(tmp_path, """use layers
use nn
let x = load_npy(["x0.npy", "x1.npy"])
let net = sequential([impute(), normalization(), dense(1)])
let p = adapt(net, net.init(seed=0, input_shape=[3]), x)
save_params("p.npz", p)
save_npy("out.npy", predict(net, p, x))
""")
    p = np.load(tmp_path / "p.npz")
    means = np.nanmean(table, axis=0)
    assert np.allclose(p["impute.state.values"], means, rtol=1e-12, atol=0)
    filled = np.where(np.isnan(table), means, table)
    assert np.allclose(p["normalization.state.mean"], filled.mean(axis=0), rtol=1e-12)
    assert np.allclose(p["normalization.state.var"], filled.var(axis=0), rtol=1e-10)
    z = (filled - filled.mean(axis=0)) / np.sqrt(filled.var(axis=0) + 1e-12)
    ref = z @ p["dense.w"] + p["dense.b"]
    assert np.allclose(np.load(tmp_path / "out.npy"), ref, rtol=1e-10, atol=1e-12)


def test_fit_takes_nan_inputs_when_the_model_imputes_them(tmp_path, table):
    np.save(tmp_path / "y.npy", np.nan_to_num(table[:, :1], nan=0.0))
    out = ok(tmp_path, """use layers
use nn
let x = load_npy(["x0.npy", "x1.npy"])
let net = sequential([impute(), normalization(), dense(1)])
let p = adapt(net, net.init(seed=0, input_shape=[3]), x[0:2000])
let r = fit(net, p, x[0:2000], load_npy("y.npy")[0:2000], loss="mse", epochs=2, batch_size=100)
print(r.history[1] < r.history[0], array_equal(r.params.impute.state.values, p.impute.state.values))
""")
    assert out.split() == ["true", "true"]


def test_category_lookup_keeps_the_most_frequent_and_sends_unknowns_to_column_0(tmp_path):
    codes = np.random.default_rng(0).integers(0, 9, size=500).astype(np.float64)
    np.save(tmp_path / "c.npy", codes)
    out = ok(tmp_path, """use layers
use nn
let c = category_lookup(4)
let ds = dataset(5, fn(i) => [load_npy("c.npy")[i * 100:(i + 1) * 100]])
let p = adapt(c, c.init(input_shape=[]), ds)
print(p.state.values.tolist())
save_npy("oh.npy", predict(c, p, array([0, 1, 2, 3, 4, 5, 6, 7, 8, 42])))
let z = category_lookup(4, unknown="zeros")
save_npy("z.npy", predict(z, p, array([42])))
""")
    counts = Counter(codes.tolist())
    kept = sorted(v for v, _ in sorted(counts.items(), key=lambda vc: (-vc[1], vc[0]))[:4])
    assert out.strip() == str(kept)
    oh = np.load(tmp_path / "oh.npy")
    for row, code in zip(oh, list(range(9)) + [42], strict=True):
        want = np.zeros(5)
        want[kept.index(code) + 1 if code in kept else 0] = 1
        assert np.array_equal(row, want)
    assert np.array_equal(np.load(tmp_path / "z.npy"), np.zeros((1, 5)))


@pytest.mark.torch
def test_torch_predict_applies_the_same_state(tmp_path, table):
    pytest.importorskip("torch")
    out = ok(tmp_path, """use layers
use nn
let x = load_npy(["x0.npy", "x1.npy"])
let net = sequential([impute(), normalization(), dense(2)])
let p = adapt(net, net.init(seed=0, input_shape=[3]), x)
let a = predict(net, p, x[0:500])
let b = predict(net, p, x[0:500], backend="torch", precision="fp64")
print(allclose(a, b, rtol=1e-12, atol=1e-12))
""", "--allow-python")
    assert out.strip() == "true"


def test_adapt_needs_a_preprocessing_layer(tmp_path):
    msg = error(tmp_path, "use layers\nuse nn\nlet n = mlp(2, 1)\n"
                          "let p = adapt(n, n.init(seed=0), ones(4, 2))\n")
    assert "adapt: mlp has no preprocessing layer (normalization, category_lookup, impute)" in msg


def test_a_model_file_keeps_the_learnt_state(tmp_path):
    out = ok(tmp_path, """use layers
use nn
let x = array([[1.0, 10.0], [3.0, nan], [5.0, 30.0]])
let net2 = sequential(impute(), normalization(), dense(1))
let p = adapt(net2, net2.init(seed=0, input_shape=[2]), x)
save_model("m.apsimodel", net2, p)
let m = load_model("m.apsimodel")
print(array_equal(predict(m.net, m.params, x), predict(net2, p, x)), m.params.impute.state.values.tolist())
""")
    assert out.strip() == "true [3.0, 20.0]"


@pytest.mark.parametrize("strategy", ["median", "most_frequent"])
def test_impute_median_and_most_frequent_are_scikit_learns(tmp_path, strategy):
    """Streamed over 82 calls of a dataset (one merge of value counts per call), the state is what
    scikit-learn's SimpleImputer learns from all the rows at once (ties: the smallest value; a column
    with no value gets fill, 0, as SimpleImputer(keep_empty_features=True) does)."""
    sklearn_impute = pytest.importorskip("sklearn.impute")
    r = np.random.default_rng(7)
    x = np.column_stack([r.integers(0, 6, 3000), r.integers(-3, 3, 3000) * 0.5, r.normal(size=3000),
                         np.full(3000, np.nan)]).astype(np.float32)
    x[:, :3][r.random((3000, 3)) < 0.2] = np.nan
    np.save(tmp_path / "x.npy", x)
    ok(tmp_path, f"""use layers
use nn
let x = load_npy("x.npy", mmap=false)
let ds = dataset(82, fn(i) => [x[i * 37:(i + 1) * 37], x[i * 37:(i + 1) * 37]], workers=0)
let net = sequential(impute(strategy="{strategy}"), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[4]), ds)
save_npy("state.npy", p.impute.state.values)
save_npy("out.npy", predict(net, p, x))
""")
    ref = sklearn_impute.SimpleImputer(strategy=strategy, keep_empty_features=True).fit(x.astype(np.float64))
    state = np.load(tmp_path / "state.npy")
    assert np.array_equal(state, ref.statistics_), (state, ref.statistics_)
    p = np.load(tmp_path / "state.npy")
    assert np.isfinite(np.load(tmp_path / "out.npy")).all() and p[3] == 0.0


def test_impute_strategy_is_checked(tmp_path):
    msg = error(tmp_path, 'use layers\nlet l = impute(strategy="mode")\n')
    assert 'impute: strategy must be one of "mean", "median", "most_frequent", "constant", got "mode"' in msg


def test_adapt_refuses_what_its_layers_cannot_learn_from(tmp_path):
    """Each was accepted silently: data of another width (a shape error at the first predict), a NaN
    or inf seen by normalization or an inf by impute (fit then said only that its loss became NaN),
    several codes per sample for a lookup (all counted as one column)."""
    np.save(tmp_path / "x5.npy", np.ones((6, 5), np.float32))
    out = ok(tmp_path, """use layers
use nn
fn attempt(net, shape, x):
    try:
        adapt(net, net.init(seed=0, input_shape=shape), x)
        print("adapted")
    catch e:
        print(e.message)
attempt(sequential(normalization(), dense(1)), [4], load_npy("x5.npy"))
attempt(sequential(normalization(), dense(1)), [2], array([[1.0, 2.0], [3.0, nan]]))
attempt(sequential(impute(), normalization()), [2], array([[1.0, 2.0], [inf, nan]]))
attempt(sequential(category_lookup(2), dense(1)), [1], ones(4, 3))
attempt(sequential(impute(), normalization(), dense(1)), [2], array([[1.0, 2.0], [nan, 3.0]]))
""")
    assert out.splitlines() == [
        "adapt: normalization (at normalization) was made by init for 4 features per sample, but the "
        "data has 5; adapt on data of the model's input shape (or init the model with input_shape=[…] "
        "of this data)",
        "adapt: normalization met nan at row 1 of the data; put impute() before it (it fills NaN) or "
        "replace those values first",
        "adapt: impute met inf at row 1 of the data; impute fills NaN only: replace those values first",
        "adapt: category_lookup takes one category code per sample (data [N] or [N, 1]), but the data "
        "has per-sample shape [3]",
        "adapted"]


def test_adapt_finds_the_preprocessing_inside_a_leading_sequential(tmp_path):
    out = ok(tmp_path, """use layers
use nn
let net = sequential(sequential(impute(), normalization()), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[2]), array([[1.0, 10.0], [3.0, nan], [5.0, 30.0]]))
print(p.sequential.impute.state.values.tolist(), p.sequential.normalization.state.mean.tolist())
""")
    assert out.strip() == "[3.0, 20.0] [3.0, 20.0]"


def test_a_feature_constant_in_training_keeps_its_scale(tmp_path):
    """scikit-learn's StandardScaler leaves a constant feature's scale at 1; sqrt(0 + eps) turned a
    difference of 1 at predict into 10^6. A feature that varies, however little, keeps its variance."""
    r = np.random.default_rng(0)
    x = np.column_stack([np.full(1000, 0.1), np.full(1000, 7.0), np.zeros(1000),
                         1e3 + 1e-8 * r.normal(size=1000), r.normal(size=1000)])
    np.save(tmp_path / "x.npy", x)
    later = x[:4] + 1.0
    np.save(tmp_path / "later.npy", later)
    ok(tmp_path, """use layers
use nn
let net = sequential([normalization()])
let p = adapt(net, net.init(seed=0, input_shape=[5]), load_npy("x.npy"))
save_params("p.npz", p)
save_npy("out.npy", predict(net, p, load_npy("later.npy", mmap=false)))
""")
    p = np.load(tmp_path / "p.npz")
    mean, var = x.mean(axis=0), x.var(axis=0)
    scale = np.where(np.arange(5) < 3, 1.0, np.sqrt(var + 1e-12))       # StandardScaler's rule
    learnt = p["normalization.state.var"]
    assert np.allclose(learnt[:3], 1.0) and np.allclose(learnt[3:], var[3:])
    assert np.allclose(np.load(tmp_path / "out.npy"), (later - mean) / scale, rtol=1e-9, atol=1e-12)
    assert np.allclose(np.load(tmp_path / "out.npy")[:, :3], 1.0)
