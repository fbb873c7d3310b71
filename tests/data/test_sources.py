"""fit and predict from mapped .npy files and dataset(count, fn) (issue 32), against in-memory fits
and NumPy references."""

import json

import numpy as np
import pytest

from .run import error, ok

FIT = """use layers
use nn
let x = load_npy(["x0.npy", "x1.npy"])
let y = load_npy("y.npy")
let xm = load_npy(["x0.npy", "x1.npy"], mmap=false)
let ym = load_npy("y.npy", mmap=false)
let net = mlp(4, 1, hidden=[16], dropout=0.1)
let p = net.init(seed=0)
let a = fit(net, p, x, y, loss="mse", epochs=3, batch_size=64, seed=1, val=[x[0:100], y[0:100]], BACKEND)
let b = fit(net, p, xm, ym, loss="mse", epochs=3, batch_size=64, seed=1, val=[xm[0:100], ym[0:100]],
            BACKEND)
print(a.history == b.history, a.val_history == b.val_history)
print(array_equal(predict(net, a.params, x), predict(net, b.params, xm)))
print(array_equal(flatten(a.params)[0][1], flatten(b.params)[0][1]))
"""


@pytest.fixture
def files(tmp_path):
    r = np.random.default_rng(0)
    x = r.normal(size=(1000, 4)).astype(np.float32)
    np.save(tmp_path / "x0.npy", x[:333])
    np.save(tmp_path / "x1.npy", x[333:])
    np.save(tmp_path / "y.npy", (x @ np.array([1, -2, 0.5, 3], np.float32))[:, None])
    return x


def test_fit_over_mapped_shards_is_the_in_memory_fit_bit_for_bit(tmp_path, files):
    assert ok(tmp_path, FIT.replace("BACKEND", 'backend="numpy"')).split() == ["true"] * 4


@pytest.mark.torch
def test_fit_over_mapped_shards_on_torch_per_batch_copies(tmp_path, files):
    pytest.importorskip("torch")
    out = ok(tmp_path, FIT.replace("BACKEND", 'backend="torch", precision="fp64"'), "--allow-python")
    assert out.split() == ["true"] * 4


DATASET = """use layers
use nn
let calls = []
let draws = []
let xs = randn(200, 3, seed=0)
fn batch(i, g):
    calls.append(i)
    draws.append([i, normal(0, 1, [1], seed=g).item()])
    return [xs[i * 20:(i + 1) * 20], xs[i * 20:(i + 1) * 20, 0:1] * 2.0]
let ds = dataset(10, batch, workers=0)       # (calls in this process: the lists show them)
let net = mlp(3, 1, hidden=[8])
let r = fit(net, net.init(seed=0), ds, loss="mse", epochs=2, seed=5)
print(calls)
print(draws)
let all = predict(net, r.params, ds)
print(array_equal(all, predict(net, r.params, xs)), all.shape)
"""


def test_dataset_order_shuffled_per_epoch_from_seed_and_own_random_streams(tmp_path):
    lines = ok(tmp_path, DATASET).splitlines()
    calls, draws = json.loads(lines[0]), json.loads(lines[1])
    a, _ = np.random.SeedSequence(5).generate_state(2)
    shuffle = np.random.default_rng(int(a))
    epochs = [shuffle.permutation(10).tolist() for _ in range(2)]
    # call 0 once when fit checks shapes, then each epoch's calls in its shuffled order, each once
    assert calls[:21] == [0] + epochs[0] + epochs[1]
    for (i, v), epoch in zip(draws[1:21], [1] * 10 + [2] * 10, strict=True):
        seq = np.random.SeedSequence(5, spawn_key=(epoch, i))
        ref = np.random.Generator(np.random.PCG64(seq)).normal()
        assert v == ref
    assert lines[2] == "true (200, 1)"


WORKERS = """use layers
use nn
let xs = randn(400, 3, seed=0)
fn batch(i, g):
    let x = xs[i * 20:(i + 1) * 20]
    return [x + normal(0, 1, x.shape, seed=g), x[:, 0:1] * 2.0 + uniform(0, 1, [20, 1], seed=g)]
let net = mlp(3, 1, hidden=[8], dropout=0.2)
for w in [0, 1, 3]:
    let r = fit(net, net.init(seed=0), dataset(20, batch, workers=w), loss="mse", epochs=3, seed=5)
    print(r.history, flatten(r.params)[0][1].sum().item())
"""


def test_worker_processes_make_the_batches_of_the_programs_own_calls(tmp_path):
    """The calls' random streams come from (seed, epoch, i), not from the process that makes them:
    0 workers (this process), 1 and 3 train bit for bit alike."""
    lines = ok(tmp_path, WORKERS).splitlines()
    assert len(lines) == 3 and lines[0] == lines[1] == lines[2], lines
    hist = json.loads(lines[0].rsplit(" ", 1)[0])
    assert len(hist) == 3 and hist[2] < hist[0]


@pytest.mark.parametrize("body, said", [
    ("if i == 37:\n        return [zeros(20, 4), zeros(20, 1)]",
     "fit: the dataset function returned x of shape [20, 4] at batch 37 (epoch 1), but batch 0's x has "
     "per-sample shape [3]"),
    ("if i == 37:\n        let z = 1 / 0",
     "fit: the dataset function failed at batch 37 (epoch 1) (prog.apsi:5): division by zero"),
    ("if i == 37:\n        error(\"no such image\")",
     "fit: the dataset function failed at batch 37 (epoch 1) (prog.apsi:5): no such image"),
    ("if i == 37:\n        return [zeros(20, 3)]",
     "fit: the dataset function returned only x at batch 37 (epoch 1); fit needs [x, y]"),
    ("if i == 37:\n        return [zeros(20, 3), zeros(19, 1)]",
     "fit: batch 37 (epoch 1) has 20 inputs but 19 targets"),
])
@pytest.mark.parametrize("workers", [0, 2])
def test_a_bad_batch_37_is_named_without_traceback_or_hang(tmp_path, body, said, workers):
    msg = error(tmp_path, f"""use layers
use nn
fn batch(i):
    {body}
    return [ones(20, 3), ones(20, 1)]
let net = mlp(3, 1)
let r = fit(net, net.init(seed=0), dataset(50, batch, workers={workers}), loss="mse", epochs=2)
""", timeout=60)
    assert said in msg, msg
    assert "prog.apsi:8:" in msg        # and where the program called fit


def test_a_worker_has_the_programs_permissions_and_no_more(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-hidden.txt"
    outside.write_text("s3cr3t-content")
    project = tmp_path / "p"
    project.mkdir()
    msg = error(project, f"""use layers
use nn
fn batch(i):
    if i == 3:
        print(read_text({str(outside)!r}))
    return [ones(20, 3), ones(20, 1)]
let net = mlp(3, 1)
let r = fit(net, net.init(seed=0), dataset(5, batch, workers=2), loss="mse", epochs=2)
""", timeout=60)
    assert "the dataset function failed at batch 3 (epoch 1) (prog.apsi:5)" in msg, msg
    assert "s3cr3t" not in msg
    assert "read" in msg and "permission" in msg.lower(), msg


def test_dataset_workers_must_be_a_count(tmp_path):
    msg = error(tmp_path, "use nn\nlet ds = dataset(5, fn(i) => [ones(4, 3), ones(4, 1)], workers=-1)\n")
    assert "dataset: workers must be an int from 0 to 64" in msg, msg


def test_dataset_options_that_need_all_samples_are_refused(tmp_path):
    msg = error(tmp_path, """use layers
use nn
let net = mlp(3, 1)
let ds = dataset(5, fn(i) => [ones(4, 3), ones(4, 1)])
let r = fit(net, net.init(seed=0), ds, loss="mse", batch_size=8)
""")
    assert "fit: batch_size= is not used with a dataset" in msg


def test_mid_epoch_checkpoints_need_a_file(tmp_path):
    msg = error(tmp_path, """use layers
use nn
let net = mlp(3, 1)
let r = fit(net, net.init(seed=0), ones(8, 3), ones(8, 1), loss="mse", checkpoint_every=2)
""")
    assert "checkpoint_every= needs checkpoint=" in msg


def test_windows_are_views_of_the_series(project_with_python):
    from apsi_layers.data.windows import windows
    from apsi_layers.nn import array

    s = np.arange(40.0).reshape(20, 2)
    x, y = windows(array(s), 4, horizon=2, stride=3)
    k = (20 - 6) // 3 + 1
    assert x.shape == (k, 4, 2) and y.shape == (k, 2, 2)
    for j in range(k):
        assert np.array_equal(x.data[j], s[3 * j:3 * j + 4])
        assert np.array_equal(y.data[j], s[3 * j + 4:3 * j + 6])
    series = array(s)
    x, _ = windows(series, 4)
    assert np.shares_memory(x.data, series.data)


def test_windows_from_apsi(tmp_path):
    out = ok(tmp_path, "use nn\nlet w = windows(arange(10), 3, horizon=1)\n"
                       "print(w[0].shape, w[1][6].tolist())\n")
    assert out.strip() == "(7, 3) [9]"
