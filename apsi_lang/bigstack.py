"""Running Apsi code on a thread whose C stack holds the recursion limit, so no program crashes Python.

Python counts nested calls against sys.getrecursionlimit(), but a call that passes through C code
(sorted(key=f), map, min(key=f), printing or comparing deep structures) also uses the C stack, and
the main thread's stack (8 MiB on Linux) overflows, killing the process, long before 6000 such
calls. Programs therefore run on a thread with a large stack (address space reserved, not memory
used), where running out of calls is the Apsi error "too many nested calls" instead.

One C recursion has no limit at all: hashing a tuple hashes its items, so a tuple nested N deep used
as a map key takes N C frames (about 56 bytes each, a little more than the 48 bytes of memory each
level of the tuple holds). The stack is therefore as large as the machine's memory where the system
lets a thread reserve that much: a tuple deep enough to overflow it does not fit in memory.

    result = bigstack.call(fn)      # fn() on the big-stack thread; its exception re-raised here

Ctrl-C (and SIGTERM, see signals.py) reaches the main thread only; it is passed on to the program's
thread as the same exception. When the program's thread does not stop within GRACE_SECONDS, or a
second Ctrl-C comes first, the thread is inside C code (BLAS, reading input) and cannot be stopped:
`abandoned` is set, and the caller must end the process with os._exit, since letting the interpreter
shut down around a thread that is still inside NumPy crashed it (exit 139).

A service running on the program's thread (use web's server) stops more gently than an exception
raised into it: it registers `stopping(stop, grace)` while it runs; the first Ctrl-C or SIGTERM calls
stop() and waits up to `grace` seconds for the program to go on by itself (requests in flight are
answered, the call that served returns, the program ends normally). A second one, or a service that
does not stop in time, gets the exception as above (a SIGTERM repeated within SAME_SIGNAL_SECONDS is
not a second one: GNU timeout sends it twice).
"""

import contextlib
import sys

RECURSION_LIMIT = 6000
STACK_BYTES = 512 * 1024 * 1024     # at least: ~85 KiB of C stack per nested call at the limit
SAFE_LIMIT = 1500                   # where the default 8 MiB stack holds even calls through C
GRACE_SECONDS = 2.0                 # how long a Ctrl-C waits for the program to stop
POLL_SECONDS = 0.1                  # how often the main thread looks for a signal (see _wait)

_inside = None                      # threading.local(), made on first use
abandoned = False                   # the program's thread was left running (see above)
_service = None                     # (stop, grace) of a service running on the program's thread


def call(fn):
    """fn() on a thread with a big stack (directly when already on one); returns its result."""
    import threading

    global _inside
    if _inside is None:
        _inside = threading.local()
    if getattr(_inside, "active", False):
        return fn()
    outcome = {}
    done = threading.Event()

    def target():
        _inside.active = True
        try:
            outcome["value"] = fn()
        except BaseException as e:      # re-raised on the caller's thread, where it is reported
            outcome["error"] = e
        finally:
            done.set()

    thread = _start(threading, target)
    if thread is None:                  # no big stack to be had: stay where the default one is safe
        sys.setrecursionlimit(min(sys.getrecursionlimit(), SAFE_LIMIT))
        return fn()
    _wait(thread, done)
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome.get("value")


def _start(threading, target):
    """The program's thread, started with the largest stack the system grants (see above)."""
    for size in stack_sizes():
        try:
            old = threading.stack_size(size)
        except (ValueError, RuntimeError, OverflowError):
            continue
        try:
            thread = threading.Thread(target=target, name="apsi-program", daemon=True)
            sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
            thread.start()
            return thread
        except (RuntimeError, MemoryError):
            continue        # (more address space than the system lets a thread reserve)
        finally:
            threading.stack_size(old)
    return None


def big_stack_executor(name):
    """A one-thread concurrent.futures executor whose thread has the stack the program's thread has
    (see _start), so code it runs (the model's own Apsi functions, served by `use web`) meets
    "too many nested calls" at the recursion limit instead of overflowing an 8 MiB stack and killing
    the process. The thread is started now, while the stack size is set."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    executor = ThreadPoolExecutor(1, thread_name_prefix=name)
    for size in stack_sizes():
        try:
            old = threading.stack_size(size)
        except (ValueError, RuntimeError, OverflowError):
            continue
        try:
            executor.submit(lambda: None).result()
            return executor
        except (RuntimeError, MemoryError):
            continue
        finally:
            threading.stack_size(old)
    return executor


def stack_sizes():
    """Stack sizes to try, largest first: the machine's memory (capped at 64 GiB), half of it, and
    STACK_BYTES, which any system grants."""
    import os

    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        memory = 0
    memory = min(memory, 64 << 30)
    sizes = (s & ~((1 << 20) - 1) for s in (memory, memory // 2))      # whole MiB
    return [s for s in sizes if s > STACK_BYTES] + [STACK_BYTES]


_held = {}                          # signal -> the handler set aside while an interrupt is reported


def _wait(thread, done):
    global abandoned
    # (an Event, not thread.join(): a join interrupted by Ctrl-C can mark the thread as stopped.) The
    # wait wakes every POLL_SECONDS: Python runs signal handlers on the main thread only, and a signal
    # the kernel delivers to another thread (the program's, a read-ahead thread) wakes no untimed wait:
    # Ctrl-C during a fit over mapped files was lost that way in 15 of 20 tries
    while True:
        try:
            while not done.wait(POLL_SECONDS):
                pass
            return
        except KeyboardInterrupt as e:
            if _stopped_gently(done, e):
                continue                     # the service stopped; the program goes on
            _interrupt(thread, type(e))
            waiting = [True]
            _hold_signals(waiting)
            try:
                stopped = done.wait(GRACE_SECONDS)
            except KeyboardInterrupt:        # a second Ctrl-C: stop waiting now
                stopped = False
            finally:
                waiting[0] = False
            if not stopped:                  # blocked in C code: leave it, and say so
                abandoned = True
                raise e from None
            return


@contextlib.contextmanager
def stopping(stop, grace):
    """While the block runs, Ctrl-C and SIGTERM call stop() first (see above)."""
    global _service
    previous, _service = _service, (stop, grace)
    try:
        yield
    finally:
        _service = previous


SAME_SIGNAL_SECONDS = 1.0          # a second SIGTERM this soon after the first is the same request


def _stopped_gently(done, first):
    """Ask the service to stop; True once it has (the program then goes on, and a later Ctrl-C stops
    it as usual), False when it did not within its grace time or a second Ctrl-C came. A SIGTERM that
    follows a first one within SAME_SIGNAL_SECONDS is the same request: GNU timeout (and a kill of the
    process group) sends it to the process and then to its group, so it often arrives twice."""
    import time

    from .signals import Terminated

    service = _service
    if service is None:
        return False
    stop, grace = service
    stop()
    began = time.monotonic()
    deadline = began + grace
    while True:
        try:
            while _service is service and not done.is_set():
                if time.monotonic() > deadline:
                    return False
                done.wait(0.05)
            return True
        except KeyboardInterrupt as again:       # a second Ctrl-C: stop it the hard way
            if not (isinstance(first, Terminated) and isinstance(again, Terminated)
                    and time.monotonic() - began < SAME_SIGNAL_SECONDS):
                return False


def _hold_signals(waiting):
    """From the first Ctrl-C on, more Ctrl-C or SIGTERM only cut the grace wait short: one arriving
    while the report is printed, or while the process exits, would otherwise escape as a second
    KeyboardInterrupt and kill the process by SIGINT, with no exit code. The REPL, which goes on after
    an interrupted input, puts the handlers back (release_signals)."""
    import signal

    def again(signum, frame):
        if waiting[0]:
            raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            _held.setdefault(sig, signal.getsignal(sig))
            signal.signal(sig, again)
        except (ValueError, OSError):        # not the main thread
            _held.pop(sig, None)


def release_signals():
    """Put back the handlers set aside by an interrupt (the REPL goes on after one)."""
    import signal

    for sig, handler in list(_held.items()):
        signal.signal(sig, handler)
        del _held[sig]


def _interrupt(thread, kind=KeyboardInterrupt):
    """Raise `kind` (KeyboardInterrupt or signals.Terminated) in `thread` at its next instruction."""
    import ctypes

    _not_starting_a_thread(thread)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(kind))


def _not_starting_a_thread(thread, patience=1.0):
    """Wait (briefly) while `thread` is inside Thread.start: until the new thread runs, CPython gives
    its state the starting thread's id, and the exception raised "in `thread`" would land in the new
    thread instead (a read-ahead thread that died at birth, printing a traceback, while the fit ran on
    until the grace ran out)."""
    import sys
    import threading
    import time

    start = threading.Thread.start.__code__
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident)
        while frame is not None and frame.f_code is not start:
            frame = frame.f_back
        if frame is None:
            return
        time.sleep(0.002)
