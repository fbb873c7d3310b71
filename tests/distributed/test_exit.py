"""A rank that ends after joining a group leaves through distributed.exit_now, which runs the exit
functions itself. torchrun sends SIGTERM to the ranks still running when one fails: arriving during
those exit functions, it raised Terminated inside one of them and printed a Python traceback."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

RANK = textwrap.dedent("""
    import atexit, os, signal, time
    import torch.distributed as dist
    from apsi_lang import signals
    from apsi_layers import distributed

    signals.install()                   # as `apsi run` does: SIGTERM raises Terminated
    dist.init_process_group("gloo", rank=0, world_size=1, init_method="tcp://127.0.0.1:0")

    def the_launcher_stops_us():        # runs among the exit functions, as torch's own do
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)                 # the handler runs here
        print("after the signal", flush=True)

    atexit.register(the_launcher_stops_us)
    distributed.exit_now(1)
""")


def test_a_sigterm_during_the_exit_functions_prints_no_traceback():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", RANK], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr and "Terminated" not in out.stderr, out.stderr
    assert out.stdout == "after the signal\n"
