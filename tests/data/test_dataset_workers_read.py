"""predict and adapt over dataset(count, fn, workers=N) read the calls as fit does: in the dataset's
worker processes, call i with its random stream from (seed 0, epoch 0, i), so the result is the same
with 0 or N workers and matches NumPy's computation of the same batches; an error names its batch."""

import sys

import numpy as np
import pytest

from .run import apsi, ok

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux")

# Each call prints its tag, its number and how many calls the process that made it has made (`seen`
# is a copy per worker): the lines show which process made each call. The program's own `seen`
# shows none of the workers' calls.
PROGRAM = """use layers
use nn
let base = load_npy("base.npy", mmap=false)
let seen = []
fn batches(tag):
    fn batch(i, g):
        seen.append(i)
        print(tag, i, len(seen))
        let x = base[i * 6:(i + 1) * 6]
        return [x + normal(0, 1, x.shape, seed=g), zeros(6, 1)]
    return batch
let net = dense(2)
let p = net.init(seed=0, input_shape=[3])
save_npy("w.npy", p.w)
save_npy("b.npy", p.b)
save_npy("two.npy", predict(net, p, dataset(5, batches("two"), workers=2)))
let before = len(seen)
let made = []
fn in_thread(i, g):
    let xy = batches("none")(i, g)
    made.append(xy[0])
    return xy
save_npy("none.npy", predict(net, p, dataset(5, in_thread, workers=0)))
save_npy("memory.npy", predict(net, p, concat(made)))
let pre = sequential(impute(), normalization())
let q = adapt(pre, pre.init(seed=0, input_shape=[3]), dataset(5, batches("adapt"), workers=2))
save_npy("many.npy", predict(net, p, dataset(1030, fn(i) => [base[i % 30:i % 30 + 1]], workers=2)))
save_npy("mean.npy", q.normalization.state.mean)
save_npy("var.npy", q.normalization.state.var)
print("program", before, len(seen))
"""


def _calls(lines, tag):
    return sorted(tuple(int(v) for v in line.split()[1:]) for line in lines if line.startswith(tag + " "))


def test_predict_and_adapt_read_a_dataset_in_its_workers_with_the_same_streams(tmp_path):
    base = np.random.default_rng(1).normal(size=(30, 3))
    np.save(tmp_path / "base.npy", base)
    lines = ok(tmp_path, PROGRAM, timeout=120).splitlines()
    # the batches as the issue defines them: call i's stream is SeedSequence(seed 0, spawn_key=(0, i))
    xs = [base[i * 6:(i + 1) * 6] + np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(0, spawn_key=(0, i)))).normal(0, 1, (6, 3)) for i in range(5)]
    x = np.concatenate(xs)
    want = x @ np.load(tmp_path / "w.npy") + np.load(tmp_path / "b.npy")
    for name in ("two", "none", "memory"):
        assert np.allclose(np.load(tmp_path / f"{name}.npy"), want, rtol=0, atol=1e-12), name
    assert np.array_equal(np.load(tmp_path / "two.npy"), np.load(tmp_path / "none.npy"))
    # two workers, dealt calls in turn (0, 2, 4 and 1, 3), each counting its own; none in the program
    assert _calls(lines, "two") == [(0, 1), (1, 1), (2, 2), (3, 2), (4, 3)], lines
    assert _calls(lines, "none") == [(i, i + 1) for i in range(5)], lines      # the program's thread
    # adapt: impute's pass then normalization's, both served by the same two workers (forked when
    # the program had made 5 calls of its own): 0, 2, 4 by one, 1, 3 by the other, twice
    first, second = [(0, 6), (2, 7), (4, 8), (1, 6), (3, 7)], [(0, 9), (2, 10), (4, 11), (1, 8), (3, 9)]
    assert _calls(lines, "adapt") == sorted(first + second), lines
    assert lines[-1] == "program 0 5", lines
    assert np.allclose(np.load(tmp_path / "mean.npy"), x.mean(axis=0), rtol=0, atol=1e-12)
    # more calls than are announced to the read-ahead at once (predict_source.WINDOW): all, in order
    many = base[np.arange(1030) % 30] @ np.load(tmp_path / "w.npy") + np.load(tmp_path / "b.npy")
    assert np.allclose(np.load(tmp_path / "many.npy"), many, rtol=0, atol=1e-12)
    assert np.allclose(np.load(tmp_path / "var.npy"), x.var(axis=0), rtol=0, atol=1e-12)


ERRORS = """use layers
use nn
fn batch(i):
    if i == 7:
        error("no such image")
    return [ones(4, 3)]
fn wider(i):
    return [ones(4, 3)] if i < 9 else [ones(4, 5)]
let net = dense(2)
let p = net.init(seed=0, input_shape=[3])
let pre = normalization()
let q = pre.init(input_shape=[3])
for w in [0, 2]:
    for run in [fn(ds) => predict(net, p, ds), fn(ds) => adapt(pre, q, ds)]:
        for f in [batch, wider]:
            try:
                run(dataset(12, f, workers=w))
                print("no error")
            catch e:
                print(e.message)
let r = predict(net, p, dataset(12, batch, workers=2))
"""


def test_an_error_in_a_call_names_its_batch_with_or_without_workers(tmp_path):
    r = apsi(tmp_path, ERRORS, timeout=120)
    assert r.returncode == 1 and 'File "/' not in r.stderr, r.stderr       # no Python traceback
    assert ("prog.apsi:21:9: error: predict: the dataset function failed at batch 7 (prog.apsi:5): no such "
            "image") in r.stderr, r.stderr
    fails = "the dataset function failed at batch 7 (prog.apsi:5): no such image"
    shape = ("the dataset function returned x of shape [4, 5] at batch 9, but batch 0's x has per-sample "
             "shape [3]; every batch needs the same shape after the first axis")
    want = [f"predict: {fails}", f"predict: {shape}", f"adapt: {fails}", f"adapt: {shape}"]
    assert r.stdout.splitlines() == want * 2, r.stdout
