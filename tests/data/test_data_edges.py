"""Edges of the data sources met by using them as a new user would (issue 32's attack pass)."""

import numpy as np

from .run import error


def test_a_file_of_rows_with_no_numbers_is_refused(tmp_path):
    # fit and predict skipped the check for mapped inputs: a dense layer built for 0 features
    # failed with Python's "division by zero"; such a file is now refused when it is loaded (a header
    # may promise 2**62 rows of no bytes), and rows of no numbers in memory are refused by fit
    np.save(tmp_path / "x.npy", np.zeros((10, 0), np.float32))
    loaded = "load_npy: 'x.npy' has rows that hold no numbers (shape [10, 0])"
    in_memory = ("inputs holds samples of per-sample shape [0], with no numbers; the model takes "
                 "per-sample shape [1]")
    for load, said in (('load_npy("x.npy")', loaded), ('load_npy("x.npy", mmap=false)', loaded),
                       ("zeros(10, 0)", in_memory)):
        for call in ('fit(net, net.init(seed=0), x, zeros(10, 1), loss="mse", epochs=1)',
                     "predict(net, net.init(seed=0), x)"):
            msg = error(tmp_path, f"use nn\nuse layers\nlet x = {load}\nlet net = mlp(1, 1)\n{call}\n")
            assert said in msg and "division" not in msg, msg


def test_validation_split_of_mapped_files_smaller_than_a_batch(tmp_path):
    # the validation rows fit in one batch: the NumPy loop handed the mapped column itself to the
    # model ("fit: a Column has no field or method 'reshape'")
    from .run import ok

    r = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", r.normal(size=(200, 4)).astype(np.float32))
    np.save(tmp_path / "y.npy", r.normal(size=(200, 1)).astype(np.float32))
    out = ok(tmp_path, """use nn
use layers
let net = mlp(4, 1, hidden=[8])
fn run(x, y):
    let r = fit(net, net.init(seed=0), x, y, loss="mse", epochs=2, batch_size=100, validation_split=0.1)
    return [r.history, r.val_history]
let mapped = run(load_npy("x.npy"), load_npy("y.npy"))
let memory = run(load_npy("x.npy", mmap=false), load_npy("y.npy", mmap=false))
print(mapped == memory, len(mapped[1]))
""")
    assert out.split() == ["true", "2"]


def test_a_bad_batch_says_what_the_checkpoint_holds_and_the_resume_ends_as_one_run(tmp_path):
    from .run import ok

    program = """use nn
use layers
fn batch(i):
    if i == 37 and exists("armed.txt"):
        error("no such image")
    return [ones(4, 3) * i / 50, ones(4, 1)]
let net = mlp(3, 1, hidden=[4])
fn run(opts):
    return fit(net, net.init(seed=0), dataset(50, batch, workers=0), loss="mse", epochs=2, seed=1,
               **({"checkpoint": "run.ckpt", "checkpoint_every": 5} | opts))
if exists("armed.txt"):
    run({:})
let resumed = run({"resume": "run.ckpt"})
let once = run({"checkpoint": "once.ckpt"})
print(resumed.history == once.history, array_equal(resumed.params.dense.w, once.params.dense.w))
"""
    (tmp_path / "armed.txt").write_text("")
    msg = error(tmp_path, program)
    assert "fit: the dataset function failed at batch 37 (epoch 1) (prog.apsi:5): no such image; run.ckpt " \
           "holds the run after 15 steps of epoch 1; continue with fit(…, resume=\"run.ckpt\") once that " \
           "is fixed" in msg, msg
    (tmp_path / "armed.txt").unlink()
    assert ok(tmp_path, program).split() == ["true", "true"]


def test_out_of_memory_on_a_dataset_gives_advice_for_a_dataset(tmp_path):
    # "lower batch_size (e.g. batch_size=1)" was the advice: a dataset's calls are its batches
    import resource
    import subprocess
    import sys

    (tmp_path / "prog.apsi").write_text("""use nn
use layers
fn b(i):
    return [ones(2, 3), ones(2, 1)]
let net = mlp(3, 1)
fit(net, net.init(seed=0), dataset(10**10, b, workers=0), loss="mse", epochs=1)
""")
    cap = 6 << 30          # address space: the epoch's order of 10**10 calls (80 GB) cannot fit

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    r = subprocess.run([sys.executable, "-m", "apsi", "prog.apsi"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, preexec_fn=limit)
    assert r.returncode == 1, r.stderr
    assert "fit: ran out of memory in main memory on a dataset of 10000000000 batches; return smaller " \
           "batches from its function, make fewer of them" in r.stderr, r.stderr
