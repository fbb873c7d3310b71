"""What both apps share: JSON answers and errors, reading a body within max_body and the timeout, and
the middleware that logs and counts each request. Errors are JSON {"error": message, "status": code},
never a traceback."""

import asyncio
import time

from . import jsonio


class Problem(Exception):
    """A request that cannot be answered: its status and a message for the client."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def answer(status, value, headers=None):
    from starlette.responses import Response

    return Response(jsonio.dumps(value, "the response"), status_code=status, headers=headers,
                    media_type="application/json")


def error(status, message):
    return answer(status, {"error": message, "status": status})


async def body_of(request, limit):
    """The request's body, refused with 413 beyond `limit` bytes (before reading it when it says its
    length, and while reading it when it does not)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise Problem(400, f"Content-Length {length!r} is not a number")
        if int(length) > limit:
            raise Problem(413, too_large(int(length), limit))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, too_large(size, limit, at_least=True))
        chunks.append(chunk)
    return b"".join(chunks)


def client_gone():
    """The exception starlette raises when a client leaves before its body has arrived."""
    from starlette.requests import ClientDisconnect

    return ClientDisconnect


class _Gone:
    """The 'response' to a client that left: nothing is sent; Observed logs and counts it as 499."""

    async def __call__(self, scope, receive, send):
        scope[GONE_KEY] = 499


GONE_KEY = "apsi.gone"
GONE = _Gone()


def too_large(size, limit, at_least=False):
    told = "more than max_body" if at_least else f"{size} bytes, more than max_body"
    return (f"the body is {told} = {limit} bytes; send less per request, or start the server with a "
            "larger max_body")


async def within(seconds, work, what):
    """`work` (a coroutine) with a time limit: 408 after `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            return await work
    except TimeoutError:
        raise Problem(408, f"{what} took longer than timeout = {seconds:g} s; send it again, or start "
                           "the server with a larger timeout") from None


class Observed:
    """ASGI middleware: one access-log line and the metrics for every HTTP request. `direct` maps
    (method, path) to a plain ASGI route that returns the status it sent (predict_route.py): it is
    called without starlette's layers, and without wrapping `send`."""

    def __init__(self, app, observer, routes, direct=None):
        self.app, self.observer, self.routes, self.direct = app, observer, routes, direct or {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        self.observer.arrived()
        route = self.direct.get((scope["method"], scope["path"]))
        status = [500]
        try:
            if route is not None:
                status[0] = await route(scope, receive, send)
                return

            async def sending(message):
                if message["type"] == "http.response.start":
                    status[0] = message["status"]
                await send(message)

            await self.app(scope, receive, sending)
            status[0] = scope.get(GONE_KEY, status[0])
        except KeyboardInterrupt as e:
            # Ctrl-C or SIGTERM whose grace ran out while this request was answered (a handler still
            # running): bigstack raised it on this thread. uvicorn would log it as a Python traceback and
            # go on; it is kept for server.run to raise once uvicorn has stopped (the program then ends
            # as the signal asks), and the client is told, if nothing has been sent yet
            STOPPED_HARD.append(e)
            status[0] = 503
            await _try_send(send, error_bytes(503, "the server was stopped before this request was "
                                                   "answered; send it again (to another server)"))
        finally:
            self._finished(scope, status[0], start)

    def _finished(self, scope, status, start):
        path = scope.get("path", "")
        client = scope.get("client") or ("-", 0)
        # a route's label is its pattern, or "other": labels must not grow with what clients send
        route = path if path in self.routes else "other"
        self.observer.finished(client[0], scope.get("method", "-"), path, route, status,
                               time.perf_counter() - start)


STOPPED_HARD = []          # the interrupt that cut a request short (Observed), for server.run to raise


def error_bytes(status, message):
    return status, jsonio.dumps({"error": message, "status": status}, "the response")


async def _try_send(send, answer):
    status, body = answer
    try:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})
    except Exception:       # noqa: BLE001, S110 (an answer had begun, or the client is gone: nothing to add)
        pass


def json_errors():
    """Starlette's own 404/405 answers, as JSON errors."""
    from starlette.exceptions import HTTPException

    async def handle(request, exc):
        words = {404: f"no route {request.method} {request.url.path}",
                 405: f"{request.method} is not allowed on {request.url.path}"}
        return error(exc.status_code, words.get(exc.status_code, exc.detail))

    return {HTTPException: handle}


def program_error(e, who):
    """The message for an error raised by the program's own Apsi code while answering (a handler, or
    a function inside the model such as a lambda_layer's): `who` failed at file:line (the file's name
    only: the client need not learn where the program lives) and what happened; the Apsi traceback
    goes to the server's stderr. exit() there is such an error too: a request must not stop the server
    (Ctrl-C and SIGTERM do). None when no Apsi code raised `e` (a bug: internal())."""
    import os
    import sys

    from apsi_lang import report
    from apsi_lang.errors import ApsiError
    from apsi_lang.values import show

    frames = report.apsi_frames(e.__traceback__)
    if not frames:
        return None
    where = f" at {os.path.basename(frames[-1][0])}:{frames[-1][1]}"
    if isinstance(e, SystemExit):
        code = "" if e.code is None else show(e.code, True)
        message = (f"exit({code}) was called; a request cannot stop the server (Ctrl-C or SIGTERM stops "
                   "it): return an error response instead")
        print(f"{frames[-1][0]}:{frames[-1][1]}: error: {who}: {message}", file=sys.stderr, flush=True)
    else:
        message = e.message if isinstance(e, ApsiError) else report.describe_at(e)
        print(report.render_runtime_error(e), file=sys.stderr, flush=True)
    return f"{who} failed{where}: {message}"


def internal(e):
    """The answer to an error that is a bug (not the client's): its kind, never a traceback; the
    traceback goes to the server's stderr with APSI_DEBUG=1."""
    import os
    import sys
    import traceback

    if os.environ.get("APSI_DEBUG", "") not in ("", "0"):
        traceback.print_exception(e, file=sys.stderr)
    return (f"internal error ({type(e).__name__}) while answering; the server goes on (its stderr shows "
            "the Python traceback when it runs with APSI_DEBUG=1)")
