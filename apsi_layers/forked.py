"""What every process forked from an Apsi program does: die with its parent, and never go on running
the program (web's server workers, dataset's batch workers)."""

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with(parent, ctypes, sig=signal.SIGTERM):
    """`sig` when the parent's forking thread ends (Linux), and leave now if the parent is gone."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(ctypes.c_ulong(PR_SET_PDEATHSIG), ctypes.c_ulong(sig),
                                                    ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(0)


def flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:       # noqa: BLE001, S110 (a closed pipe: nothing more to say)
            pass


def leave(code):
    """End a forked child: what it printed is written, nothing of the parent's runs (no atexit)."""
    flush()
    os._exit(code)


def stop(conns, pids, owner):
    """Close the pipes to forked children and kill them (SIGKILL, reaped): what a program does when
    it is done with its workers or reader. Only in the process that forked them (`owner`): a forked
    copy of the program holds copies of its parent's objects, whose finalizers must not stop them."""
    if os.getpid() != owner:
        return
    for c in conns:
        c.close()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
