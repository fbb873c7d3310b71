"""The forms of the torch backend's issue, run from Apsi as written (CPU in place of CUDA here: the GPU
paths are covered by the fake-device tests), and torch imported only when it is used."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

PROGRAM = """
use layers
use nn
let text = "to be or not to be that is the question whether tis nobler in the mind to suffer"
let letters = "abcdefghijklmnopqrstuvwxyz "
let vocab = len(letters)
let ids = [letters.index(c) for c in text]
let inputs = [ids[i:i + 8] for i in range(40)]
let targets = [ids[i + 1:i + 9] for i in range(40)]
let prompt = [ids[0:8]]
let lm = transformer_lm(vocab, d=16, heads=2, layers=1, context=8, dropout=0.1)
let r = fit(lm, lm.init(seed=0), inputs, targets, loss="cross_entropy",
            opt=adamw(lr=3e-4, weight_decay=0.1), epochs=2, batch_size=8, clip=1.0,
            schedule=fn(s) => cosine_lr(s, 20000, base=3e-4, warmup=500),
            backend="torch", device="cpu", precision="bf16", compile=false)
print("trained on", r.device, "· last loss", r.history[-1])
save_params("lm.npz", r.params)
let logits = predict(lm, r.params, prompt, backend="torch", device="cpu")
print(logits.shape)
for d in devices():
    print(d.name, d.kind, d.detail)
let torch = pyimport("torch")
let net = resnet_mlp(16, 4, width=128, blocks=4)
let m = torch_module(net, net.init(seed=0), device="cpu")
print(m)
let y = m(torch.randn(8, 16))
let params = params_from_torch(net, m)
print(y.shape, param_count(params))
check_torch(device="cpu")
"""


def apsi(*args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, "-m", "apsi", *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=timeout)


def test_the_issue_program_runs_as_written(tmp_path):
    (tmp_path / "train.apsi").write_text(PROGRAM)
    out = apsi("--allow-python", "train.apsi", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("trained on cpu · last loss ")
    assert lines[1] == "(1, 8, 27)"
    assert lines[2].startswith("numpy cpu NumPy ") and lines[3].startswith("cpu cpu PyTorch ")
    # width=128, blocks=4 are the defaults: a model's text shows only the options that differ
    assert any(line.startswith("ApsiModule(resnet_mlp(16, 4), ") for line in lines)
    assert any(line.startswith("torch.Size([8, 4]) ") for line in lines)
    assert (tmp_path / "lm.npz").exists()
    assert lines[-1].startswith("OK: largest difference ") and any(line.startswith("gat ") for line in lines)


def test_devices_from_the_command_line():
    out = apsi("--allow-python", "-e", "use layers; devices()")
    assert out.returncode == 0, out.stderr
    assert 'name: "numpy"' in out.stdout and 'name: "cpu"' in out.stdout
    without = apsi("-e", "use layers; devices()")
    assert 'name: "numpy"' in without.stdout and 'name: "cpu"' not in without.stdout


def test_the_torch_names_need_python():
    out = apsi("-e", "use layers; torch_module(mlp(2, 1), mlp(2, 1).init(seed=0))")
    assert out.returncode != 0
    assert "torch_module needs permission 'python'" in out.stderr
    out = apsi("-e", 'use layers; check_torch(device="cpu")')
    assert "check_torch needs permission 'python'" in out.stderr


def test_torch_is_imported_only_when_used():
    code = ("import sys\n"
            "from apsi_lang import run_source\n"
            "run_source('use layers\\nuse nn\\nlet net = mlp(2, 1, hidden=[3])\\n"
            "let r = fit(net, net.init(seed=0), [[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0], loss=\"mse\", "
            "verbose=false, backend=\"auto\")\\nlet d = devices()\\n')\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    out = apsi("-e", "print(1)")
    assert out.stdout.strip() == "1"


# runs the `apsi` command in this process, then says whether torch was imported
LOADED = """
import runpy, sys
sys.argv = ["apsi"] + sys.argv[1:]
try:
    runpy.run_module("apsi", run_name="__main__")
except SystemExit:
    pass
print("torch loaded:", "torch" in sys.modules, file=sys.__stdout__)
"""


@pytest.mark.parametrize("args,loaded", [
    (["-e", "use layers; print(1)"], False),
    (["--allow-python", "-e", "use layers; print(param_count(mlp(2, 1).init(seed=0)))"], False),
    (["-e", "use layers; devices()"], False),                       # no `python`: the NumPy entry only
    (["--allow-python", "-e", 'let t = pyimport("torch"); print(1)'], True),
    (["--allow-python", "-e", "use layers; devices()"], True),
])
def test_the_apsi_command_imports_torch_only_when_it_is_used(args, loaded):
    out = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, env=ENV,
                         cwd=ROOT, timeout=300)
    assert out.stdout.splitlines()[-1] == f"torch loaded: {loaded}", out.stdout + out.stderr


OWN_FUNCTIONS = """
use layers
use nn
let xs = [[1.0, 2.0, 0.5], [0.0, -1.0, 2.0], [3.0, 1.0, -2.0], [0.5, 0.5, 0.5]]
let ys = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
let my_loss = fn(p, t) => mean((softmax(p) - t) ** 2) + 0.01 * mean(abs(p))
let net = sequential(dense(8, inputs=3), activation(fn(v) => tanh(v) * 2.0),
                     lambda_layer(fn(v) => v * sigmoid(v)), dense(2))
let a = fit(net, net.init(seed=0), xs, ys, loss=my_loss, epochs=3, batch_size=2, verbose=false)
let b = fit(net, net.init(seed=0), xs, ys, loss=my_loss, epochs=3, batch_size=2, verbose=false,
            backend="torch", precision="fp64")
print(b.backend, max([abs(a.history[i] - b.history[i]) for i in range(3)]) < 1e-14)
let bad = sequential(dense(4, inputs=3), lambda_layer(fn(v) => grad(fn(y) => sum(y * y))(v)), dense(2))
fit(bad, bad.init(seed=0), xs, ys, loss="mse", verbose=false, backend="torch")
"""


def test_apsi_written_loss_activation_and_lambda_run_on_torch(tmp_path):
    (tmp_path / "own.apsi").write_text(OWN_FUNCTIONS)
    out = apsi("--allow-python", "own.apsi", cwd=tmp_path)
    assert out.stdout.splitlines() == ["torch true"], out.stderr
    assert out.returncode == 1
    assert "own.apsi:14:1: error: the torch backend has no implementation of nn." in out.stderr
    assert "lambda_layer(fn, torch_fn=...)" in out.stderr and "Traceback (most recent call last):\n  File" \
        not in out.stderr


def test_the_issue_program_on_cuda_says_there_is_no_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    start = PROGRAM.index("let lm = ")
    program = PROGRAM[:start] + ISSUE_FIT
    (tmp_path / "train.apsi").write_text(program)
    out = apsi("--allow-python", "train.apsi", cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == ""
    error = out.stderr.strip().splitlines()[-1]
    assert error.startswith('train.apsi:12:9: error: fit: device="cuda": PyTorch sees no CUDA/ROCm GPU: '), \
        error
    assert "apsi pkg install torch-auto" in error and 'device="auto"' in error


# the issue's first lines, exactly as written
ISSUE_FIT = """let lm = transformer_lm(vocab, d=256, heads=8, layers=6, context=256, dropout=0.1)
let r = fit(lm, lm.init(seed=0), inputs, targets, loss="cross_entropy",
            opt=adamw(lr=3e-4, weight_decay=0.1), epochs=10, batch_size=64, clip=1.0,
            schedule=fn(s) => cosine_lr(s, 20000, base=3e-4, warmup=500),
            backend="torch", device="cuda", precision="bf16", compile=true)
print("trained on", r.device, "· last loss", r.history[-1])
"""


def test_the_troubleshooting_table_lists_the_messages():
    table = (ROOT / "docs" / "backends.md").read_text().split("## 8. Troubleshooting")[1]
    for start in ("fit(backend=\"torch\") needs permission 'python'", 'backend="torch" needs PyTorch',
                  'device="cuda": PyTorch sees no CUDA/ROCm GPU',
                  'precision="fp64" is not supported on Apple MPS',
                  "the torch backend has no implementation of",
                  "torch.compile failed (…); continuing eagerly"):
        assert f"| `{start}" in table, start
