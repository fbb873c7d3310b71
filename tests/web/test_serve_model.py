"""serve_model end to end: a real server in a subprocess, real HTTP (httpx), answers compared with
predict bit for bit, bad requests of every kind, concurrency, and SIGTERM/SIGINT with requests in
flight."""

import json
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from .conftest import Server, held_request, in_flight, post_in_two_halves, refused, wait_for

MODEL = """use layers
use web
let net = mlp(4, 3, hidden=[16])
let p = net.init(seed=3)
serve_model(net, p, port=PORT{options})
print("after serve_model")
"""


def reference(rows):
    """predict in this process, on the same model and parameters as the server's."""
    from apsi_layers.layers import mlp, predict

    net = mlp(4, 3, hidden=[16])
    return predict(net, net.init(seed=3), np.asarray(rows, dtype=float)).data


@pytest.fixture(scope="module")
def served(tmp_path_factory, web_env):
    server = Server(tmp_path_factory.mktemp("model"), MODEL.format(options=", max_body=\"2KB\""), web_env)
    yield server
    server.stop()


def test_outputs_are_predicts_bit_for_bit(served):
    rng = np.random.default_rng(0)
    with httpx.Client(base_url=served.url) as client:
        for n in (1, 5, 17):
            rows = rng.standard_normal((n, 4)).tolist()
            r = client.post("/predict", json={"inputs": rows})
            assert r.status_code == 200, r.text
            got = np.asarray(r.json()["outputs"])
            assert got.shape == (n, 3)
            assert np.array_equal(got, reference(rows))          # the same bits (JSON floats round-trip)


def test_outputs_that_overflow_are_written_infinity_as_the_docs_say(served):
    """orjson writes the answers and would write infinities and NaN as null: those are written by
    json, as before."""
    rows = [[1.79e308] * 4, [1.79e308, -1.79e308, -1.79e308, 1.79e308], [0.5, 0.25, -1.0, 2.0]]
    r = httpx.post(f"{served.url}/predict", json={"inputs": rows})
    assert r.status_code == 200 and "null" not in r.text and "Infinity" in r.text, r.text
    with np.errstate(over="ignore"):
        want = reference(rows)
    assert not np.isfinite(want).all()                  # (the case at hand)
    assert np.array_equal(np.asarray(json.loads(r.text)["outputs"]), want, equal_nan=True)


def test_outputs_match_an_independent_numpy_forward_pass(served):
    """relu(x W1 + b1) W2 + b2, written out, with the parameters init(seed=3) makes."""
    from apsi_layers.layers import mlp
    from apsi_layers.nn.autograd import tree

    p = {name: np.asarray(leaf.data) for name, leaf in tree.named_leaves(mlp(4, 3, hidden=[16]).init(seed=3))}
    w1, b1, w2, b2 = p["dense.w"], p["dense.b"], p["dense_1.w"], p["dense_1.b"]
    x = np.array([[0.5, -1.0, 2.0, 0.25]])
    want = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    got = httpx.post(f"{served.url}/predict", json={"inputs": x.tolist()}).json()["outputs"]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


BAD = [
    (b"not json", 400, "the body is not valid JSON at line 1, column 1"),
    (b"", 400, "the body is empty"),
    (b"[1, 2]", 400, "the body must be a JSON object"),
    (b'{"x": [[1, 2, 3, 4]]}', 400, "unknown field \"x\""),
    (b'{"mask": null}', 400, "the body has no \"inputs\" field"),
    (b'{"inputs": [[1, 2, 3, 4]], "inputs2": 1}', 400, "unknown field"),
    (b'{"inputs": [[1, NaN, 3, 4]]}', 400, "NaN is not JSON"),
    (b'{"inputs": [[1, 2, 3]]}', 422, "predict: the model expects 4 input features per sample and got 3 "
                                      "(inputs of shape [1, 3])"),
    (b'{"inputs": [[1, 2, 3, 4], [1, 2]]}', 422, "predict: inputs must be a tensor or a (nested) list of "
                                                  "numbers of equal lengths; inputs[1] is a list of 2 but "
                                                  "inputs[0] is a list of 4"),
    # (which entry is not a number, not 'a ragged list', which they are not)
    (b'{"inputs": [[1, 2, 3, 4], [1, "b", 3, 4]]}', 422, "predict: inputs must be a tensor or a (nested) "
                                                         "list of numbers of equal lengths; inputs[1, 1] is "
                                                         "\"b\", not a number"),
    (b'{"inputs": [[1, null, 3, 4]]}', 422, "equal lengths; inputs[0, 1] is none, not a number"),
    (b'{"inputs": [[1, 2, 3, ' + b"9" * 400 + b"]]}", 422, "equal lengths; inputs[0, 3] is "
                                                         "99999999999999999999… (400 digits), too large "
                                                         "for a float"),
    (b'{"inputs": []}', 422, "predict: the inputs are empty (0 samples)"),
    (b'{"inputs": 3}', 422, "predict: inputs must have a batch axis"),
    (b'{"inputs": {"a": [1]}}', 422, "this model takes one input"),
    (b'{"inputs": [[1e999, 2, 3, 4]]}', 422, "predict: inputs"),
    (b'{"inputs": [[' + b"1.0, " * 600 + b"1.0]]}", 413, "the body is 3019 bytes, more than max_body = "
                                                         "2000 bytes; send less per request"),
]


@pytest.mark.parametrize("body, status, words", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_requests_get_predicts_words_and_the_server_goes_on(served, body, status, words):
    r = httpx.post(f"{served.url}/predict", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    answer = r.json()
    assert answer["status"] == status and words in answer["error"], answer
    assert "Traceback" not in r.text and 'File "' not in r.text
    ok = httpx.post(f"{served.url}/predict", json={"inputs": [[1, 2, 3, 4]]})
    assert ok.status_code == 200


def test_a_body_without_a_length_is_cut_at_max_body(served):
    def chunks():
        for _ in range(100):
            yield b"[1.0, 2.0, 3.0, 4.0], "

    r = httpx.post(f"{served.url}/predict", content=chunks())       # chunked: no Content-Length
    assert r.status_code == 413
    assert r.json()["error"] == ("the body is more than max_body = 2000 bytes; send less per request, or "
                                 "start the server with a larger max_body")


def test_routes_of_the_server(served):
    with httpx.Client(base_url=served.url) as client:
        assert client.get("/health").json() == {"status": "ready"}
        info = client.get("/info").json()
        assert info["model"] == "mlp(4, 3, hidden=[16])" and info["inputs"] == [4]
        assert info["outputs"] == [3] and info["parameters"] == 4 * 16 + 16 + 16 * 3 + 3
        assert info["backend"] == "numpy" and info["max_batch"] == 64
        assert info["device"] == "cpu"          # the word fit's r.device says for the same place (issue 28)
        r = client.get("/predict")
        assert r.status_code == 405 and r.json()["error"] == "GET is not allowed on /predict"
        assert client.get("/nothing").json() == {"error": "no route GET /nothing", "status": 404}
        metrics = client.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        text = metrics.text
        assert 'apsi_requests_total{method="GET",route="/health",status="200"} 1' in text
        assert 'apsi_request_seconds_bucket{le="+Inf"}' in text and "apsi_batch_rows_count" in text
        assert 'route="other"' in text          # unknown paths share one label


def test_each_request_has_one_access_log_line(served):
    httpx.get(f"{served.url}/health?probe=log")
    time.sleep(0.2)
    assert any('"GET /health" 200' in line for line in served.err), served.err


@pytest.mark.slow
def test_200_requests_from_32_clients_are_all_answered_right_in_batches(served):
    rng = np.random.default_rng(1)
    bodies = [rng.standard_normal((int(rng.integers(1, 4)), 4)).tolist() for _ in range(200)]

    client = httpx.Client(base_url=served.url, timeout=60, limits=httpx.Limits(max_connections=32))
    with client, ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(lambda rows: client.post("/predict", json={"inputs": rows}), bodies))
    assert [r.status_code for r in answers] == [200] * 200
    for rows, r in zip(bodies, answers):
        # rows computed with other requests' rows may differ from a one-request predict in the last bits
        # (BLAS sums a product differently for different row counts): equal to 1e-12, and each request
        # gets its own rows back
        assert np.allclose(r.json()["outputs"], reference(rows), rtol=1e-12, atol=1e-12)
    metrics = httpx.get(f"{served.url}/metrics").text
    count = _metric(metrics, "apsi_batch_rows_count")
    rows = _metric(metrics, "apsi_batch_rows_sum")
    assert rows / count > 1.0, metrics          # requests were batched together


def _metric(text, name):
    return float(next(line.split()[1] for line in text.splitlines() if line.startswith(name + " ")))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_answers_the_requests_in_flight_and_exits_0(start, sig):
    server = start(MODEL.format(options=""))
    results, rest = [], threading.Event()

    def ask(i):
        # half the body now, the rest after the signal: the request is inside the server when it comes
        post_in_two_halves(server.url, i, rest, results)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: in_flight(server.url) >= 17, "the requests did not arrive")
        server.proc.send_signal(sig)
        wait_for(lambda: refused(server.port), "the server never stopped accepting")   # the signal was taken
    finally:
        rest.set()
    code, out, err = server.finish()
    for t in threads:
        t.join(30)
    assert code == 0, err
    assert sorted(i for i, status, _ in results if status == 200) == list(range(16)), results
    for i, _, answer in results:
        assert np.allclose(answer["outputs"], reference([[i, 1, 2, 3]]), rtol=1e-12, atol=1e-12)
    assert "after serve_model" in out                     # serve_model returned: the program went on
    assert "the requests in flight were answered" in err and "Traceback" not in err


def test_listening_needs_net_and_the_message_names_the_flag(start):
    server = start(MODEL.format(options=""), flags=[], ready=False)
    code, _, err = server.finish()
    assert code == 1
    assert (f"serve_model(host='127.0.0.1', port={server.port}) listening needs permission 'net': run with "
            f"--allow-net=127.0.0.1:{server.port}") in err
    assert 'File "' not in err


def test_a_port_in_use_is_a_clear_error(start):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = start(MODEL.format(options=""), port=port, ready=False)
        code, _, err = server.finish()
    assert code == 1
    assert f"serve_model: port {port} on 127.0.0.1 is already in use" in err and "choose another port" in err


def test_log_false_writes_no_access_lines(start):
    server = start(MODEL.format(options=", log=false"))
    assert httpx.get(f"{server.url}/health").status_code == 200
    code, _, err = server.stop()
    assert code == 0 and '"GET /health"' not in err


@pytest.mark.parametrize("options, words", [
    (", port=0", "serve_model: port must be an int from 1 to 65535, not 0"),
    (", max_batch=0", "serve_model: max_batch must be a positive int"),
    (", max_wait_ms=-1", "serve_model: max_wait_ms must be a number of milliseconds >= 0"),
    (", max_body=\"lots\"", "serve_model: max_body must be a positive number of bytes or a size"),
    (", path=\"predict\"", "serve_model: path must be a URL path starting with '/'"),
    (", backend=\"gpu\"", "serve_model: backend must be one of"),
    (", log=1", "serve_model: log must be true or false"),
    (", workers=0", "serve_model: workers must be an int from 1 to 256 (server processes sharing the port"),
    (", workers=\"2\"", "serve_model: workers must be an int from 1 to 256"),
])
def test_bad_options_are_refused_before_listening(start, options, words):
    server = start(MODEL.format(options=options).replace("port=PORT, port=0", "port=0"), ready=False)
    code, _, err = server.finish()
    assert code == 1 and words in err, err


def test_parameters_of_another_model_are_refused_before_listening(start):
    source = MODEL.format(options="").replace("let p = net.init(seed=3)",
                                              "let p = mlp(4, 2, hidden=[16]).init(seed=3)")
    server = start(source, ready=False)
    code, _, err = server.finish()
    assert code == 1, err
    assert "serve_model: a first predict, on zeros of the model's input shape, failed: predict:" in err


def test_json_floats_carry_every_bit():
    """What the bit-for-bit claim rests on: Python's float repr round-trips through JSON."""
    xs = np.random.default_rng(2).standard_normal(1000)
    assert np.array_equal(np.asarray(json.loads(json.dumps(xs.tolist()))), xs)


DAG = """use layers
use web
let encoder = dense(4, activation="tanh")
let siamese = dag(inputs={a: [3], b: [3]},
                  nodes={ea: [encoder, "a"], eb: [encoder, "b"], d: [merge("sub"), ["ea", "eb"]],
                         score: [dense(1), "d"]},
                  outputs="score")
serve_model(siamese, siamese.init(seed=0), port=PORT, log=false)
"""


def test_a_model_with_named_inputs_takes_a_map_or_a_list(start):
    from apsi_lang.values import Record
    from apsi_layers.layers import dag, dense, merge, predict

    encoder = dense(4, activation="tanh")
    nodes = {"ea": [encoder, "a"], "eb": [encoder, "b"], "d": [merge("sub"), ["ea", "eb"]],
             "score": [dense(1), "d"]}
    net = dag(inputs=Record(a=[3], b=[3]), nodes=Record(**nodes), outputs="score")
    a, b = [[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]], [[0.0, 1.0, 0.0], [2.0, 2.0, 2.0]]
    want = predict(net, net.init(seed=0), [np.asarray(a), np.asarray(b)]).data
    server = start(DAG)
    with httpx.Client(base_url=server.url) as client:
        named = client.post("/predict", json={"inputs": {"a": a, "b": b}})
        assert np.array_equal(named.json()["outputs"], want)
        assert np.array_equal(client.post("/predict", json={"inputs": [a, b]}).json()["outputs"], want)
        r = client.post("/predict", json={"inputs": {"a": a}})
        assert r.status_code == 422 and r.json()["error"] == "predict: the model's inputs are a, b; missing b"
        info = client.get("/info").json()
        assert info["inputs"] == [[3], [3]] and info["input_names"] == ["a", "b"] and info["outputs"] == [1]


def test_the_torch_backend_needs_python_and_says_so(start):
    server = start(MODEL.format(options=", backend=\"torch\""), ready=False)
    code, _, err = server.finish()
    assert code == 1 and "needs permission 'python'" in err and "--allow-python" in err, err


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_with_130(start):
    server = start(MODEL.format(options=", timeout=20"))
    rest = held_request(server.url)
    try:            # the request is in flight (the grace: 20 + 2 s), and the first Ctrl-C was taken
        wait_for(lambda: in_flight(server.url) >= 2, "the request did not arrive")
        server.proc.send_signal(signal.SIGINT)
        wait_for(lambda: refused(server.port), "the first Ctrl-C did not stop the server accepting")
        started = time.monotonic()
        code, out, err = server.stop(signal.SIGINT)
    finally:
        rest.set()
    assert code == 130 and time.monotonic() - started < 5, err
    assert "apsi: interrupted (Ctrl-C)" in err and "after serve_model" not in out


def test_a_request_that_is_not_http_gets_400_and_one_named_line(served):
    with socket.create_connection(("127.0.0.1", served.port)) as s:
        s.sendall(b"GARBAGE\r\n\r\n")
        assert s.recv(1000).startswith(b"HTTP/1.1 400")
    time.sleep(0.2)
    assert "serve_model: Invalid HTTP request received.\n" in served.err, served.err
    assert httpx.get(f"{served.url}/health").status_code == 200


def test_the_example_trains_serves_and_stops(start):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "serve_model.apsi"
    server = start(example.read_text().replace("port=8000", "port=PORT"))
    r = httpx.post(f"{server.url}/predict", json={"inputs": [[0.9, 0.8], [-0.9, 0.8]]})
    scores = np.asarray(r.json()["outputs"])
    assert scores.shape == (2, 2) and list(scores.argmax(axis=1)) == [1, 0]      # it learned the quadrants
    code, out, err = server.stop()
    assert code == 0 and out.startswith("trained: loss ") and out.rstrip().endswith("stopped"), (out, err)


@pytest.mark.slow
@pytest.mark.torch
def test_the_torch_backend_serves_what_predict_gives_on_torch(start):
    pytest.importorskip("torch")
    from apsi_lang import permissions
    from apsi_layers.layers import mlp, predict

    server = start(MODEL.format(options=", backend=\"torch\", device=\"cpu\""),
                   flags=["--allow-python", "--allow-net"])
    rows = [[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, 1.0, 1.0]]
    r = httpx.post(f"{server.url}/predict", json={"inputs": rows})
    assert r.status_code == 200, r.text
    assert httpx.get(f"{server.url}/info").json()["backend"] == "torch"
    net = mlp(4, 3, hidden=[16])
    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset({"python"})))
    try:
        want = predict(net, net.init(seed=3), np.asarray(rows), backend="torch", device="cpu").data
    finally:
        permissions.set_current(before)
    assert np.array_equal(np.asarray(r.json()["outputs"]), want)
    assert np.allclose(want, reference(rows), rtol=1e-5, atol=1e-6)     # (torch computes in float32)


def test_null_is_a_missing_value_for_a_model_that_imputes(start):
    """JSON has no NaN (the 400 says "write null"): for a model starting with impute(), null is the
    missing value it fills, as NaN in predict; for other models it stays an error."""
    server = start("""use layers
use nn
use web
let net = sequential(impute(), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[2]), array([[1.0, 10.0], [3.0, nan], [5.0, 30.0]]))
serve_model(net, p, port=PORT, log=false)
""")
    with httpx.Client(base_url=server.url) as client:
        got = client.post("/predict", json={"inputs": [[1.0, None], [None, 20.0], [3.0, 20.0]]})
        filled = client.post("/predict", json={"inputs": [[1.0, 20.0], [3.0, 20.0], [3.0, 20.0]]})
        text = client.post("/predict", json={"inputs": [[1.0, "a"]]})
    assert got.status_code == 200, got.text
    # null became the mean adapt saw in its column (3 and 20)
    assert np.array_equal(got.json()["outputs"], filled.json()["outputs"])
    assert text.status_code == 422 and 'inputs[0, 1] is "a", not a number' in text.json()["error"]


def test_rows_wider_than_the_model_are_refused(start):
    """A model that picks its columns (a lambda_layer's v[:, 0:3]) computed on rows of any width: a
    client sending 5 columns to a model of 4 (misaligned, or another table) got answers."""
    server = start("""use layers
use web
let net = sequential(parallel(lambda_layer(fn(v) => v[:, 0:3]), lambda_layer(fn(v) => v[:, 3:4])), dense(2))
serve_model(net, net.init(seed=0, input_shape=[4]), port=PORT, log=false)
""")
    with httpx.Client(base_url=server.url) as client:
        wide = client.post("/predict", json={"inputs": [[1.0, 2.0, 3.0, 4.0, 5.0]]})
        right = client.post("/predict", json={"inputs": [[1.0, 2.0, 3.0, 4.0]]})
    assert wide.status_code == 422, wide.text
    assert "expects 4 input features per sample and got 5" in wide.json()["error"]
    assert right.status_code == 200 and np.shape(right.json()["outputs"]) == (1, 2), right.text
