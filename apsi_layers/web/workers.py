"""workers=N: N server processes sharing one listening socket, forked from this one once the model and
its parameters are built.

uvicorn's own supervisor starts fresh interpreters that import the app by name; an Apsi program (its
closures, custom layers, parameters in memory) is no importable app. So the parent binds the socket
(server.listen), forks N children, and supervises them as uvicorn's supervisor does:
- each child runs uvicorn on the inherited socket; the kernel hands each new connection to one of them;
- Ctrl-C and SIGTERM reach the parent (bigstack.stopping), which sends SIGTERM once to every child: each
  stops accepting, answers its requests in flight and exits 0; then serve_model returns (exit 0).
  Children ignore SIGINT: the terminal's Ctrl-C reaches the whole process group, and a child that saw
  it as well as the parent's SIGTERM would count two signals and drop its requests in flight;
- a child that dies while serving is reported (pid, exit status) and replaced by a new fork, as uvicorn
  restarts a dead worker; a child that fails before it serves (exit 3, uvicorn's STARTUP_FAILURE) stops
  them all, as in uvicorn: the same failure would repeat;
- a second Ctrl-C, or children that do not stop within the grace time, end with SIGKILL; and no child
  outlives a parent killed outright: each asks the kernel for SIGTERM when the thread that forked it
  ends (Linux's PR_SET_PDEATHSIG).
Forking is sound here because nothing a child needs is held by the parent's other threads (the main
thread waits for the program; OpenBLAS rebuilds its pool after a fork); a backend that does not survive
a fork says why (its `fork_problem`: PyTorch's thread pools and a GPU's context), and api.py refuses
workers > 1 with it.
"""

import os
import signal
import sys

from apsi_lang.errors import ApsiError
from apsi_layers.forked import die_with, leave

STARTUP_FAILURE = 3             # uvicorn's exit code for a server that could not start
STOPS = {signal.SIGINT, signal.SIGTERM}


def serve(fn, config, sock, count, stop, what, setup=None):
    """Fork `count` children serving `config` on `sock`; return once they have all stopped after
    stop.set() (a signal), or raise ApsiError when one could not start. Each child calls setup(slot)
    first: its number from 0 to count - 1, which a child that replaces a dead one takes over."""
    from .accepting import Turns

    turns = Turns(count)            # (each child takes its slot: connections are dealt out in turn)

    def set_up(slot):
        turns.take(slot)
        if setup is not None:
            setup(slot)

    children, stopping, failed = {}, False, None      # pid -> slot
    try:
        for slot in range(count):
            children[_fork(fn, config, sock, set_up, slot)] = slot
        pids = ", ".join(map(str, sorted(children)))
        print(f"{fn}: serving {what} with {count} worker processes (pids {pids}) (Ctrl-C stops)",
              file=sys.stderr, flush=True)
        while children:
            if stop.is_set() and not stopping:
                stopping = True
                _signal_all(children, signal.SIGTERM)
            for pid, code in _ended(children):
                slot = children.pop(pid)
                if stopping:
                    if code:
                        print(f"{fn}: worker {pid} {_status(code)} while stopping", file=sys.stderr,
                              flush=True)
                elif code == STARTUP_FAILURE:
                    failed = pid
                    stop.set()
                else:
                    new = _fork(fn, config, sock, set_up, slot)
                    children[new] = slot
                    print(f"{fn}: worker {pid} {_status(code)}; worker {new} serves in its place",
                          file=sys.stderr, flush=True)
            stop.wait(0.1)
    finally:
        _signal_all(children, signal.SIGKILL)        # (a second Ctrl-C, or the grace time ran out)
        for pid in children:
            _reap(pid)
    if failed is not None:
        raise ApsiError(f"{fn}: worker {failed} could not start serving (its error is above); the other "
                        "workers were stopped")


def _fork(fn, config, sock, setup, slot):
    """A child serving `config` on `sock`; its pid. Stop signals stay blocked across the fork so that
    the child does not run the parent's handlers before it has its own."""
    # (ctypes is imported before the fork: the child reads no more files than it must)
    import ctypes

    parent = os.getpid()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        pid = os.fork()
    except OSError as e:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        raise ApsiError(f"{fn}: cannot start a worker process ({e.strerror}); use fewer workers") from None
    if pid == 0:
        _child(fn, config, sock, parent, ctypes, setup, slot)       # never returns
    signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return pid


def _child(fn, config, sock, parent, ctypes, setup, slot):
    """Serve until SIGTERM, then leave the process: a child must never go on running the program."""
    code = 1
    try:
        if setup is not None:
            setup(slot)
        server = _server(config)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda signum, frame: setattr(server, "should_exit", True))
        die_with(parent, ctypes)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        server.run(sockets=[sock])
        code = 0 if server.started else STARTUP_FAILURE
    except SystemExit as e:
        code = e.code if type(e.code) is int else 1
    except BaseException as e:       # noqa: BLE001 (reported; the parent starts another worker)
        print(f"{fn}: worker {os.getpid()} failed: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        leave(code)


def _server(config):
    """uvicorn's Server without its own signal handlers: in the child, the forking thread is the main
    thread, and uvicorn would take SIGINT (which children ignore) and re-raise SIGTERM after stopping."""
    import contextlib

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            yield

    return Server(config)


def _ended(children):
    """[(pid, exit code)] of the children that have ended (a signal's death as -signal; None when the
    status is not known)."""
    out = []
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:           # (reaped elsewhere: its status is lost)
            out.append((pid, None))
            continue
        if done:
            out.append((pid, os.waitstatus_to_exitcode(status)))
    return out


def _status(code):
    if code is None:
        return "ended"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _signal_all(children, sig):
    for pid in children:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _reap(pid):
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
