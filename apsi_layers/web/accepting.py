"""Accepting connections: out of file descriptors, the server backs off instead of spinning, and with
several workers each new connection goes to the worker holding the fewest.

uvicorn serves through asyncio's own accept loop, which has two faults here:
- when accept() fails for want of a file descriptor (EMFILE, ENFILE, ENOBUFS, ENOMEM), it logs a
  Python traceback, schedules a retry and then goes on calling accept() up to `backlog` (2048) times
  in the same pass, each failure logged and scheduled again: hundreds of thousands of tracebacks and
  whole CPU-seconds a second while the server is out of descriptors (Python 3.11);
- it takes up to `backlog` connections per wake-up, so of several worker processes sharing one
  listening socket the first awake takes nearly all of a burst of new connections (16 opened at once
  went 15/1 between two workers).
So the event loop uvicorn runs (Loop, its `loop=` setting) listens through an Acceptor:
out of descriptors it stops accepting for BACKOFF seconds (the connections wait in the kernel's
backlog; the open ones are served meanwhile) and says so at most once every LOG_EVERY seconds; and
with workers, a worker takes a connection only while it holds no more open connections than the
others (each posts its count in shared memory, Turns), so connections opened together are dealt out in
turn. A worker that waited TURN_PATIENCE seconds for another to take a connection takes it (the other
may be busy, or just replaced).
"""

import asyncio
import errno
import logging
import time

OUT_OF = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
BACKOFF = 0.25                  # seconds without accepting after running out of descriptors
LOG_EVERY = 10.0                # seconds between two reports of it
TURN_WAIT = 0.002               # seconds a worker leaves a connection to a less busy one
TURN_PATIENCE = 0.1             # ... at most, before it takes the connection itself
PER_WAKE = 64                   # connections taken per wake-up at most (others then get a turn)

_turns = None                   # this worker's Turns, in a worker process


class Turns:
    """Each worker's count of open connections, in memory shared by the workers (made before the fork,
    like board.py's)."""

    def __init__(self, slots):
        import mmap

        self.slots, self.mine = slots, None
        self.memory = mmap.mmap(-1, 4 * slots)
        self.counts = memoryview(self.memory).cast("I")

    def take(self, slot):
        """In a worker process: count in `slot` (from zero: a replaced worker's connections are gone)."""
        global _turns
        self.mine, _turns = slot, self
        self.counts[slot] = 0

    def post(self, count):
        self.counts[self.mine] = count

    def least(self, count):
        """Whether `count` is no more than every other worker's."""
        return all(count <= c for i, c in enumerate(self.counts) if i != self.mine)


def _base_loop():
    """uvloop's event loop where it is installed (as uvicorn's loop="auto" chooses), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.SelectorEventLoop
    return uvloop.Loop


class Loop(_base_loop()):
    """For uvicorn's `loop=` setting: the event loop whose servers accept through Acceptor."""

    async def create_server(self, protocol_factory, host=None, port=None, *, sock=None, **kw):
        if sock is None:                # (uvicorn always passes the socket server.py bound)
            return await super().create_server(protocol_factory, host, port, **kw)
        kw["start_serving"] = False
        server = await super().create_server(protocol_factory, sock=sock, **kw)
        acceptor = Acceptor(self, sock, protocol_factory, _turns)
        acceptor.start()
        return _Listening(server, acceptor)


class _Listening:
    """The server uvicorn keeps: closing it stops the Acceptor first."""

    def __init__(self, server, acceptor):
        self.server, self.acceptor = server, acceptor

    def close(self):
        self.acceptor.close()
        self.server.close()

    def __getattr__(self, name):
        return getattr(self.server, name)


class Acceptor:
    def __init__(self, loop, sock, factory, turns):
        self.loop, self.sock, self.factory, self.turns = loop, sock, factory, turns
        self.connections = ()           # uvicorn's set of open connections, seen from the first
        self.pending = 0                # accepted, not yet handed to a protocol
        self.waited_since = None        # when this worker began leaving a connection to another
        self.reported = -LOG_EVERY
        self.closed = False
        self.retry = None               # the timer that starts accepting again after a pause

    def start(self):
        self.retry = None
        if not self.closed:
            self.loop.add_reader(self.sock.fileno(), self._ready)

    def close(self):
        if not self.closed:
            self.closed = True
            self.loop.remove_reader(self.sock.fileno())
            if self.retry is not None:
                self.retry.cancel()

    def _pause(self, seconds):
        self.loop.remove_reader(self.sock.fileno())
        self.retry = self.loop.call_later(seconds, self.start)

    def _ready(self):
        for _ in range(PER_WAKE):
            if self.turns is not None and not self._my_turn():
                self._pause(TURN_WAIT)
                return
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as e:            # (out of descriptors; or another failure: not a spin either)
                self._out_of(e)
                return
            conn.setblocking(False)
            self.pending += 1
            self.loop.create_task(self._serve(conn))

    def _my_turn(self):
        mine = len(self.connections) + self.pending
        self.turns.post(mine)
        if self.turns.least(mine):
            self.waited_since = None
            return True
        now = time.monotonic()
        if self.waited_since is None:
            self.waited_since = now
        if now - self.waited_since >= TURN_PATIENCE:
            self.waited_since = None
            return True
        return False

    async def _serve(self, conn):
        try:
            _, protocol = await self.loop.connect_accepted_socket(self.factory, conn)
        except OSError:
            conn.close()
            return
        finally:
            self.pending -= 1
        self.connections = getattr(protocol, "connections", self.connections)

    def _out_of(self, e):
        """accept() failed (most often: no descriptor for the connection): serve the open ones, and try
        again in BACKOFF seconds."""
        self._pause(BACKOFF)
        now = time.monotonic()
        if now - self.reported >= LOG_EVERY:
            self.reported = now
            advice = ("allow more open files (ulimit -n), or fewer idle connections" if e.errno in OUT_OF
                      else "the system refused it")
            logging.getLogger("uvicorn.error").warning(
                f"cannot accept new connections: {e.strerror} (this process holds {len(self.connections)} "
                f"connections); they wait until some close, and the open ones are served meanwhile; "
                f"{advice} (said at most every {LOG_EVERY:g} s)")
