"""No rank outlives `apsi launch`. torchrun starts each rank in a session of its own, so killing the
launcher's process group never reaches them, and a launcher killed outright (kill -9, the OOM killer, a
CI runner's timeout) left them running, training and writing checkpoints. The ranks are found as the
launcher's child processes (Linux's /proc); the program only loops (the ranks start without PyTorch,
so the test is quick; a rank stopped inside fit is tests/distributed/test_launch.py's Ctrl-C case)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from proc_tree import children as _children
from proc_tree import running as _running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG")

ROOT = Path(__file__).resolve().parents[2]
LOOP = """use layers
print(f"rank {rank()} runs")
let i = 0
while true:
    i = i + 1
"""
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
for _name in ("APSI_LAUNCHER_PID", "TORCHELASTIC_RUN_ID"):     # (were the suite itself launched)
    ENV.pop(_name, None)
HANG_GUARD = 30         # seconds: only a hang reaches this
START_GUARD = 180       # the launcher imports PyTorch, on a loaded machine


LAUNCHERS = {
    "apsi launch": ["-m", "apsi", "launch", "--nproc", "2"],
    "torchrun": ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "apsi", "run"],
}


def _start(tmp_path, launcher):
    """The launcher; its output goes to files, so a rank that outlived it cannot hold a pipe of the
    test's open."""
    (tmp_path / "loop.apsi").write_text(LOOP)
    command = [sys.executable, *LAUNCHERS[launcher], "--allow-python", "loop.apsi"]
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        return subprocess.Popen(command, cwd=tmp_path, env=ENV, stdout=out, stderr=err,
                                start_new_session=True)


def _ranks(proc, tmp_path):
    """The launcher's ranks, once both run the program."""
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    deadline = time.monotonic() + START_GUARD
    while sorted(out.read_text().splitlines()) != ["rank 0 runs", "rank 1 runs"]:
        assert proc.poll() is None and time.monotonic() < deadline, out.read_text() + err.read_text()
        time.sleep(0.05)
    return _children(proc.pid)


def _gone(ranks):
    deadline = time.monotonic() + HANG_GUARD
    while any(_running(r) for r in ranks) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_running(r) for r in ranks)


@pytest.mark.torch
@pytest.mark.parametrize("launcher, name", [("apsi launch", "SIGKILL"), ("apsi launch", "SIGTERM"),
                                            ("torchrun", "SIGKILL")])
def test_no_rank_outlives_the_launcher(tmp_path, launcher, name):
    how = getattr(signal, name)
    proc, ranks = _start(tmp_path, launcher), []
    try:
        ranks = _ranks(proc, tmp_path)
        assert len(ranks) == 2 and all(_running(r) for r in ranks), ranks
        os.kill(proc.pid, how)          # the launcher alone: the ranks are in sessions of their own
        code = proc.wait(timeout=HANG_GUARD)
        assert _gone(ranks), f"ranks {ranks} still run after the launcher got {name}"
        err = (tmp_path / "stderr.txt").read_text()
        if how == signal.SIGTERM:
            assert code == 143, err
            assert err.rstrip().endswith("apsi launch: stopped (SIGTERM); every rank was stopped"), err
        else:
            assert code == -signal.SIGKILL
        assert err.count("apsi: terminated (SIGTERM)") == 2, err     # each rank stopped cleanly
        assert "Traceback" not in err, err
    finally:
        left = _children(proc.pid) if proc.poll() is None else []    # (whatever failed)
        for pid in [*left, *ranks, proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _rank_told_its_launcher_is(pid):
    """`python -m apsi` as `apsi launch` starts a rank, told its launcher's pid; what it printed."""
    command = [sys.executable, "-m", "apsi", "--allow-env", "-e", 'print(getenv("APSI_LAUNCHER_PID"))']
    out = subprocess.run(command, capture_output=True, text=True, env={**ENV, "APSI_LAUNCHER_PID": str(pid)},
                         timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout


def test_a_rank_whose_launcher_is_already_gone_leaves_at_once():
    """The launcher may die before the rank asks to die with it: the rank then has another parent."""
    assert _rank_told_its_launcher_is(os.getppid()) == ""       # (its parent is this process)


def test_the_launchers_pid_is_not_passed_on_to_what_a_rank_starts():
    """A process the rank starts has the rank for parent: told the launcher's pid, it would leave."""
    assert _rank_told_its_launcher_is(os.getpid()) == "none\n"
