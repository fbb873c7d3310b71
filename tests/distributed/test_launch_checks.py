"""apsi launch refuses, at once and in one line, what would otherwise start processes for minutes: a
rendezvous host that cannot be found (each rank retried the lookup, printing PyTorch's C++ warnings
and stack frames), an endpoint that is not HOST:PORT, and a process count no machine could mean."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def launch(tmp_path, *args):
    (tmp_path / "t.apsi").write_text("print(1)\n")
    begun = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "apsi", "launch", *args, "--allow-python", "t.apsi"],
                         capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60)
    return out, time.monotonic() - begun


@pytest.mark.parametrize("args, words", [
    (["--nproc", "2", "--rdzv-endpoint", "nohost.invalid:29400"],
     "Invalid value for '--rdzv-endpoint': the host 'nohost.invalid' cannot be found ("),
    (["--nproc", "2", "--rdzv-endpoint", "10.0.0.1:99999"],
     "Invalid value for '--rdzv-endpoint': '10.0.0.1:99999' is not HOST:PORT (a port from 1 to 65535), "
     "like 10.0.0.1:29400"),
    (["--nproc", str(8 * (os.cpu_count() or 1) + 1)],
     f"Invalid value for '--nproc': {8 * (os.cpu_count() or 1) + 1} processes on this machine of "
     f"{os.cpu_count()} cores is more than 8 per core"),
])
def test_what_cannot_work_is_refused_before_any_process_starts(tmp_path, args, words):
    out, seconds = launch(tmp_path, *args)
    assert out.returncode == 2, out.stderr
    assert words in out.stderr, out.stderr
    assert "frame #" not in out.stderr and "Traceback" not in out.stderr
    assert seconds < 30 and out.stdout == ""
