"""response(status=…) gives only statuses HTTP can answer with as asked: 1xx are refused (101 handed
the connection over and hung the client, with a Python traceback on stderr), and 204/304 go without a
body (a body there was a protocol error and a traceback)."""

import httpx

PROGRAM = """use web
fn s(r):
    let body = none if r.query.get("body", "") == "" else {a: 1}
    return response(body, status=int(r.query["s"]), headers={"X-Seen": "yes"})
serve({"/s": s}, port=PORT)
"""


def test_statuses_without_a_body_and_informational_ones(start):
    server = start(PROGRAM)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for status in (204, 304):
            r = client.get("/s", params={"s": status})
            assert r.status_code == status and r.content == b"" and r.headers["x-seen"] == "yes"
            assert "content-type" not in r.headers
            r = client.get("/s", params={"s": status, "body": "1"})
            assert r.status_code == 500
            assert r.json()["error"] == (
                f"the handler for GET /s failed at p.apsi:4: response: status {status} carries no body "
                f"(HTTP sends none with it); write response(none, status={status}), or another status for "
                "a body")
        for status in (100, 101, 199):
            r = client.get("/s", params={"s": status})
            assert r.status_code == 500
            assert r.json()["error"] == (
                "the handler for GET /s failed at p.apsi:4: response: status must be an int from 200 to 599 "
                f"(a handler's answer; 1xx are not final answers), not {status}")
        assert client.get("/s", params={"s": 201, "body": "1"}).json() == {"a": 1}
    code, _, err = server.stop()
    assert code == 0
    assert 'File "' not in err and "Exception in ASGI application" not in err, err


HEADERS = """use web
fn s(r):
    return response({a: 1}, headers={r.query["h"]: r.query["v"]})
serve({"/s": s}, port=PORT)
"""


def test_headers_that_frame_the_answer_are_the_servers(start):
    """A handler's Content-Length or Transfer-Encoding used to go out beside the server's own: an
    answer cut short or never ended, lengths a proxy reads differently, and a Python traceback."""
    server = start(HEADERS)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for name, value in [("Content-Length", "1"), ("transfer-encoding", "chunked"),
                            ("Connection", "close"), ("Date", "x")]:
            r = client.get("/s", params={"h": name, "v": value})
            assert r.status_code == 500
            assert r.json()["error"] == (
                f"the handler for GET /s failed at p.apsi:3: response: header \"{name}\" is the server's to "
                "set (it frames the connection and the body); leave it out")
        r = client.get("/s", params={"h": "Cache-Control", "v": "no-store"})
        assert r.json() == {"a": 1} and r.headers["cache-control"] == "no-store"
    code, _, err = server.stop()
    assert code == 0
    assert 'File "' not in err and "Exception in ASGI application" not in err, err
