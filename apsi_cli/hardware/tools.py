"""Run a small probe program with a timeout, never raising."""

import os
import signal
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    returncode: int | None        # None: it did not run or did not finish
    out: str = ""
    timed_out: bool = False
    missing: bool = False         # the program is not there (or cannot be started)


def run(cmd, timeout):
    """Run `cmd` (a list), return its output; a hung program is killed with its children."""
    posix = os.name == "posix"
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=posix)
    except (FileNotFoundError, PermissionError, OSError):
        return Result(None, missing=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc, posix)
        return Result(None, timed_out=True)
    return Result(proc.returncode, out.decode("utf-8", "replace"))


def _kill(proc, posix):
    try:
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=2)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass
