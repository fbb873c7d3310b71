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


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_apsi_serve_model_file(tmp_path):
    httpx = pytest.importorskip("httpx")
    (tmp_path / "s.apsi").write_text(SAVE)
    assert apsi(["s.apsi"], tmp_path).returncode == 0
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "serve", "m.apsim", "--port", str(port),
                             f"--allow-net=127.0.0.1:{port}"], cwd=tmp_path,
                                 stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.1)
        x = [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]
        answer = httpx.post(f"http://127.0.0.1:{port}/predict", json={"inputs": x}).json()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    assert code == 0
    p = np.load(tmp_path / "p.npz")
    h = np.maximum(np.array(x) @ p["dense.w"] + p["dense.b"], 0)      # mlp: dense, relu, dense
    logits = h @ p["dense_1.w"] + p["dense_1.b"]
    np.testing.assert_allclose(answer["outputs"], logits, rtol=1e-12)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
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
