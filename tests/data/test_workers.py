"""dataset(..., workers=N): no worker outlives the program, whether it is stopped with Ctrl-C or killed
outright (kill -9). The workers are found as the program's child processes (Linux's /proc)."""

import os
import select
import signal
import subprocess
import sys
import time

import pytest
from proc_tree import children as _children
from proc_tree import running as _running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux")

PROGRAM = """use layers
use nn
fn batch(i):
    if i == 0:
        print("serving")        # (from a worker: the test stops the program once the workers serve)
    let s = 0
    for k in range(20000):
        s = s + k
    return [ones(20, 3), ones(20, 1)]
let net = mlp(3, 1)
let r = fit(net, net.init(seed=0), dataset(50, batch, workers=2), loss="mse", epochs=100000, verbose=false)
"""
# predict reads a dataset through the same workers (apsi_layers/data/predict_source.py)
PREDICT = (PROGRAM.split("let r =")[0]
           + "let y = predict(net, net.init(seed=0), dataset(10000000, batch, workers=2))\n")
HANG_GUARD = 30         # seconds: only a hang reaches this


def _start(tmp_path, program=PROGRAM):
    """The program, once its workers serve (a worker printed); stderr goes to a file, so a worker that
    outlived the program cannot hold the test's pipe open (_gone names it instead)."""
    (tmp_path / "prog.apsi").write_text(program)
    err = open(tmp_path / "stderr.txt", "w+")     # noqa: SIM115 (read back by _stopped)
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "prog.apsi"], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=err, text=True)
    proc.err = err
    assert select.select([proc.stdout], [], [], HANG_GUARD)[0], "the workers never served"
    assert proc.stdout.readline() == "serving\n", (tmp_path / "stderr.txt").read_text()
    deadline = time.monotonic() + HANG_GUARD
    while len(workers := _children(proc.pid)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr.txt").read_text()
        time.sleep(0.05)
    return proc, workers


def _stopped(proc):
    proc.wait(timeout=HANG_GUARD)   # (stdout stays open until then: a worker prints at every batch 0)
    proc.stdout.close()
    proc.err.seek(0)
    return proc.err.read()


def _kill(*pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _gone(workers):
    deadline = time.monotonic() + HANG_GUARD
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_running(w) for w in workers)


@pytest.mark.parametrize("how, program", [("ctrl-c", PROGRAM), ("kill -9", PROGRAM), ("ctrl-c", PREDICT)],
                         ids=["fit, ctrl-c", "fit, kill -9", "predict, ctrl-c"])
def test_no_worker_outlives_the_program(tmp_path, how, program):
    proc, workers = _start(tmp_path, program)
    try:
        if how == "ctrl-c":     # the terminal sends it to the whole process group, workers included
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        err = _stopped(proc)
        assert _gone(workers), f"workers {workers} still run after {how}"
        if how == "ctrl-c":
            assert proc.returncode == 130, err
            assert 'File "/' not in err, err       # no Python traceback
    finally:
        _kill(proc.pid, *workers)


def test_a_worker_killed_is_named_at_the_batch_it_owed(tmp_path):
    proc, workers = _start(tmp_path)
    try:
        os.kill(workers[0], signal.SIGKILL)
        err = _stopped(proc)
        assert proc.returncode == 1, err
        said = f"the dataset's worker process {workers[0]} ended (killed by signal 9) before batch"
        assert said in err and 'File "/' not in err, err
    finally:
        _kill(proc.pid, *workers)
