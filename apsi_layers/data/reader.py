"""Mapped rows read ahead in a forked reader process, not in a thread of the program.

A read-ahead thread reading a shuffled batch makes one pread per row (about a thousand a batch), and
each read drops and retakes Python's GIL: the reader and the step take turns at the GIL a thousand
times a batch, and the step waits. A reader process has a GIL of its own. It is forked from the
program at the first epoch (a copy of the program: the same open files, the same read function) and
reads each announced batch into one of DEPTH + 1 slots of a shared anonymous mapping made before
the fork; the program copies the batch out of its slot (tens of microseconds) and never reads a file.

- At most DEPTH batches are in flight; slot = serial % (DEPTH + 1), and a batch is copied out of its
  slot before another request is sent, so no slot is written while it is read.
- Replies come back in the order asked, each with its serial: a reply the program no longer wants
  (a batch it skipped, the end of an epoch) is dropped, never taken for another batch.
- An error in the reader (a file that changed size, a short read) comes back as its message and is
  raised at its batch, as the thread would.
- Ctrl-C: the reader ignores it (the terminal sends it to the whole group), the program stops it when
  fit returns; kill -9 of the program takes it along (PR_SET_PDEATHSIG, and a pipe closed by the
  program ends a reader waiting for work).
- A reader that died (out of memory) is not an error of the data: the batch is read in the program
  and the rest of the fit reads in the program's thread.
"""

import collections
import mmap
import os
import signal
import sys
import weakref

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_layers.forked import die_with, stop

from .prefetch import DEPTH, Prefetcher, pop_ahead

STOPS = {signal.SIGINT, signal.SIGTERM}
CHOICE = "APSI_READ_AHEAD"      # "process" or "thread": which reads ahead (default: measured best)


def use_process():
    """A reader process where fork is sound (Linux) and a core is free to run it when the fit
    starts: the load average (this program included) below the cores less a half. On a machine
    with no core to spare the process measured slower than the thread (it costs a little more CPU
    in all, and each batch waits for the reader to be scheduled), and is not chosen."""
    choice = os.environ.get(CHOICE, "")
    if choice in ("process", "thread"):
        return choice == "process" and hasattr(os, "fork")
    if not sys.platform.startswith("linux"):
        return False
    cores = len(os.sched_getaffinity(0))
    return cores >= 2 and os.getloadavg()[0] < cores - 0.5


class Reader:
    """One forked process running read(idx) -> [arrays] for the batches sent to it."""

    lost = False        # the process died: the program reads

    def __init__(self, read, slot_bytes):
        import ctypes  # (before the fork: the child imports nothing)
        from multiprocessing.connection import Pipe

        self.slot = max(1, slot_bytes)
        self.mem = mmap.mmap(-1, self.slot * (DEPTH + 1))     # shared and anonymous: both see it
        self.serial, self.flight = 0, collections.deque()
        mine, theirs = Pipe()
        try:
            self.pid = _fork(read, theirs, mine, self.mem, self.slot, ctypes)
        finally:
            theirs.close()
        self.conn = mine
        self.close = weakref.finalize(self, stop, [mine], [self.pid], os.getpid())

    def room(self):
        return not self.lost and len(self.flight) < DEPTH

    def submit(self, idx):
        self.serial += 1
        try:
            self.conn.send((self.serial, idx))
        except OSError:             # the reader is gone: result() says so
            pass
        self.flight.append(self.serial)
        return self.serial

    def result(self, serial):
        """The arrays of request `serial` (copied out of its slot), or its error raised here; replies
        to earlier requests are dropped on the way. None when the reader is gone."""
        while True:
            try:
                got, status, value = self.conn.recv()
            except (EOFError, OSError):
                self.close()
                self.lost = True
                return None
            self.flight.popleft()
            if got == serial:
                break
        if status == "error":
            raise ApsiError(*value)
        at = (serial % (DEPTH + 1)) * self.slot
        return [np.frombuffer(self.mem, np.dtype(dt), int(np.prod(shape, dtype=np.int64)), at + off)
                .reshape(shape).copy() for dt, shape, off in value]


def _fork(read, conn, mine, mem, slot, ctypes):
    parent = os.getpid()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        pid = os.fork()
    finally:
        if os.getpid() == parent:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    if pid == 0:
        _child(read, conn, mine, mem, slot, parent, ctypes)       # never returns
    return pid


def _child(read, conn, mine, mem, slot, parent, ctypes):
    code = 1
    try:
        mine.close()        # the program's end: a pipe the program closes must read as ended
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        die_with(parent, ctypes, signal.SIGKILL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        _serve(read, conn, mem, slot)
        code = 0
    except BaseException:       # noqa: BLE001, S110 (a broken pipe: the program is gone or done)
        pass
    finally:
        os._exit(code)      # nothing of the program runs here, nor is written twice (its buffers)


def _serve(read, conn, mem, slot):
    while True:
        try:
            serial, idx = conn.recv()
        except EOFError:
            return
        try:
            reply = (serial, "slot", _place(read(idx), mem, (serial % (DEPTH + 1)) * slot))
        except ApsiError as e:
            reply = (serial, "error", (e.message, e.kind))
        except Exception as e:          # noqa: BLE001 (passed on, named, at its batch)
            reply = (serial, "error", (f"reading the data failed: {type(e).__name__}: {e}", "error"))
        conn.send(reply)


def _place(arrays, mem, at):
    """The arrays into the slot at `at` (sized for the epoch's largest batch); where each is."""
    where, off = [], 0
    for a in arrays:
        np.frombuffer(mem, a.dtype, a.size, at + off).reshape(a.shape)[...] = a
        where.append((a.dtype.str, a.shape, off))
        off += a.nbytes
    return where


class ReadAhead:
    """An epoch's announced batches read by a Reader, DEPTH ahead of the step; prefetch.Prefetcher's
    interface (get(idx), close())."""

    def __init__(self, reader, batches, read):
        self.reader, self.read = reader, read
        self.todo = collections.deque(batches)
        self.pending = collections.deque()     # (key, serial) in the order asked
        self._fill()

    def _fill(self):
        while self.todo and self.reader.room():
            idx = self.todo.popleft()
            self.pending.append((idx.tobytes(), self.reader.submit(idx)))

    def get(self, idx):
        entry = pop_ahead(self.pending, idx.tobytes())     # (skipped batches' replies are dropped)
        if entry is None:
            return self.read(idx)
        _, serial = entry
        value = self.reader.result(serial)
        if value is None:           # the reader died (out of memory?): this process reads
            self.pending.clear()
            return self.read(idx)
        self._fill()
        return value

    def close(self):
        self.todo.clear()
        self.pending.clear()


class _Thread:
    """No reader process (chosen so, or none could be forked): the read-ahead thread reads."""

    lost, slot = True, float("inf")

    def close(self):
        pass


THREAD = _Thread()


def read_ahead(source, batches):
    """What reads an epoch's batches ahead for a mapped source (source.reader, kept from epoch to
    epoch: its Reader or THREAD, chosen at the fit's first epoch)."""
    need = max((len(b) for b in batches), default=0) * source.row_bytes()
    reader = source.reader
    if reader is None and batches:
        reader = _start(source.read, need) if use_process() else THREAD
    elif reader is not None and not reader.lost and reader.slot < need:
        reader.close()      # slots sized by a resumed fit's first epoch, its short last batch
        reader = _start(source.read, need)
    source.reader = reader
    if reader is None or reader.lost:
        return Prefetcher(source.read, batches, small_stack=True)
    return ReadAhead(reader, batches, source.read)


def _start(read, slot):
    try:
        return Reader(read, slot)
    except OSError:         # no process to spare (fork failed)
        return THREAD
