"""Run an Apsi program as users do (a subprocess of `apsi`), in a project folder."""

import subprocess
import sys


def apsi(cwd, program, *flags, timeout=180):
    (cwd / "prog.apsi").write_text(program)
    return subprocess.run([sys.executable, "-m", "apsi", *flags, "prog.apsi"], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def ok(cwd, program, *flags, timeout=180):
    r = apsi(cwd, program, *flags, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def error(cwd, program, *flags, timeout=180):
    """The one-line message of a program that must fail cleanly (no Python traceback)."""
    r = apsi(cwd, program, *flags, timeout=timeout)
    assert r.returncode != 0, r.stdout
    # (Apsi's own report of where an error happened names Apsi lines, never a Python file)
    assert 'File "/' not in r.stderr and ".py\"" not in r.stderr, r.stderr
    return r.stderr
