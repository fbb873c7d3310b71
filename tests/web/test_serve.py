"""serve(routes): Apsi functions as HTTP handlers, end to end on a real server."""

import signal

import httpx
import pytest

from .conftest import Server

ROUTES = """use web
fn hello(r):
    return {greeting: f"hello {r.query.get('name', 'world')}", method: r.method, path: r.path}
fn add(r):
    let j = r.json
    return j["a"] + j["b"]
fn echo(r):
    return {text: r.text, agent: r.headers.get("x-test", "none"), kind: type(r)}
fn boom(r):
    let xs = [1, 2]
    return xs[5]
fn made(r):
    return response({ok: true}, status=201, headers={"X-Made": "yes"})
fn page(r):
    return response("<b>hi</b>", headers={"Content-Type": "text/html"})
fn peek(r):
    return r.stream
fn odd(r):
    return fn(x) => x
fn loop(r):
    let xs = [1]
    xs.append(xs)
    return xs
serve({"/hello": hello, "POST /add": add, "PUT /echo": echo, "/boom": boom, "post /made": made,
       "/page": page, "/peek": peek, "/odd": odd, "/loop": loop}, port=PORT, max_body=1000)
"""


@pytest.fixture(scope="module")
def routes(tmp_path_factory, web_env):
    server = Server(tmp_path_factory.mktemp("routes"), ROUTES, web_env)
    yield server
    server.stop()


def test_handlers_get_the_request_as_plain_data(routes):
    with httpx.Client(base_url=routes.url) as client:
        assert client.get("/hello", params={"name": "ann"}).json() == {
            "greeting": "hello ann", "method": "GET", "path": "/hello"}
        assert client.post("/add", json={"a": 1.5, "b": 2}).json() == 3.5
        r = client.put("/echo", content="some text", headers={"X-Test": "yes"})
        assert r.json() == {"text": "some text", "agent": "yes", "kind": "request"}


def test_response_sets_status_headers_and_text_bodies(routes):
    r = httpx.post(f"{routes.url}/made")
    assert r.status_code == 201 and r.headers["x-made"] == "yes" and r.json() == {"ok": True}
    r = httpx.get(f"{routes.url}/page")
    assert r.text == "<b>hi</b>" and r.headers["content-type"].startswith("text/html")


def test_an_error_in_a_handler_is_a_500_naming_the_apsi_line_and_the_server_goes_on(routes):
    r = httpx.get(f"{routes.url}/boom")
    assert r.status_code == 500
    assert r.json()["error"] == ("the handler for GET /boom failed at p.apsi:11: index 5 is out of range "
                                 "for a list of length 2 (the last is at -1, the first at 0)")
    assert "Traceback" not in r.text and 'File "' not in r.text
    assert httpx.get(f"{routes.url}/hello").status_code == 200
    assert any("p.apsi:11" in line for line in routes.err)          # the Apsi traceback, on stderr


def test_a_body_that_is_not_json_is_the_clients_400(routes):
    r = httpx.post(f"{routes.url}/add", content=b"{oops")
    assert r.status_code == 400
    assert r.json()["error"].startswith("request.json: the body is not valid JSON at line 1, column 2")


def test_handlers_see_nothing_but_plain_data(routes):
    r = httpx.get(f"{routes.url}/peek")
    assert r.status_code == 500
    assert "'.stream' of a request is not available to Apsi code" in r.json()["error"]
    r = httpx.get(f"{routes.url}/odd")
    assert r.status_code == 500 and "cannot be sent as JSON" in r.json()["error"]
    r = httpx.get(f"{routes.url}/loop")
    assert r.status_code == 500 and "nested too deeply for JSON (or holds itself)" in r.json()["error"]


def test_limits_and_unknown_routes(routes):
    r = httpx.put(f"{routes.url}/echo", content=b"x" * 2000)
    assert r.status_code == 413 and "max_body = 1000 bytes" in r.json()["error"]
    assert httpx.get(f"{routes.url}/nope").json() == {"error": "no route GET /nope", "status": 404}
    assert httpx.get(f"{routes.url}/add").status_code == 405
    assert "apsi_requests_total" in httpx.get(f"{routes.url}/metrics").text


@pytest.mark.parametrize("table, words", [
    ("[]", "serve: routes must be a map"),
    ("{\"GRAB /x\": fn(r) => 1}", "serve: route \"GRAB /x\" is not \"METHOD /path\""),
    ("{\"/x\": 3}", "serve: the route \"/x\" needs a function fn(request), not 3"),
    ("{\"/metrics\": fn(r) => 1}", "serve: /metrics is the server's own route"),
    ("{\"/x\": fn(r) => 1, \"GET /x\": fn(r) => 2}", "serve: the route GET /x is given twice"),
])
def test_bad_route_tables_are_refused_before_listening(start, table, words):
    server = start(f"use web\nserve({table}, port=PORT)\n", ready=False)
    code, _, err = server.finish()
    assert code == 1 and words in err, err


def test_a_request_slower_than_timeout_gets_408_and_the_server_goes_on(start):
    import time

    server = start("use web\nserve({\"POST /x\": fn(r) => r.text}, port=PORT, timeout=0.5)\n")

    def trickle():
        yield b"a"
        time.sleep(1.5)
        yield b"b"

    r = httpx.post(f"{server.url}/x", content=trickle(), timeout=10)
    assert r.status_code == 408
    assert r.json()["error"] == ("reading the request took longer than timeout = 0.5 s; send it again, or "
                                 "start the server with a larger timeout")
    assert httpx.post(f"{server.url}/x", content=b"fine").json() == "fine"


def test_use_web_imports_no_server_until_one_starts(web_env):
    import subprocess
    import sys

    code = ("import sys\nfrom apsi_layers.apsi_modules import web_module\nweb_module()\n"
            "print(sorted(m for m in ('uvicorn', 'starlette', 'numpy', 'asyncio') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=web_env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_after_the_server_stops_the_program_goes_on_as_long_as_it_needs(start):
    """Ctrl-C stops the server, not the program: what follows serve() runs to its end, however long
    (longer than the stop's grace time), and a later Ctrl-C would stop it as usual."""
    # 3 s from serve()'s return: past the grace (timeout + 2 s = 2.5 s) counted from the signal before it
    server = start("use web\nserve({\"/hi\": fn(r) => \"hi\"}, port=PORT, timeout=0.5)\nprint(\"after\")\n"
                   "let t = clock()\nlet n = 0\nwhile clock() - t < 3:\n    n += 1\nprint(\"done\")\n")
    assert httpx.get(f"{server.url}/hi").json() == "hi"
    code, out, err = server.stop(signal.SIGINT)
    assert code == 0 and out.split() == ["after", "done"], (out, err)
