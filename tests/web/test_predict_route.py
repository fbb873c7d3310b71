"""POST /predict's plain ASGI route on its own (no server): time limits kept by the sweeper, a
server's own cancellation, a client that leaves; and through a real server, a body that arrives too
slowly."""

import asyncio
import json
import time
from types import SimpleNamespace

import httpx

from apsi_layers.web.deadlines import Deadlines
from apsi_layers.web.predict_route import predict_route

from .test_serve_model import MODEL


class SlowBatcher:
    """A batcher whose predictions take `seconds`."""

    def __init__(self, seconds):
        self.seconds, self.coming = seconds, 0

    async def submit(self, item):
        await asyncio.sleep(self.seconds)
        return [[1.5]]


class Service:
    def prepare(self, value):
        return value

    def extras(self, outputs):
        return {}                       # no labels: the answer is the outputs alone


def call(route, messages):
    """(status, body, what was sent) for one request whose body arrives as `messages`."""
    sent = []

    async def receive():
        message = messages.pop(0)
        if isinstance(message, float):
            await asyncio.sleep(message)
            message = messages.pop(0)
        return message

    async def send(message):
        sent.append(message)

    async def main():
        scope = {"type": "http", "method": "POST", "path": "/predict", "headers": []}
        return await route(scope, receive, send)

    return sent, main


def run(seconds, prediction, messages):
    deadlines = Deadlines(seconds)
    route = predict_route(Service(), SlowBatcher(prediction), deadlines,
                          SimpleNamespace(max_body=1000, timeout=seconds))
    sent, main = call(route, messages)

    async def go():
        deadlines.start()
        try:
            status = await main()
            return status, dict(deadlines.open)
        finally:
            await deadlines.stop()

    status, left = asyncio.run(go())
    body = json.loads(sent[1]["body"]) if len(sent) == 2 else None
    return status, body, left


BODY = {"type": "http.request", "body": b'{"inputs": [[1]]}', "more_body": False}


def test_a_prediction_within_the_time_is_answered():
    status, body, left = run(5, 0.01, [BODY])
    assert (status, body, left) == (200, {"outputs": [[1.5]]}, {})


def test_a_prediction_past_timeout_is_a_408_naming_the_stage():
    start = time.monotonic()
    status, body, left = run(0.3, 30, [BODY])
    assert status == 408 and left == {}
    assert body == {"error": "the prediction took longer than timeout = 0.3 s; send it again, or start the "
                             "server with a larger timeout", "status": 408}
    # the 0.3 s timeout waited and ended the 30 s prediction's wait (half of that: room for a loaded machine)
    assert 0.3 <= time.monotonic() - start < 30 / 2


def test_each_stage_has_the_whole_timeout():
    """Reading takes 0.5 of the 0.8 s, the prediction another 0.5: each stage is within its limit."""
    status, body, _ = run(0.8, 0.5, [0.5, BODY])
    assert status == 200, body


def test_a_body_slower_than_timeout_is_a_408_for_reading():
    status, body, _ = run(0.3, 0.01, [{"type": "http.request", "body": b'{"inp', "more_body": True}, 30.0,
                                      BODY])
    assert status == 408 and body["error"].startswith("reading the request took longer than timeout = 0.3 s")


def test_a_client_that_leaves_gets_nothing_and_leaves_no_limit_behind():
    status, body, left = run(5, 0.01, [{"type": "http.disconnect"}])
    assert (status, body, left) == (499, None, {})


def test_the_servers_own_cancellation_is_not_a_408():
    deadlines = Deadlines(5)
    route = predict_route(Service(), SlowBatcher(30), deadlines, SimpleNamespace(max_body=1000, timeout=5))
    sent, main = call(route, [BODY])

    async def go():
        deadlines.start()
        task = asyncio.create_task(main())
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", dict(deadlines.open)
        finally:
            await deadlines.stop()
        return "answered", None

    assert asyncio.run(go()) == ("cancelled", {}) and sent == []


def test_a_real_server_answers_a_body_that_trickles_past_timeout_with_408_and_goes_on(start):
    server = start(MODEL.format(options=", timeout=1"))

    def slow():
        yield b'{"inputs": '
        time.sleep(2.5)
        yield b"[[1, 2, 3, 4]]}"

    r = httpx.post(f"{server.url}/predict", content=slow(), timeout=30)
    assert r.status_code == 408, r.text
    assert r.json()["error"] == ("reading the request took longer than timeout = 1 s; send it again, or "
                                 "start the server with a larger timeout")
    assert httpx.post(f"{server.url}/predict", json={"inputs": [[1, 2, 3, 4]]}).status_code == 200


def test_a_large_body_is_parsed_and_checked_off_the_event_loop():
    """Parsing and checking grow with the body (a 1 MB one held the event loop ~15 ms, a 600,000-digit
    number 21 s): above INLINE_BYTES they run on a thread of their own; small bodies stay on the loop."""
    import threading

    from apsi_layers.web.predict_route import INLINE_BYTES

    where = []

    class Watching(Service):
        def prepare(self, value):
            where.append(threading.current_thread().name)
            return value

    for size in (100, INLINE_BYTES + 100):
        text = b'{"inputs": [[' + b" " * size + b'1]]}'
        deadlines = Deadlines(5)
        route = predict_route(Watching(), SlowBatcher(0.01), deadlines,
                              SimpleNamespace(max_body=10 * INLINE_BYTES, timeout=5))
        sent, main = call(route, [{"type": "http.request", "body": text, "more_body": False}])

        async def go(main=main, deadlines=deadlines):
            deadlines.start()
            try:
                return await main(), threading.current_thread().name
            finally:
                await deadlines.stop()

        status, loop_thread = asyncio.run(go())
        assert status == 200
        assert (where[-1] == loop_thread) == (size < INLINE_BYTES), (where, loop_thread)
    assert where[-1].startswith("apsi-parse")
