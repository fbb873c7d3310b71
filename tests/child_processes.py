"""Processes a test starts end with the test, whatever ended it (issue 28: one test's `apsi` child
kept a core busy for 40 minutes after the test had timed out).

`subprocess.run(..., timeout=…)` kills only the child it started, not what that child started
(run_command's programs, `apsi launch`'s ranks, a server's workers), and a test that fails while
waiting on a `Popen` leaves its child running. So while a test runs, every child it starts gets a
process group of its own (unless the test arranges its own: a new session or a pre-exec function),
and when the test ends each such group is killed, grandchildren included; what is left at exit (an
interrupted run) is killed then. Fixtures of a wider scope (a module's server) start before this
one and are left to their own teardown.
"""

import atexit
import os
import signal
import subprocess

import pytest

_groups = set()        # process groups started by the running test and not yet killed
_popen_init = subprocess.Popen.__init__
_OWN_GROUP = ("start_new_session", "process_group", "preexec_fn")


def _init_in_own_group(self, *args, **kwargs):
    if not any(kwargs.get(k) for k in _OWN_GROUP):
        kwargs["process_group"] = 0
    _popen_init(self, *args, **kwargs)
    try:
        group = os.getpgid(self.pid)
    except ProcessLookupError:
        return
    if group != os.getpgrp():           # never pytest's own group
        _groups.add(group)


def kill_groups():
    """Kill every process group recorded (SIGKILL: a test that timed out gets no say)."""
    while _groups:
        try:
            os.killpg(_groups.pop(), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture(autouse=True)
def children_end_with_the_test():
    if os.name != "posix":
        yield
        return
    subprocess.Popen.__init__ = _init_in_own_group
    try:
        yield
    finally:
        subprocess.Popen.__init__ = _popen_init
        kill_groups()


atexit.register(kill_groups)
