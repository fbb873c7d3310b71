"""POST {path} as a plain ASGI callable: the one route that carries the load.

Under load the event loop's time per request limits a server, and starlette's layers (its error and
exception middleware, the router, a Request and a Response object) and a timer per request and stage
were a sixth of it (docs/web.md, Measured). This route reads the body from ASGI messages, parses and
checks it (service.prepare: predict's checks, one request at a time, so a bad request gets its own
400/422 and never reaches a batch), waits for its rows from the batcher and sends the JSON, with the
same statuses, messages and bytes as the starlette route it replaces. The other routes (/health,
/info, /metrics, and 404/405 for the rest, GET on this path included) stay on starlette.
"""

import asyncio
import json

from apsi_lang.errors import ApsiError

from . import http, jsonio
from .http import Problem

JSON_HEADERS = ((b"content-type", b"application/json"),)
# A body larger than this is parsed and checked on a thread of its own, not on the event loop: that work
# grows with the body (about 15 ms for a 1 MB one), and meanwhile the loop would answer no one
INLINE_BYTES = 64 * 1024
# one encoder for the answers orjson does not write (json.dumps with options builds one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def predict_route(service, batcher, deadlines, opts):
    """async route(scope, receive, send) -> the status it sent. Reading the request and waiting for
    its prediction have `timeout` seconds each (deadlines.py)."""
    limit_bytes, seconds = opts.max_body, opts.timeout
    parser = []                 # the thread that parses large bodies, made at the first one

    def prepared(body):
        value, problem = jsonio.parse(body)
        if problem:
            raise Problem(400, problem)
        return service.prepare(value)

    async def prepare_off_loop(body):
        if not parser:
            from apsi_lang.bigstack import big_stack_executor

            parser.append(big_stack_executor("apsi-parse"))     # (deep JSON recurses in C)
        return await asyncio.get_running_loop().run_in_executor(parser[0], prepared, body)

    async def route(scope, receive, send):
        limit = deadlines.begin("reading the request")
        try:
            batcher.coming += 1                 # an open batch waits for this request (batching.py)
            try:
                body = await read_body(scope, receive, limit_bytes)
                if body is None:
                    return 499                  # the client left: nothing to send
                item = prepared(body) if len(body) <= INLINE_BYTES else await prepare_off_loop(body)
            finally:
                batcher.coming -= 1
            deadlines.next(limit, "the prediction")
            outputs = await batcher.submit(item)
            payload = _encode({"outputs": outputs, **service.extras(outputs)})
            status = 200
        except asyncio.CancelledError:
            if not limit.expired:
                raise                           # (the server is stopping)
            status, payload = 408, _error(408, f"{limit.stage} took longer than timeout = {seconds:g} s; "
                                               "send it again, or start the server with a larger timeout")
        except Problem as p:
            status, payload = p.status, _error(p.status, p.message)
        except ApsiError as e:
            status, payload = 422, _error(422, e.message)
        except Exception as e:          # noqa: BLE001 (a bug must not stop the server)
            status, payload = 500, _error(500, http.internal(e))
        finally:
            deadlines.end(limit)        # (before the next await: no late cancellation reaches the sends)
        headers = [*JSON_HEADERS, (b"content-length", b"%d" % len(payload))]
        if status == 408:       # the body may be half read: the connection ends (it waited 5 s, kept alive)
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
        return status

    return route


def _encode(answer):
    """The answer's JSON bytes. The rows are lists of Python floats from tolist(): orjson writes each
    in its shortest round-trip form, as json does (the same digits; 1e-7 where json writes 1e-07),
    about 20 times as fast (a 32-row answer: 11 against 220 µs). Where the two differ, json writes:
    orjson writes NaN and infinities as null (docs/web.md promises NaN, Infinity) and refuses what
    json sends or refuses in its own words (text UTF-8 cannot hold, a number subclass)."""
    import orjson

    try:
        payload = orjson.dumps(answer)
    except orjson.JSONEncodeError:
        payload = None
    if payload is None or b"null" in payload:      # (no output is null: a NaN, or a label's text)
        payload = _ENCODER.encode(answer).encode()
    return payload


def _error(status, message):
    return jsonio.dumps({"error": message, "status": status}, "the response")


async def read_body(scope, receive, limit):
    """The body, refused with 413 beyond `limit` bytes (before reading it when it says its length,
    while reading it when it does not); None when the client disconnected."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            if not value.isdigit():
                raise Problem(400, f"Content-Length {value.decode('latin-1')!r} is not a number")
            if int(value) > limit:
                raise Problem(413, http.too_large(int(value), limit))
            break
    message = await receive()
    if message["type"] != "http.request":
        return None
    body = message.get("body", b"")
    if not message.get("more_body", False):         # (the usual case: the whole body at once)
        if len(body) > limit:
            raise Problem(413, http.too_large(len(body), limit, at_least=True))
        return body
    chunks, size = [body], len(body)
    while True:
        if size > limit:
            raise Problem(413, http.too_large(size, limit, at_least=True))
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            break
    if size > limit:
        raise Problem(413, http.too_large(size, limit, at_least=True))
    return b"".join(chunks)
