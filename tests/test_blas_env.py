"""`apsi` sets OpenBLAS's idle-thread spin (OPENBLAS_THREAD_TIMEOUT) before NumPy loads OpenBLAS, and a
value the user set wins."""

import subprocess
import sys

PROBE = """
import os, sys
sys.argv = ["apsi", "-e", "use nn\\nprint(sum(ones([2])))"]
from apsi_cli.main import main
try:
    main()
except SystemExit:
    pass
assert "numpy" in sys.modules                  # the program loaded NumPy, after the setting
print(os.environ["OPENBLAS_THREAD_TIMEOUT"])
"""


def _run(env_value):
    env = {"PATH": "/usr/bin:/bin"}
    if env_value is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_apsi_sets_the_blas_spin_before_numpy_loads():
    assert _run(None) == ["2.0", "20"]


def test_a_value_the_user_set_wins():
    assert _run("28") == ["2.0", "28"]
