"""What a new user met with issue 32's data features (the third attack round): each test fails on
the code before its fix."""

import numpy as np
import pytest

from .run import error, ok


def test_nan_category_code_is_the_unknown_column_in_fit_and_predict(tmp_path):
    """A missing category (NaN in the codes) was skipped by adapt but refused by fit and predict
    ('inputs hold nan …; an imputation layer fills them', and impute cannot fill a code): it is the
    unknown column, as any code adapt did not keep."""
    codes = np.array([1.0, 2.0, np.nan, 2.0, 5.0, np.nan, 1.0, 2.0])
    np.save(tmp_path / "c.npy", codes.reshape(-1, 1))
    np.save(tmp_path / "y.npy", np.arange(8.0).reshape(-1, 1))
    ok(tmp_path, """use layers
use nn
let c = load_npy("c.npy")
let net = sequential(category_lookup(2), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[1]), c)
let r = fit(net, p, c, load_npy("y.npy"), loss="mse", epochs=2, batch_size=4, verbose=false)
save_params("p.npz", r.params)
save_npy("out.npy", predict(net, r.params, c))
""")
    p = np.load(tmp_path / "p.npz")
    assert np.array_equal(p["category_lookup.state.values"], [1.0, 2.0])
    onehot = np.zeros((8, 3))
    onehot[np.arange(8), [1, 2, 0, 2, 0, 0, 1, 2]] = 1      # NaN and 5 (not kept): column 0
    want = onehot @ p["dense.w"] + p["dense.b"]
    assert np.allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-12, atol=1e-12)


def test_csv_to_npy_reads_missing_values_as_nan_when_told_how_they_are_written(tmp_path):
    """A real CSV leaves cells empty or writes NA: csv_to_npy refused them, pointing at read_csv (which
    reads the whole file) and at as="columns" (which csv_to_npy does not take). missing=[…] makes them
    NaN, streamed, for impute() to fill."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3000, 3)).round(4)
    holes = rng.random(x.shape) < 0.1
    words = np.where(rng.random(x.shape) < 0.5, "", "NA")
    lines = [",".join(w if h else repr(float(v)) for v, h, w in zip(row, hole, word, strict=True))
             for row, hole, word in zip(x, holes, words, strict=True)]
    (tmp_path / "d.csv").write_text("a,b,c\n" + "\n".join(lines) + "\n")
    (tmp_path / "t.csv").write_text("a,kind\n1,red\n")
    out = ok(tmp_path, """use nn
let files = csv_to_npy("d.csv", "d", shard_rows=1000, dtype="float64", missing=["", "NA"])
print(files)
try:
    csv_to_npy("d.csv", "e")
catch e:
    print(e)
try:
    csv_to_npy("d.csv", "e", missing=[""])
catch e:
    print(e)
try:
    csv_to_npy("t.csv", "e")
catch e:
    print(e)
""")
    assert out.splitlines()[0] == '["d-00000.npy", "d-00001.npy", "d-00002.npy"]'
    got = np.concatenate([np.load(tmp_path / f"d-0000{k}.npy") for k in range(3)])
    assert np.array_equal(got, np.where(holes, np.nan, x), equal_nan=True)
    empty, na, text = out.splitlines()[1:]
    first = next(k for k in range(x.size) if holes.flat[k])           # the first missing cell
    line, col = first // 3 + 2, "abc"[first % 3]
    assert empty.startswith(f'csv_to_npy("d.csv"): line {line}, column {col}: ')
    assert "pass missing=" in empty and "read_csv" not in empty and "as=" not in empty
    first_na = next(k for k in range(x.size) if holes.flat[k] and words.flat[k] == "NA")
    assert na == (f'csv_to_npy("d.csv"): line {first_na // 3 + 2}, column {"abc"[first_na % 3]}: "NA" is '
                  'not a number; if it marks a missing value, pass missing=["NA"] (such cells become nan, '
                  'which impute() fills)')
    assert text.startswith('csv_to_npy("t.csv"): line 2, column kind: "red" is not a number; csv_to_npy '
                           'writes numbers only: leave the column out with columns=[…]'), text


def test_windows_of_a_mapped_series_are_read_per_batch_and_fit_as_in_memory(tmp_path):
    """windows(load_npy(…)) was refused ('series must be a tensor …, not mapped array'): a series
    larger than memory could not be windowed. They are mapped windows now: the same batches, the same
    fit bit for bit, as windows of the series in memory."""
    series = np.random.default_rng(2).normal(size=(400, 2))
    np.save(tmp_path / "s0.npy", series[:150].astype(np.float32))
    np.save(tmp_path / "s1.npy", series[150:].astype(np.float32))
    out = ok(tmp_path, """use layers
use nn
let w = windows(load_npy(["s0.npy", "s1.npy"]), 24, horizon=3, stride=5)
let v = windows(load_npy(["s0.npy", "s1.npy"], mmap=false), 24, horizon=3, stride=5)
print(w[0].shape, w[1].shape)
save_npy("x.npy", w[0][[7, 2, 2, 70]])
save_npy("y.npy", w[1])
let net = sequential(flatten(), dense(2))
let p = net.init(seed=0, input_shape=[24, 2])
let a = fit(net, p, w[0], w[1][:, 0], loss="mse", epochs=2, batch_size=16, validation_split=0.25,
            verbose=false)
let b = fit(net, p, v[0], v[1][:, 0], loss="mse", epochs=2, batch_size=16, validation_split=0.25,
            verbose=false)
print(a.history == b.history, all(predict(net, a.params, w[0]) == predict(net, b.params, v[0])))
""")
    assert out.splitlines() == ["(75, 24, 2) (75, 3, 2)", "true true"]
    s = series.astype(np.float32).astype(np.float64)
    x = np.stack([s[k * 5:k * 5 + 24] for k in (7, 2, 2, 70)])
    assert np.array_equal(np.load(tmp_path / "x.npy"), x)
    y = np.stack([s[k * 5 + 24:k * 5 + 27] for k in range(75)])
    assert np.array_equal(np.load(tmp_path / "y.npy"), y)


def test_a_dataset_function_that_cannot_be_called_fn_i_is_named_at_dataset(tmp_path):
    """fn() or fn(i, g, h) was accepted, then fit said 'the dataset function failed at batch 0: fn(…)
    => … takes 0 positional arguments but was given 1' (Python's words, as if the function's body had
    failed)."""
    for fn, shown in (("fn() => [zeros(2, 3), zeros(2, 1)]", "()"),
                      ("fn(i, g, h) => [zeros(2, 3), zeros(2, 1)]", "(i, g, h)")):
        msg = error(tmp_path, f"""use layers
use nn
let ds = dataset(3, {fn})
fit(mlp(3, 1), mlp(3, 1).init(seed=0), ds, loss="mse", verbose=false)
""")
        assert (f"prog.apsi:3:10: error: dataset: fn is called fn(i) (the batch number) or fn(i, g) (and a "
                f"random generator of its own), but this function takes {shown}; give it one or two "
                "parameters") in msg, msg


def test_a_file_changed_under_predict_is_named_as_predicts_not_fits(tmp_path):
    """The message said 'do not rewrite a data file during fit' to a predict (and an adapt)."""
    msg = error(tmp_path, """use layers
use nn
save_npy("h.npy", zeros(10, 3))
let x = load_npy("h.npy")
append_text("h.npy", "more")
predict(mlp(3, 1), mlp(3, 1).init(seed=0), x)
""")
    assert ("prog.apsi:6:1: error: predict: 'h.npy' changed size while it was in use (368 bytes when loaded, "
            "372 now); do not rewrite a data file while predict reads it, or load it again") in msg, msg


def test_adapt_learns_preprocessing_of_column_groups_in_parallel_branches(tmp_path):
    """A table of numbers with gaps and a column of category codes: each group needs its own
    preprocessing (lambda_layer picking the columns, then impute/normalization or category_lookup).
    adapt refused it ('does not start with a preprocessing layer') and fit refused the NaN. Now adapt
    learns each layer from what reaches it, and the fitted model predicts as the reference does."""
    r = np.random.default_rng(0)
    x = r.normal(size=(400, 3)) * [1, 10, 100] + [0, 5, -3]
    x[r.random(x.shape) < 0.1] = np.nan
    c = r.integers(0, 6, size=(400, 1)).astype(float)
    c[r.random(c.shape) < 0.05] = np.nan
    np.save(tmp_path / "t.npy", np.hstack([x, c]))
    np.save(tmp_path / "y.npy", r.normal(size=(400, 1)))
    ok(tmp_path, """use layers
use nn
let t = load_npy("t.npy")
let num = sequential(lambda_layer(fn(v) => v[:, 0:3]), impute(), normalization())
let cat = sequential(lambda_layer(fn(v) => v[:, 3:4]), category_lookup(4))
let net = sequential(parallel(num, cat), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[4]), t[0:300])
let r = fit(net, p, t[0:300], load_npy("y.npy")[0:300], loss="mse", epochs=2, batch_size=50, verbose=false)
save_params("p.npz", r.params)
save_npy("out.npy", predict(net, r.params, t[300:400]))
""")
    p = np.load(tmp_path / "p.npz")
    train = x[:300]
    means = np.nanmean(train, axis=0)
    filled = np.where(np.isnan(train), means, train)
    assert np.allclose(p["parallel.sequential.impute.state.values"], means, rtol=1e-12)
    assert np.allclose(p["parallel.sequential.normalization.state.mean"], filled.mean(axis=0), rtol=1e-12)
    assert np.allclose(p["parallel.sequential.normalization.state.var"], filled.var(axis=0), rtol=1e-10)
    codes, counts = np.unique(c[:300][~np.isnan(c[:300])], return_counts=True)
    kept = np.sort(codes[np.lexsort((codes, -counts))][:4])
    assert np.array_equal(p["parallel.sequential_1.category_lookup.state.values"], kept)
    test = x[300:]
    z = (np.where(np.isnan(test), means, test) - filled.mean(axis=0)) / np.sqrt(filled.var(axis=0) + 1e-12)
    onehot = (c[300:] == kept).astype(float)
    onehot = np.hstack([1 - onehot.sum(axis=1, keepdims=True), onehot])
    want = np.hstack([z, onehot]) @ p["dense.w"] + p["dense.b"]
    assert np.allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-10, atol=1e-12)


def test_adapt_refuses_a_preprocessing_layer_behind_trainable_weights(tmp_path):
    msg = error(tmp_path, """use layers
use nn
let net = sequential(dense(3), normalization(), dense(1))
adapt(net, net.init(seed=0, input_shape=[2]), ones(4, 2))
""")
    assert ("adapt: normalization is reached through layers with trainable weights, whose initial values "
            "would be learnt as the data's; put preprocessing layers before them") in msg, msg


def _files_limit(soft, hard=None):
    import resource

    def set_limit():
        now = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard or now))
    return set_limit


def test_many_shards_raise_the_open_files_limit_or_say_what_to_do(tmp_path):
    """Each shard stays open; 1500 shards (csv_to_npy with a small shard_rows) under a shell's usual
    soft limit of 1024 failed with 'load_npy("s01019.npy"): Too many open files'. The soft limit is
    raised up to the hard one; beyond that the message says how many, the limit and what to do."""
    import subprocess
    import sys

    for i in range(300):
        np.save(tmp_path / f"s{i:03d}.npy", np.full((2, 3), i, dtype=np.float32))
    (tmp_path / "prog.apsi").write_text("""use nn
let files = []
for i in range(300):
    files.append("s" + str(i).zfill(3) + ".npy")
let x = load_npy(files)
print(len(x), x[599].tolist())
""")
    run = [sys.executable, "-m", "apsi", "prog.apsi"]
    raised = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            preexec_fn=_files_limit(100))
    assert raised.returncode == 0 and raised.stdout == "600 [299.0, 299.0, 299.0]\n", raised.stderr
    capped = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            preexec_fn=_files_limit(100, 100))
    assert ("prog.apsi:5:9: error: load_npy: 300 shards are more files than this process may keep open (the "
            "limit is 100: `ulimit -n`); write fewer, larger shards") in capped.stderr, capped.stderr


def test_shards_in_another_byte_order_are_named_so(tmp_path):
    """A shard written on a big-endian machine beside one written here: the message said 'holds
    float64 rows … but … holds >f8 rows' (NumPy's code, no hint that only the byte order differs)."""
    x = np.arange(6.0).reshape(3, 2)
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "b.npy", x.astype(">f8"))
    msg = error(tmp_path, 'use nn\nload_npy(["a.npy", "b.npy"])\n')
    assert ("load_npy: shard 'b.npy' holds float64 (big-endian) rows of shape [2] but 'a.npy' holds float64 "
            "rows of shape [2]; every shard must have the same dtype and the same shape after the first "
            "axis; one of them is in another byte order: rewrite it with save_npy(path, load_npy(path)), "
            "which writes this machine's") in msg, msg
    ok(tmp_path, 'use nn\nsave_npy("b.npy", load_npy("b.npy"))\nload_npy(["a.npy", "b.npy"])\n')
    assert np.load(tmp_path / "b.npy").dtype == np.dtype("<f8")


def test_sample_weight_from_a_mapped_file_is_read_as_targets_are(tmp_path):
    """Targets and masks from load_npy were read into memory; sample_weight was refused ('must be a
    tensor … not mapped array')."""
    r = np.random.default_rng(1)
    np.save(tmp_path / "x.npy", r.normal(size=(64, 3)))
    np.save(tmp_path / "y.npy", r.normal(size=(64, 1)))
    np.save(tmp_path / "w.npy", np.linspace(0.0, 2.0, 64))
    out = ok(tmp_path, """use layers
use nn
let net = mlp(3, 1)
fn run(w):
    return fit(net, net.init(seed=0), load_npy("x.npy"), load_npy("y.npy"), loss="mse", epochs=2,
               batch_size=16, verbose=false, sample_weight=w).history
let mapped = run(load_npy("w.npy"))
print(mapped == run(load_npy("w.npy", mmap=false)), mapped == run(none))
""")
    assert out.strip() == "true false"


def test_split_gives_a_training_split_that_stays_on_disk(tmp_path):
    """The docs' own example adapted and fitted on x[0:n_train], which reads the rows into a tensor:
    the training split of data larger than memory did not fit in memory. x.split(n) gives two mapped
    arrays, reading nothing; adapt and fit over them learn what the rows in memory give."""
    x = np.random.default_rng(4).normal(size=(500, 3)) * [1, 5, 9]
    np.save(tmp_path / "a.npy", x[:300])
    np.save(tmp_path / "b.npy", x[300:])
    np.save(tmp_path / "y.npy", x.sum(axis=1, keepdims=True))
    np.save(tmp_path / "one.npy", x[:1])
    out = ok(tmp_path, """use layers
use nn
let x = load_npy(["a.npy", "b.npy"])
let train, test = x.split(400)
print(train, test)
let net = sequential(normalization(), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[3]), train)
save_params("p.npz", p)
let y = load_npy("y.npy", mmap=false)
let a = fit(net, p, train, y[0:400], loss="mse", epochs=2, verbose=false)
let b = fit(net, p, x[0:400], y[0:400], loss="mse", epochs=2, verbose=false)
print(a.history == b.history, all(predict(net, a.params, test) == predict(net, b.params, x[400:500])))
try:
    x.split(500)
catch e:
    print(e)
try:
    load_npy("one.npy").split(1)
catch e:
    print(e)
""")
    shown, same, refused, empty = out.splitlines()
    assert empty == "split: a mapped array of 1 row cannot be split in two parts of at least one row"
    assert shown == "mapped array [400, 3] float64 (2 file(s)) mapped array [100, 3] float64 (2 file(s))"
    assert same == "true true"
    assert refused == ("split: at must be an int from 1 to 499 (the rows of the first part) for a mapped "
                       "array of 500 rows, not 500")
    p = np.load(tmp_path / "p.npz")
    assert np.allclose(p["normalization.state.mean"], x[:400].mean(axis=0), rtol=1e-12)
    assert np.allclose(p["normalization.state.var"], x[:400].var(axis=0), rtol=1e-12)


def test_a_dataset_function_may_return_mapped_rows(tmp_path):
    """A batch returned as a mapped array (a part from x.split) was refused ('batch 0's x must be a
    tensor …, not mapped array'): it is read as that batch's rows."""
    np.save(tmp_path / "x.npy", np.random.default_rng(3).normal(size=(40, 3)))
    out = ok(tmp_path, """use layers
use nn
let x = load_npy("x.npy")
fn mapped(i):
    let rest = x.split(10 * i)[1] if i > 0 else x
    return [rest.split(10)[0] if len(rest) > 10 else rest, ones(10, 1)]
fn read(i):
    return [x[10 * i:10 * (i + 1)], ones(10, 1)]
let net = mlp(3, 1)
let a = fit(net, net.init(seed=0), dataset(4, mapped, workers=0), loss="mse", epochs=2, verbose=false)
let b = fit(net, net.init(seed=0), dataset(4, read, workers=0), loss="mse", epochs=2, verbose=false)
print(a.history == b.history)
""")
    assert out.strip() == "true"


SAVE_CHILD = """
from apsi_lang import permissions
from apsi_layers.data.memmap import load_npy, save_npy

def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) * 1024

permissions.set_current(permissions.Grants(granted=frozenset(), project_root="."))
x = load_npy(["a.npy", "b.npy"])
save_npy("warm.npy", x.split(10)[0])                     # imports, first allocations
open("/proc/self/clear_refs", "w").write("5")          # the peak from here (the kernel's)
before = hwm()
save_npy("all.npy", x)
print(hwm() - before)
"""


def test_save_npy_of_a_mapped_array_writes_it_block_by_block(tmp_path):
    """save_npy(path, load_npy(shards)) (joining shards) read every row into memory first: joining
    shards larger than memory failed. The rows go to the file about 1 MiB at a time, in this
    machine's byte order."""
    import subprocess
    import sys

    r = np.random.default_rng(6)
    a, b = r.normal(size=(150_000, 16)), r.normal(size=(100_000, 16))      # 32 MB in all
    np.save(tmp_path / "a.npy", a.astype(">f8"))      # (written on a big-endian machine)
    np.save(tmp_path / "b.npy", b.astype(">f8"))
    out = subprocess.run([sys.executable, "-c", SAVE_CHILD], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    joined = np.load(tmp_path / "all.npy")
    assert joined.dtype == np.dtype("=f8") and np.array_equal(joined, np.concatenate([a, b]))
    assert int(out.stdout) < 8 << 20, f"peak rose by {int(out.stdout) / 2**20:.1f} MiB for 32 MB written"


def test_load_npy_mmap_must_be_true_or_false(tmp_path):
    """mmap=0 or mmap="false" mapped the file (only false itself read it)."""
    np.save(tmp_path / "x.npy", np.zeros((2, 2)))
    msg = error(tmp_path, 'use nn\nload_npy("x.npy", mmap=0)\n')
    assert ("load_npy: mmap must be true (read by rows when used) or false (read it into a tensor now), "
            "not 0") in msg, msg


@pytest.mark.torch
def test_category_lookup_on_torch(tmp_path):
    """(1) category_lookup(output="index") then embedding (Keras's IntegerLookup → Embedding) trained
    on NumPy; on torch it stopped with PyTorch's words: 'predict: RuntimeError: index_select():
    Expected dtype int32 or int64 for index'. (2) On torch below fp64 codes are compared in float32:
    16777217 matched both 16777216 and itself, so predict set two one-hot columns (index output
    6 + 7 = 13) with no word. Refused now; fp64 gives the lookup exactly. One program: one start of
    PyTorch."""
    c = np.array([[5.0], [7.0], [5.0], [9.0], [np.nan], [123.0]])
    np.save(tmp_path / "c.npy", c)
    out = ok(tmp_path, """use layers
use nn
let c = load_npy("c.npy", mmap=false)
let net = sequential(category_lookup(3, output="index"), embedding(4, 2), flatten(), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[1]), c)
let r = fit(net, p, c, array([[1.0], [2.0], [1.0], [3.0], [0.0], [0.0]]), loss="mse", epochs=2,
            backend="torch", precision="fp64", verbose=false)
save_params("p.npz", r.params)
save_npy("out.npy", predict(net, r.params, c, backend="torch", precision="fp64"))
let big = array([[1001.0], [16777217.0], [16777216.0], [1001.0]])
let lookup = sequential(category_lookup(3, output="index"))
let q = adapt(lookup, lookup.init(seed=0, input_shape=[1]), big)
print(predict(lookup, q, big, backend="torch", precision="fp64").flatten().tolist())
try:
    predict(lookup, q, big, backend="torch")
catch e:
    print(e)
""", "--allow-python")
    p = np.load(tmp_path / "p.npz")
    index = np.array([1, 2, 1, 3, 0, 0])               # kept 5, 7, 9; NaN and 123: 0 (unknown)
    want = p["embedding.w"][index].reshape(6, -1) @ p["dense.w"] + p["dense.b"]
    assert np.allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-12, atol=1e-12)
    exact, refused = out.splitlines()
    assert exact == "[1.0, 3.0, 2.0, 1.0]"
    assert refused == ('predict: category_lookup keeps the category code 16777216, which float32 (the '
                       'torch backend at precision="fp32") cannot tell from its neighbours: codes there must '
                       'be whole numbers below 2^24 = 16777216; renumber the codes 0, 1, 2, … before adapt, '
                       'or use precision="fp64"')
