"""tests/child_processes.py: a test that times out does not leave its `apsi` child's children running."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


def processes_running(marker):
    """Pids of live processes whose command line contains `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(int(pid))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_timed_out_apsi_child_and_what_it_started_are_killed(tmp_path):
    marker = f"{time.time() % 1000 + 300:.6f}"          # `sleep 3xx.xxxxxx`: found by its command line
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from child_processes import children_end_with_the_test  # noqa: F401
    """))
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(f"""
        import subprocess, sys, time

        def test_times_out():
            # apsi waits on `sleep`; the timeout kills apsi, not sleep
            subprocess.run([sys.executable, "-m", "apsi", "--allow-run", "-e",
                            'run_command(["sleep", "{marker}"])'], cwd={str(tmp_path)!r}, timeout=3)
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inner.py"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert "TimeoutExpired" in p.stdout and "1 failed" in p.stdout, p.stdout + p.stderr
        assert processes_running(f"sleep {marker}") == []
    finally:
        for pid in processes_running(f"sleep {marker}"):
            os.kill(pid, 9)
