"""dataset(count, fn, workers=N): the calls run ahead in N worker processes forked from the program.

An Apsi function holds Python's GIL while it runs, so a call made in a read-ahead thread slows the
step it should hide behind; a call made in another process does not. The workers are forked when fit
reads the dataset (before the read-ahead threads, the progress bar or a torch session start), so each
is a copy of the program as it is then: the function, what it closes over (arrays are shared until
written), the permissions in force. Each call gets its random stream from (seed, epoch, i) as in the
program's process, so the batches are the same whatever the number of workers; what a call changes
outside itself (appending to a list) stays in its worker.

The epoch's calls are dealt out in turn, AHEAD per worker in flight; results come back through a pipe
per worker in the order asked, each tagged with its serial number, so a result left over from an
epoch that stopped early is dropped, never taken for another batch. An error in a call comes back as
its message and is raised at its batch. Ctrl-C reaches the whole process group: workers ignore it and
the program stops them; a program killed outright takes them with it (PR_SET_PDEATHSIG, and a
closed pipe ends a worker waiting for work). fit, predict and adapt read through a pool alike.

So that the step does not wait on a busy machine: a worker's socket holds its finished results whole
(the step's read is a copy, never a wait for the worker to be scheduled again), and workers are
batch-scheduled (a request wakes one without preempting the step). How long the step still waits
is counted in waited.py.
"""

import collections
import os
import signal
import struct
import sys
import time
import weakref

from apsi_lang.errors import ApsiError
from apsi_layers.forked import die_with, flush, leave, stop

from .prefetch import pop_ahead
from .waited import WAITED

AHEAD = 2           # calls in flight per worker
STOPS = {signal.SIGINT, signal.SIGTERM}


def default_count():
    """Processes where fork is sound (Linux), one core left for the step; else 0 (a thread)."""
    if not sys.platform.startswith("linux"):
        return 0
    return max(1, min(4, (os.cpu_count() or 1) - 1))


class Pool:
    """N forked workers; call(i, epoch) -> list of arrays runs in them."""

    def __init__(self, call, count, what):
        import ctypes  # (before the fork: the child imports nothing)
        from multiprocessing.connection import Pipe

        self.what, self.serial = what, 0
        self.conns, self.pids = [], []
        self.close = weakref.finalize(self, stop, self.conns, self.pids, os.getpid())
        for _ in range(count):
            mine, theirs = Pipe()
            try:
                pid = _fork(call, theirs, [*self.conns, mine], ctypes, what)
            except BaseException:
                mine.close()
                self.close()            # (the workers already started)
                raise
            finally:
                theirs.close()
            self.conns.append(mine)
            self.pids.append(pid)
        self.inboxes = [_Inbox(c) for c in self.conns]

    def __len__(self):
        return len(self.conns)

    def submit(self, k, epoch, i):
        self.serial += 1
        try:
            self.conns[k].send((self.serial, epoch, i))
        except OSError:
            self._lost(k, i)
        return self.serial

    def result(self, k, serial, i):
        """Call i's arrays from worker k, or its error raised here."""
        while True:
            try:
                got, status, value = self.inboxes[k].take()
            except (EOFError, OSError):
                self._lost(k, i)
            if got == serial:
                break
        if status == "error":
            raise ApsiError(*value)
        if status == "exit":
            raise SystemExit(value)
        return value

    def _lost(self, k, i):
        pid = self.pids[k]
        code = _exit_status(pid)
        how = f" ({_status(os.waitstatus_to_exitcode(code))})" if code is not None else ""
        raise ApsiError(f"{self.what}: the dataset's worker process {pid} ended{how} before batch {i} came "
                        "back (out of memory?); dataset(..., workers=0) makes the calls in this process")


class _Inbox:
    """One worker's results, read straight into a buffer kept from batch to batch. (Connection.recv
    reads into new bytes and copies them twice more: 180 µs for a batch of 270 kB against 40 µs
    this way, time the step spends taking its batch.) The framing is Connection.send_bytes's: a
    4-byte length (-1, then 8 bytes, past 2 GiB), then the pickle."""

    def __init__(self, conn):
        from multiprocessing.reduction import ForkingPickler

        self.fd, self.buf, self.loads = conn.fileno(), bytearray(8), ForkingPickler.loads

    def take(self):
        size = struct.unpack("!i", self._read(4))[0]
        if size == -1:
            size = struct.unpack("!Q", self._read(8))[0]
        return self.loads(self._read(size))        # (copied out: nothing refers to buf after)

    def _read(self, n):
        if len(self.buf) < n:
            self.buf = bytearray(n)
        view, got = memoryview(self.buf)[:n], 0
        while got < n:
            step = os.readv(self.fd, [view[got:]])
            if step == 0:
                raise EOFError
            got += step
        return view


def _exit_status(pid, patience=2.0):
    """The ended worker's wait status, or None. (Its socket is closed as it exits, a moment before it
    can be reaped: that moment is waited for, briefly.)"""
    deadline = time.monotonic() + patience
    while True:
        try:
            done, code = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done or time.monotonic() > deadline:
            return code if done else None
        time.sleep(0.01)


def _status(code):
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _fork(call, conn, parents, ctypes, what):
    parent = os.getpid()
    flush()             # else what the program printed but had not written yet is written twice
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        pid = os.fork()
    except OSError as e:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        raise ApsiError(f"{what}: cannot start a dataset worker process ({e.strerror}); "
                        "dataset(..., workers=0) makes the calls in this process") from None
    if pid == 0:
        _child(call, conn, parents, parent, ctypes)       # never returns
    signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return pid


def _child(call, conn, parents, parent, ctypes):
    code = 1
    try:
        for c in parents:           # the parent's ends: a pipe the parent closes must read as ended
            c.close()
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # the program stops its workers on Ctrl-C
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        die_with(parent, ctypes, signal.SIGKILL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        _yield_to_the_step()
        _serve(conn, call)
        code = 0
    except BaseException:       # noqa: BLE001, S110 (a broken pipe: the program is gone or done)
        pass
    finally:
        leave(code)


def _yield_to_the_step():
    """Batch scheduling (Linux): a worker woken by a request then waits for a free core or the next
    tick instead of preempting the process that sent it, the one that trains. On a machine with a
    free core nothing changes; on a busy one, a worker that preempted the step at every request cost
    it milliseconds a step (the step then waited its turn behind the machine's other work)."""
    if hasattr(os, "sched_setscheduler"):
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except OSError:
            pass


class _Room:
    """The worker's socket send buffer, grown to hold a few results: a finished batch then lies
    whole in the kernel until the step takes it, and the step's read is one copy that never waits
    for this process to be scheduled again to write the rest (on a busy machine, milliseconds).
    The kernel caps the size (net.core.wmem_max); a bigger batch is written as the step reads it."""

    def __init__(self, conn, socket):
        self.sock = socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
        self.asked, self.socket = 0, socket

    def hold(self, size):
        want = (AHEAD + 1) * size
        if want > self.asked:
            self.asked = want
            try:
                self.sock.setsockopt(self.socket.SOL_SOCKET, self.socket.SO_SNDBUF, want)
            except OSError:
                pass


def _serve(conn, call):
    # (loaded before the fork, with multiprocessing.connection)
    import socket
    from multiprocessing.reduction import ForkingPickler

    room = _Room(conn, socket)
    while True:
        try:
            serial, epoch, i = conn.recv()
        except EOFError:
            return
        try:
            reply = (serial, "ok", call(i, epoch))
        except ApsiError as e:
            reply = (serial, "error", (e.message, e.kind))
        except SystemExit as e:             # exit() in the function ends the program, as it does in a thread
            reply = (serial, "exit", e.code)
        except BaseException as e:          # noqa: BLE001 (anything else: named, passed on)
            from apsi_lang.report import describe

            reply = (serial, "error", (f"the dataset function stopped at batch {i}: {describe(e)}", "error"))
        flush()
        payload = ForkingPickler.dumps(reply)       # (what conn.send(reply) writes)
        room.hold(len(payload))
        conn.send_bytes(payload)


class Ahead:
    """An epoch's announced calls, dealt out to the pool's workers ahead of the step; the same
    interface as prefetch.Prefetcher (get(idx), close())."""

    def __init__(self, pool, batches, epoch, read, finish):
        self.pool, self.epoch, self.read, self.finish = pool, epoch, read, finish
        self.todo = collections.deque(batches)
        self.pending = collections.deque()       # (key, worker, serial, i), in the order asked
        self.turn, self.fresh = 0, True
        self._fill()

    def _fill(self):
        while self.todo and len(self.pending) < AHEAD * len(self.pool):
            idx = self.todo.popleft()
            if len(idx) != 1:       # not one call: get() reads it here, and says what is wrong
                continue
            i, k = int(idx[0]), self.turn % len(self.pool)
            self.turn += 1
            self.pending.append((idx.tobytes(), k, self.pool.submit(k, self.epoch, i), i))

    def get(self, idx):
        t0, first, self.fresh = WAITED.start(), self.fresh, False
        entry = pop_ahead(self.pending, idx.tobytes())     # (skipped batches' results are dropped)
        if entry is None:           # not asked ahead: made now, the step waits for all of it
            value = self.read(idx)
            WAITED.since(t0, first)
            return value
        _, k, serial, i = entry
        self._fill()                # (the next call is asked before this one is waited for)
        arrays = self.pool.result(k, serial, i)
        WAITED.since(t0, first)
        return self.finish(arrays, i)

    def close(self):
        self.todo.clear()
        self.pending.clear()
