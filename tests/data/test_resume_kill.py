"""fit(..., checkpoint=, checkpoint_every=STEPS) killed with SIGKILL in the middle of an epoch and
resumed in a new process ends bit for bit where one uninterrupted run ends (issue 32): NumPy and
torch, from mapped .npy shards and from a dataset with its own random streams, and with 2 ranks."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

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


def _kill_tree(pid):
    """SIGKILL `pid` and every process under it, as a machine that goes away does: `apsi launch` starts
    its ranks in sessions of their own, so killing the launcher's group alone left them training."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    deadline = time.time() + 60                 # gone (or a zombie) before the resumed run starts
    while any(_state(p) not in (None, "Z") for p in tree):
        assert time.time() < deadline, "a killed rank is still running"
        time.sleep(0.005)


def _state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _kill_mid_epoch(tmp_path, cmd, tries=5):
    """Run `cmd` and SIGKILL it once a mid-epoch checkpoint of epoch 2 or 3 is on disk; the position
    that checkpoint holds. On a loaded machine the run can end between two looks (or after epoch 3's
    last checkpoint, before the kill): such a run was not cut, proves nothing, and is started again
    (the test never passes on a run that was not cut)."""
    for _ in range(tries):
        cut = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                               start_new_session=True)
        deadline = time.time() + 600
        while _within(tmp_path / "run.ckpt") is None and cut.poll() is None:
            assert time.time() < deadline
            time.sleep(0.005)
        if cut.poll() is None:
            _kill_tree(cut.pid)
        out, err = cut.communicate(timeout=60)
        if not (tmp_path / "final.npz").exists():
            assert cut.returncode == -signal.SIGKILL, err.decode()
            return _within(tmp_path / "run.ckpt")
        # rank 0 saved the result before the kill: the run was not cut, start it again
        assert cut.returncode in (0, -signal.SIGKILL), err.decode()
        os.unlink(tmp_path / "run.ckpt")
        os.unlink(tmp_path / "final.npz")
    raise AssertionError(f"the run ended before a mid-epoch checkpoint of epoch 2 was seen, {tries} times")


def _run_killed_then_resumed(tmp_path, flags, launch):
    cmd = _command(flags, launch)
    # the uninterrupted run, in a copy of the folder, beside the run that is cut (suite time: each
    # process is one thread on a machine of two cores; a slower cut only makes a mid-epoch kill likelier)
    (tmp_path / "whole").mkdir()
    for name in ("x0.npy", "x1.npy", "y.npy", "train.apsi"):
        shutil.copy(tmp_path / name, tmp_path / "whole")
    one = subprocess.Popen(cmd, cwd=tmp_path / "whole", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=ENV)

    at = _kill_mid_epoch(tmp_path, cmd)

    whole, err = one.communicate(timeout=600)
    assert one.returncode == 0, err

    again = subprocess.run(_command(flags, launch, "resume"), cwd=tmp_path, capture_output=True, text=True,
                           env=ENV, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout == whole, (at, again.stdout, whole)
    a, b = np.load(tmp_path / "whole" / "final.npz"), np.load(tmp_path / "final.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert np.array_equal(a[k], b[k]), (k, at)


@pytest.fixture
def folder(tmp_path):
    r = np.random.default_rng(0)
    x = r.normal(size=(4000, 8)).astype(np.float32)       # 250 steps an epoch, 35 checkpoints in 2 and 3
    np.save(tmp_path / "x0.npy", x[:1750])                   # a batch straddles the two shards
    np.save(tmp_path / "x1.npy", x[1750:])
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
