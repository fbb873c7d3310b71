"""`apsi serve model.apsim` end to end with an HTTP client, and export_onnx against ONNX Runtime."""

import importlib.util
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from .conftest import apsi

SAVE = '''
use layers
use nn
let net = mlp(3, 3, hidden=[8])
let p = net.init(seed=0)
save_model("m.apsim", net, p, labels=["red", "green", "blue"])
save_params("p.npz", p)
'''


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid):
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_ready(proc, url, httpx):
    deadline = time.monotonic() + 60                     # a hang guard, not a timing check
    while True:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)


def _answers_of_each_worker(url, httpx, x):
    """{worker pid: /predict's answer}, asked on kept-open connections (one worker each) until two
    workers have answered: the server deals new connections to the worker holding the fewest (a
    busy one's turn passes after a moment, hence the loop; its deadline is only a hang guard)."""
    clients, answers = [], {}
    deadline = time.monotonic() + 60
    try:
        while len(answers) < 2 and time.monotonic() < deadline:
            c = httpx.Client(base_url=url, timeout=60)
            clients.append(c)
            pid = c.get("/info").json()["worker"]
            if pid in answers:
                time.sleep(0.05)
                continue
            answers[pid] = c.post("/predict", json={"inputs": x}).json()    # the same connection
    finally:
        for c in clients:
            c.close()
    return answers


@pytest.mark.skipif(sys.platform != "linux", reason="fork and /proc")
def test_apsi_serve_model_file_with_two_workers(tmp_path):
    httpx = pytest.importorskip("httpx")
    (tmp_path / "s.apsi").write_text(SAVE)
    assert apsi(["s.apsi"], tmp_path).returncode == 0
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "serve", "m.apsim", "--port", str(port),
                             "--workers", "2", f"--allow-net=127.0.0.1:{port}"], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True)
    x = [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]
    try:
        _wait_ready(proc, url, httpx)
        answers = _answers_of_each_worker(url, httpx, x)
        info = httpx.get(f"{url}/info").json()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        err = proc.stderr.read()
    assert code == 0, err
    assert len(answers) == 2 and info["workers"] == 2, answers
    assert "with 2 worker processes" in err and "Traceback" not in err
    deadline = time.monotonic() + 30                 # the workers exit with the parent (hang guard)
    while any(_alive(pid) for pid in answers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in answers if _alive(pid)]
    p = np.load(tmp_path / "p.npz")
    h = np.maximum(np.array(x) @ p["dense.w"] + p["dense.b"], 0)      # mlp: dense, relu, dense
    logits = h @ p["dense_1.w"] + p["dense_1.b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    for answer in answers.values():
        np.testing.assert_allclose(answer["outputs"], logits, rtol=1e-12)
        np.testing.assert_allclose(answer["probabilities"], e / e.sum(axis=1, keepdims=True), rtol=1e-12)
        assert answer["labels"] == [["red", "green", "blue"][i] for i in logits.argmax(axis=1)]


def test_apsi_serve_needs_net(tmp_path):
    (tmp_path / "s.apsi").write_text(SAVE)
    assert apsi(["s.apsi"], tmp_path).returncode == 0
    r = apsi(["serve", "m.apsim", "--port", str(_free_port())], tmp_path, timeout=60)
    assert r.returncode == 1 and "needs permission 'net'" in r.stderr and 'File "' not in r.stderr


@pytest.mark.torch
@pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("torch", "onnx", "onnxruntime")),
                    reason="export_onnx needs PyTorch, onnx and onnxruntime (CI installs them: .ci/run)")
def test_export_onnx_matches_predict(tmp_path):
    (tmp_path / "e.apsi").write_text('''
use layers
use nn
let net = sequential(dense(8, activation="tanh", inputs=4), layer_norm(), dense(3))
let p = net.init(seed=0)
export_onnx(net, p, "m.onnx")
let x = randn(5, 4, seed=1)
save_params("io.npz", {x: x, y: predict(net, p, x)})
''')
    r = apsi(["--allow-python", "e.apsi"], tmp_path)
    assert r.returncode == 0, r.stderr
    import onnxruntime

    io = np.load(tmp_path / "io.npz")
    session = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"inputs": io["x"].astype(np.float32)})
    np.testing.assert_allclose(out, io["y"], atol=1e-5, rtol=0)


def test_export_onnx_needs_python(tmp_path):
    (tmp_path / "e.apsi").write_text('use layers\nlet net = mlp(2, 2)\n'
                                     'export_onnx(net, net.init(seed=0), "m.onnx")\n')
    r = apsi(["e.apsi"], tmp_path)
    assert r.returncode == 1 and "needs permission 'python'" in r.stderr


def test_labels_are_checked_against_the_outputs(tmp_path):
    """save_model took one label for three classes (predict_labels failed later); serve_model of a record
    whose labels do not fit served, and answered every request 422 (the client's fault) for it."""
    port = _free_port()
    (tmp_path / "p.apsi").write_text(
        'use layers\nuse web\nlet net = mlp(3, 3, hidden=[8])\nlet p = net.init(seed=0)\n'
        'try:\n    save_model("m.apsim", net, p, labels=["red"])\ncatch e:\n    print(e.message)\n'
        f'serve_model({{net: net, params: p, labels: ["red"]}}, port={port})\n')
    r = apsi([f"--allow-net=127.0.0.1:{port}", "p.apsi"], tmp_path, timeout=120)
    assert "save_model: the model gives 3 classes but 1 labels were given" in r.stdout, r.stdout + r.stderr
    assert not (tmp_path / "m.apsim").exists()
    assert r.returncode == 1, r.stderr
    assert "serve_model: the model gives 3 classes but has 1 labels" in r.stderr
    assert 'File "' not in r.stderr
