"""No rank outlives `apsi launch`. torchrun starts each rank in a session of its own, so killing the
launcher's process group never reaches them, and a launcher killed outright (kill -9, the OOM killer, a
CI runner's timeout) left them running, training and writing checkpoints. The ranks are found as the
launcher's child processes (Linux's /proc); the program only loops (the ranks start without PyTorch,
so the test is quick; a rank stopped inside fit is tests/distributed/test_launch.py's Ctrl-C case)."""

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG")

ROOT = Path(__file__).resolve().parents[2]
LOOP = """use layers
print(f"rank {rank()} runs")
let i = 0
while true:
    i = i + 1
"""
HANG_GUARD = 30         # seconds: only a hang reaches this
START_GUARD = 180       # the launcher imports PyTorch, on a loaded machine


def _children(pid):
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _running(pid):
    """Alive and not a zombie (a dead process whose parent is gone waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path):
    """The launcher, once both ranks run the program; its ranks. stderr goes to a file, so a rank that
    outlived the launcher cannot hold the test's pipe open."""
    (tmp_path / "loop.apsi").write_text(LOOP)
    err = open(tmp_path / "stderr.txt", "w+")     # noqa: SIM115 (read back by the test)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "launch", "--nproc", "2", "--allow-python",
                             "loop.apsi"], cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=err, text=True)
    proc.err = err
    said = set()
    while len(said) < 2:
        assert select.select([proc.stdout], [], [], START_GUARD)[0], "the ranks never ran"
        line = proc.stdout.readline()
        assert line, (tmp_path / "stderr.txt").read_text()
        said.add(line)
    assert said == {"rank 0 runs\n", "rank 1 runs\n"}, said
    return proc, _children(proc.pid)


def _gone(ranks):
    deadline = time.monotonic() + HANG_GUARD
    while any(_running(r) for r in ranks) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_running(r) for r in ranks)


@pytest.mark.parametrize("name", ["SIGKILL", "SIGTERM"])
def test_no_rank_outlives_the_launcher(tmp_path, name):
    how = getattr(signal, name)
    proc, ranks = _start(tmp_path)
    try:
        assert len(ranks) == 2 and all(_running(r) for r in ranks), ranks
        os.kill(proc.pid, how)          # the launcher alone: the ranks are in sessions of their own
        code = proc.wait(timeout=HANG_GUARD)
        assert _gone(ranks), f"ranks {ranks} still run after the launcher got {name}"
        proc.err.seek(0)
        err = proc.err.read()
        if how == signal.SIGTERM:
            assert code == 143, err
            assert err.rstrip().endswith("apsi launch: stopped (SIGTERM); every rank was stopped"), err
        else:
            assert code == -signal.SIGKILL
        assert err.count("apsi: terminated (SIGTERM)") == 2, err     # each rank stopped cleanly
        assert "Traceback" not in err, err
    finally:
        proc.stdout.close()
        proc.err.close()
        for pid in [proc.pid, *ranks]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
