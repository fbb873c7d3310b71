"""The forms the product documentation shows must parse and run as written.

`layers` is a later issue; until it exists a stub layers.apsi beside the program stands in for it
(`use NAME` finds NAME.apsi when no installed package provides NAME). The program text is the
documentation's, unchanged.
"""

import subprocess
import sys
import textwrap

import pytest

STUB = '''
use nn
fn transformer_lm(vocab, d=256, heads=8, layers=6, context=256, dropout=0.1):
    return {vocab: vocab, init: fn(seed=0) => {w: zeros(2) + seed}}
fn fit(model, params, inputs, targets, loss="mse", opt=none, epochs=1, batch_size=32, clip=none,
       schedule=none, backend="numpy", device="cpu", precision="fp32", compile=false):
    return {device: device, history: [schedule(0), schedule(500)], params: params}
fn devices():
    return [{name: "numpy", kind: "cpu", detail: "stub"}]
fn check_torch(device="auto"):
    print("checked on", device)
'''

TRAIN = '''
use layers
use nn
let vocab = 100
let inputs = [[1, 2]]
let targets = [[2, 3]]
let lm = transformer_lm(vocab, d=256, heads=8, layers=6, context=256, dropout=0.1)
let r = fit(lm, lm.init(seed=0), inputs, targets, loss="cross_entropy",
            opt=adamw(lr=3e-4, weight_decay=0.1), epochs=10, batch_size=64, clip=1.0,
            schedule=fn(s) => cosine_lr(s, 20000, base=3e-4, warmup=500),
            backend="torch", device="cuda", precision="bf16", compile=true)
print("trained on", r.device, "· last loss", r.history[-1])
save_params("lm.npz", r.params)
for d in devices():
    print(d.name, d.kind, d.detail)
let torch = pyimport("math")
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "layers.apsi").write_text(STUB)
    (tmp_path / "train.apsi").write_text(textwrap.dedent(TRAIN))
    return tmp_path


def apsi(args, cwd):
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("form", [["run", "--allow-python", "train.apsi"], ["--allow-python", "train.apsi"]])
def test_training_program_runs(project, form):
    r = apsi(form, project)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "trained on cuda · last loss 0.0003\nnumpy cpu stub\n"
    assert (project / "lm.npz").is_file()


def test_without_python_permission_pyimport_is_refused(project):
    r = apsi(["train.apsi"], project)
    assert r.returncode == 1
    assert "pyimport(\"math\") needs permission 'python'" in r.stderr


def test_e_forms(project):
    r = apsi(["--allow-python", "-e", "use layers; devices()"], project)
    assert r.returncode == 0, r.stderr
    assert r.stdout == '[{name: "numpy", kind: "cpu", detail: "stub"}]\n'
    r = apsi(["-e", 'use layers; check_torch(device="cpu")'], project)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "checked on cpu\n"
