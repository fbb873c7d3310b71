"""Listening: the `net` permission, the socket (a port in use is a clear error), and uvicorn's lifecycle.

The program runs on its own thread (apsi_lang/bigstack.py), where uvicorn installs no signal handlers;
Ctrl-C and SIGTERM reach the main thread, which asks the server to stop through bigstack.stopping:
uvicorn stops accepting, answers the requests in flight (up to `timeout` seconds), and the call that
served returns, so the program ends normally (exit 0).
"""

import errno
import sys

from apsi_lang import bigstack, permissions
from apsi_lang.errors import ApsiError


def require_net(fn, host, port):
    permissions.require("net", what=f"{fn}(host={host!r}, port={port}) listening",
                        name=permissions.net_name(host, port))


def listen(fn, host, port):
    """A bound TCP socket for host:port (uvicorn listens on it), or an ApsiError that says why not."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ApsiError(f"{fn}: host {host!r} is not an address of this machine ({e.strerror}); use "
                        "\"127.0.0.1\" (this machine only) or \"0.0.0.0\" (every network)") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)       # now, so connections wait in the backlog once "serving" is printed
    except OSError as e:
        sock.close()
        raise ApsiError(_bind_problem(fn, host, port, e)) from None
    return sock


def _bind_problem(fn, host, port, e):
    if e.errno == errno.EADDRINUSE:
        return (f"{fn}: port {port} on {host} is already in use (another server is listening there); "
                "stop that server, or choose another port with port=…")
    if e.errno == errno.EADDRNOTAVAIL:
        return (f"{fn}: {host} is not an address of this machine; use \"127.0.0.1\" (this machine only) or "
                "\"0.0.0.0\" (every network)")
    if e.errno == errno.EACCES:
        low = " (ports below 1024 need administrator rights: choose one from 1024 up)" if port < 1024 else ""
        return (f"{fn}: listening on {host}:{port} was refused{low}; when apsi runs confined, the kernel "
                f"allows only the ports --allow-net names (--allow-net={host}:{port})")
    return f"{fn}: cannot listen on {host}:{port}: {e.strerror or e}"


SERVING = []        # the function serving now, if any: one server per program at a time


def run(fn, app, opts, what, workers=1, setup=None):
    """Serve `app` on opts.host:opts.port until Ctrl-C or SIGTERM, then return; with workers > 1 in
    that many forked processes (workers.py), each calling setup(its slot number) first."""
    if SERVING:
        # (a handler or a model's function calling serve: its event loop cannot run inside the one
        # that is answering, and nothing would answer the outer server's requests meanwhile)
        raise ApsiError(f"{fn}: cannot start a server while {SERVING[0]} serves in this program (called "
                        "from a handler, or from a function of the served model); serve every route from "
                        "one serve call, or run another program")
    from .http import STOPPED_HARD

    SERVING.append(fn)
    STOPPED_HARD.clear()
    try:
        _run(fn, app, opts, what, workers, setup)
    finally:
        SERVING.clear()


def _run(fn, app, opts, what, workers, setup):
    sock = listen(fn, opts.host, opts.port)
    import uvicorn

    from .heads import HEAD_LIMIT, protocol

    # (http=: uvicorn's own protocol, with a time limit on each request's head: heads.py; with h11
    # instead of httptools, h11's own head limit, 16 KB, is raised past ours so that ours answers;
    # loop=: asyncio's, accepting connections through accepting.py)
    config = uvicorn.Config(app, http=protocol(opts.timeout), log_config=None, access_log=False,
                            h11_max_incomplete_event_size=2 * HEAD_LIMIT,
                            lifespan="on", server_header=False, loop="apsi_layers.web.accepting:Loop",
                            timeout_graceful_shutdown=int(opts.timeout) + 1, timeout_keep_alive=5,
                            log_level="warning")
    _name_uvicorns_warnings(fn)
    where = f"{what} on http://{opts.host}:{opts.port}"
    try:
        if workers > 1:
            _run_workers(fn, config, sock, workers, opts, where, setup)
        else:
            _run_here(fn, config, sock, opts, where)
    finally:
        sock.close()
    from .http import STOPPED_HARD

    if STOPPED_HARD:            # (a request was cut short: the program ends as the signal asked)
        raise STOPPED_HARD.pop()
    print(f"{fn}: stopped; the requests in flight were answered", file=sys.stderr, flush=True)


def _run_here(fn, config, sock, opts, where):
    import uvicorn

    server = uvicorn.Server(config)
    print(f"{fn}: serving {where} (Ctrl-C stops)", file=sys.stderr, flush=True)
    with bigstack.stopping(lambda: setattr(server, "should_exit", True), grace=opts.timeout + 2):
        server.run(sockets=[sock])


def _run_workers(fn, config, sock, workers, opts, where, setup):
    import threading

    from . import workers as pool

    stop = threading.Event()
    with bigstack.stopping(stop.set, grace=opts.timeout + 2):
        pool.serve(fn, config, sock, workers, stop, where, setup)


def _name_uvicorns_warnings(fn):
    """uvicorn's own warnings (an invalid HTTP request, a connection closed early) reach stderr as one
    line naming the function that serves, like the rest of its output, not as bare logging text."""
    import logging

    logger = logging.getLogger("uvicorn.error")
    if not any(getattr(h, "apsi", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.apsi = True
        handler.setFormatter(logging.Formatter(f"{fn}: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
