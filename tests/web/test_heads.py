"""A request's head (request line and headers) has `timeout` seconds too (heads.py): a client that
sends half a head and waits, or connects and sends nothing, does not hold its connection forever,
while keep-alive clients, slow bodies and the server's other limits behave as before."""

import json
import socket
import time

import httpx
import pytest

MODEL = """use layers
use web
let net = mlp(4, 3, hidden=[16])
serve_model(net, net.init(seed=3), port=PORT, timeout=1{options})
"""


def _connect(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.settimeout(8)
    return s


def _answer(s):
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def _check(server):
    begun = time.monotonic()
    half = _connect(server)
    half.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Le")
    silent = _connect(server)
    got = _answer(half)
    assert 0.9 < time.monotonic() - begun < 4
    head, body = got.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 408 ")
    assert json.loads(body) == {"status": 408, "error": (
        "reading the request took longer than timeout = 1 s (its headers never ended); send it again, or "
        "start the server with a larger timeout")}
    assert _answer(silent) == b""                    # (closed: it had asked nothing)
    # a keep-alive client that waits less than timeout between requests keeps its connection
    with httpx.Client(base_url=server.url) as client:
        for _ in range(3):
            r = client.post("/predict", json={"inputs": [[1, 2, 3, 4]]})
            assert r.status_code == 200
            time.sleep(0.5)
        # a head that ends in time, then a slow body: the body's own limit answers
        s = _connect(server)
        s.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{\"inputs\"")
        assert b"reading the request took longer than timeout = 1 s; send it" in _answer(s)


@pytest.mark.parametrize("options", ["", ", workers=2"])
def test_a_head_that_does_not_arrive_in_time_gets_408_and_is_closed(start, options):
    server = start(MODEL.format(options=options))
    _check(server)
    code, _, err = server.stop()
    assert code == 0, err


def test_serve_keeps_the_same_limit_on_heads(start):
    server = start("use web\nserve({\"/x\": fn(r) => 1}, port=PORT, timeout=1)\n")
    s = _connect(server)
    s.sendall(b"GET /x HTTP/1.1\r\n")
    assert _answer(s).startswith(b"HTTP/1.1 408 ")
    assert httpx.get(f"{server.url}/x").json() == 1
    code, _, err = server.stop()
    assert code == 0, err
