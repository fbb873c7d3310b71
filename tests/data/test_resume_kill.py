"""fit(..., checkpoint=, checkpoint_every=STEPS) killed with SIGKILL in the middle of an epoch and
resumed in a new process ends bit for bit where one uninterrupted run ends (issue 32): NumPy and
torch, from mapped .npy shards and from a dataset with its own random streams, and with 2 ranks."""

import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

pytestmark = pytest.mark.slow

PROGRAM = """use layers
use nn
let x = load_npy(["x0.npy", "x1.npy"])
let y = load_npy("y.npy")
fn noisy(i, g):
    let rows = x[i * 16:(i + 1) * 16]
    return [rows + 0.01 * normal(0, 1, rows.shape, seed=g), y[i * 16:(i + 1) * 16]]
let inputs = dataset(len(x) // 16, noisy) if SOURCE == "dataset" else x
let targets = none if SOURCE == "dataset" else y
let net = mlp(8, 1, hidden=[64], dropout=0.2)
let resume = "run.ckpt" if len(args) > 0 else none
let r = fit(net, net.init(seed=0), inputs, targets, loss="mse", epochs=3, seed=3,
            batch_size=none if SOURCE == "dataset" else BATCH,
            checkpoint="run.ckpt", checkpoint_every=7, resume=resume, verbose=false, BACKEND)
if rank() == 0:
    print(r.history)
    save_params("final.npz", r.params)
"""

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
for _name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
    ENV.pop(_name, None)


def _command(flags, launch, *args):
    if launch:
        return [sys.executable, "-m", "apsi", "launch", "--nproc", "2", *flags, "train.apsi", *args]
    return [sys.executable, "-m", "apsi", *flags, "train.apsi", *args]


def _within(path):
    """The mid-epoch position a checkpoint holds, or None (none yet, or an epoch's end)."""
    try:
        with zipfile.ZipFile(path) as z, z.open("meta.npy") as f:
            meta = json.loads(bytes(np.load(f)).decode())
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    w = meta.get("within")
    return (w["epoch"], w["steps"]) if w and w["epoch"] >= 2 else None


def _run_killed_then_resumed(tmp_path, flags, launch):
    cmd = _command(flags, launch)
    whole = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=600)
    assert whole.returncode == 0, whole.stderr
    os.rename(tmp_path / "final.npz", tmp_path / "whole.npz")
    os.unlink(tmp_path / "run.ckpt")

    cut = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                           start_new_session=True)
    deadline = time.time() + 600
    while _within(tmp_path / "run.ckpt") is None:
        assert cut.poll() is None, "the run ended before a mid-epoch checkpoint of epoch 2 was seen"
        assert time.time() < deadline
        time.sleep(0.005)
    os.killpg(cut.pid, signal.SIGKILL)
    cut.wait(timeout=60)
    assert cut.returncode == -signal.SIGKILL
    assert not (tmp_path / "final.npz").exists()
    at = _within(tmp_path / "run.ckpt")

    again = subprocess.run(_command(flags, launch, "resume"), cwd=tmp_path, capture_output=True, text=True,
                           env=ENV, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout == whole.stdout, (at, again.stdout, whole.stdout)
    a, b = np.load(tmp_path / "whole.npz"), np.load(tmp_path / "final.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert np.array_equal(a[k], b[k]), (k, at)


@pytest.fixture
def folder(tmp_path):
    r = np.random.default_rng(0)
    x = r.normal(size=(16000, 8)).astype(np.float32)
    np.save(tmp_path / "x0.npy", x[:7000])
    np.save(tmp_path / "x1.npy", x[7000:])
    np.save(tmp_path / "y.npy", np.sin(x[:, :1] * 2) + x[:, 1:2])
    return tmp_path


def _program(folder, source, backend, batch=16):
    text = PROGRAM.replace("SOURCE", f'"{source}"').replace("BACKEND", backend).replace("BATCH", str(batch))
    (folder / "train.apsi").write_text(text)


@pytest.mark.parametrize("source", ["mapped", "dataset"])
def test_numpy_sigkill_mid_epoch_then_resume_is_one_run(folder, source):
    _program(folder, source, 'backend="numpy"')
    _run_killed_then_resumed(folder, [], launch=False)


@pytest.mark.torch
@pytest.mark.parametrize("source", ["mapped", "dataset"])
def test_torch_sigkill_mid_epoch_then_resume_is_one_run(folder, source):
    pytest.importorskip("torch")
    _program(folder, source, 'backend="torch"')          # fp32: the same machine gives the same bits
    _run_killed_then_resumed(folder, ["--allow-python"], launch=False)


@pytest.mark.torch
def test_two_ranks_sigkill_mid_epoch_then_resume_is_one_run(folder):
    pytest.importorskip("torch")
    _program(folder, "mapped", 'backend="torch", distributed=true', batch=8)
    _run_killed_then_resumed(folder, ["--allow-python"], launch=True)
