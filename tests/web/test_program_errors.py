"""The program's own code failing while it answers a request — a handler of serve(), or a function inside
the served model (a lambda_layer's) — including exit(): a 500 naming the Apsi file:line, the Apsi
traceback on the server's stderr (no Python traceback), and the server goes on; a request never stops
the server or one of its workers."""

import signal
import sys

import httpx
import pytest

from .conftest import wait_for

HANDLERS = """use web
fn bye(r):
    exit(int(r.query.get("code", "0")))
fn ok(r):
    return "fine"
fn nest(r):
    serve({"/in": ok}, port=int(r.query["port"]))
    return "nested"
serve({"/bye": bye, "/ok": ok, "/nest": nest}, port=PORT)
print("after serve")
"""

# the first input picks how the model's own code fails: exit("bye"), exit(3) (uvicorn's code for a
# worker that could not start), an Apsi runtime error; any other row passes through to mlp's numbers
MODEL = """use layers
use nn
use web
fn gate(x):
    let first = x.tolist()[0][0]
    if first == -1:
        exit("bye")
    if first == -3:
        exit(3)
    if first == -5:
        return 1 + "a"
    return x
let net = sequential([lambda_layer(gate), mlp(4, 3, hidden=[16])])
let p = net.init(input_shape=[4], seed=0)
serve_model(net, p, port=PORT, max_batch=1{options})
print("after serve")
"""

PYTHON_TRACEBACK = 'File "'


def _no_python_traceback(err):
    assert PYTHON_TRACEBACK not in err and "Exception in ASGI application" not in err, err


def test_exit_in_a_handler_is_a_500_naming_its_line_and_the_server_goes_on(start):
    server = start(HANDLERS)
    r = httpx.get(f"{server.url}/bye", params={"code": "4"})
    assert r.status_code == 500
    assert r.json()["error"] == ("the handler for GET /bye failed at p.apsi:3: exit(4) was called; a request "
                                 "cannot stop the server (Ctrl-C or SIGTERM stops it): return an error "
                                 "response instead")
    assert httpx.get(f"{server.url}/ok").json() == "fine"
    code, out, err = server.stop()
    assert code == 0 and out == "after serve\n"
    assert "p.apsi:3: error: the handler for GET /bye: exit(4) was called" in err
    _no_python_traceback(err)


def _check_model_failures(url):
    good = [[0.5, -1.0, 2.0, 0.25]]
    want = httpx.post(f"{url}/predict", json={"inputs": good}, timeout=10).json()["outputs"]
    for first, words in [(-1, 'failed at p.apsi:7: exit("bye") was called; a request cannot stop the server'),
                         (-3, "failed at p.apsi:9: exit(3) was called; a request cannot stop the server"),
                         (-5, "failed at p.apsi:11: '+' does not work on an int and a str")]:
        for _ in range(3):              # (several: with workers, each may meet it)
            r = httpx.post(f"{url}/predict", json={"inputs": [[first, 0, 0, 0]]}, timeout=10)
            assert r.status_code == 500, r.text
            assert r.json()["error"] == f"the model {words}" + (
                " (Ctrl-C or SIGTERM stops it): return an error response instead" if first != -5 else "")
            ok = httpx.post(f"{url}/predict", json={"inputs": good}, timeout=10)
            assert ok.status_code == 200
            assert ok.json()["outputs"] == want and len(want[0]) == 3


def test_the_models_own_code_failing_or_calling_exit_is_a_500_naming_its_line(start):
    server = start(MODEL.format(options=""))
    _check_model_failures(server.url)
    code, out, err = server.stop()
    assert code == 0 and out == "after serve\n"
    assert "p.apsi:11:18: error: '+' does not work on an int and a str" in err   # its Apsi traceback
    assert "internal error" not in err
    _no_python_traceback(err)


@pytest.mark.skipif(sys.platform != "linux", reason="fork")
def test_with_workers_a_request_never_stops_or_replaces_a_worker(start):
    server = start(MODEL.format(options=", workers=2"))
    _check_model_failures(server.url)
    code, out, err = server.stop(signal.SIGTERM)
    assert code == 0 and out == "after serve\n", err
    assert "serves in its place" not in err and "could not start serving" not in err
    _no_python_traceback(err)


def test_serve_called_while_serving_is_refused_by_name_and_the_server_goes_on(start):
    """It used to say it was serving on the inner port, then fail with Python's 'Cannot run the event
    loop while another loop is running' and RuntimeWarnings naming Python files."""
    from .conftest import free_port

    server = start(HANDLERS, flags=["--allow-net=127.0.0.1"])
    inner = free_port()
    r = httpx.get(f"{server.url}/nest", params={"port": inner})
    assert r.status_code == 500
    assert r.json()["error"] == (
        "the handler for GET /nest failed at p.apsi:7: serve: cannot start a server while serve serves in "
        "this program (called from a handler, or from a function of the served model); serve every route "
        "from one serve call, or run another program")
    assert httpx.get(f"{server.url}/ok").json() == "fine"
    code, out, err = server.stop()
    assert code == 0 and out == "after serve\n"
    assert f":{inner}" not in err and "RuntimeWarning" not in err, err
    _no_python_traceback(err)


SLOW = """use web
fn slow(r):
    eprint("working")
    let t = 0
    for i in range(1000000000):
        t = t + i
    return t
serve({"/slow": slow}, port=PORT, timeout=1)
print("after serve")
"""


def test_sigterm_cutting_a_handler_short_answers_503_and_ends_the_program_as_asked(start):
    """A handler still running when SIGTERM's grace (timeout + 2 s) ran out got uvicorn's plain 'Internal
    Server Error' and a Python traceback on stderr, the server said the requests in flight were answered,
    and the program went on to exit 0."""
    import threading

    server = start(SLOW)
    answer = {}

    def ask():
        answer["r"] = httpx.get(f"{server.url}/slow", timeout=60)

    asking = threading.Thread(target=ask)
    asking.start()
    # inside the handler when SIGTERM comes (after a fixed 1 s, a loaded machine had not yet begun it)
    wait_for(lambda: "working\n" in server.err, "the request did not arrive")
    code, out, err = server.stop(signal.SIGTERM)
    asking.join(30)
    assert code == 143 and out == "", err
    r = answer["r"]
    assert r.status_code == 503 and r.json()["error"] == (
        "the server was stopped before this request was answered; send it again (to another server)")
    assert "apsi: terminated (SIGTERM)" in err and "the requests in flight were answered" not in err
    _no_python_traceback(err)
