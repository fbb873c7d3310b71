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


class Deadline:
    """One time budget shared by every probe, so detection as a whole never exceeds one timeout."""

    def __init__(self, seconds):
        import time

        self.seconds = seconds
        self._clock = time.monotonic
        self._end = self._clock() + seconds

    def remaining(self):
        return max(0.0, self._end - self._clock())

    @property
    def spent(self):
        return self.remaining() <= 0.01


def run(cmd, timeout):
    """Run `cmd` (a list), return its output; a hung program is killed with its children (what it
    printed before it hung is kept in `out`)."""
    if timeout <= 0.01:
        return Result(None, timed_out=True)
    posix = os.name == "posix"
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=posix)
    except (FileNotFoundError, PermissionError, OSError):
        return Result(None, missing=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        partial = _kill(proc, posix)
        return Result(None, partial.decode("utf-8", "replace"), timed_out=True)
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
        out, _ = proc.communicate(timeout=2)
        return out or b""
    except (subprocess.TimeoutExpired, OSError, ValueError):
        return b""


def excerpt(text, limit=160):
    """One line of a program's output fit to quote to a user, or None when it is not plain text
    (binary bytes, control characters, or nothing): such output is described, never printed."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[-1] if len(lines) == 1 else next((ln for ln in lines if _readable(ln)), None)
    if line is None or not _readable(line):
        return None
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _readable(line):
    if "\ufffd" in line:
        return False
    return all(ch.isprintable() for ch in line) and sum(ch.isalpha() for ch in line) >= 3
