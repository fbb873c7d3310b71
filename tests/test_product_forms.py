"""The forms the product documentation shows run as written from Apsi (small sizes, same code)."""

import subprocess
import sys
import textwrap

import pytest

TRAIN = '''
use layers
use nn
let vocab = 12
let inputs = randint(0, vocab, [16, 8], seed=1)
let targets = randint(0, vocab, [16, 8], seed=2)
let prompt = randint(0, vocab, [1, 5], seed=3)
let lm = transformer_lm(vocab, d=16, heads=2, layers=1, context=8, dropout=0.1)
let r = fit(lm, lm.init(seed=0), inputs, targets, loss="cross_entropy",
            opt=adamw(lr=3e-4, weight_decay=0.1), epochs=2, batch_size=4, clip=1.0,
            schedule=fn(s) => cosine_lr(s, 20000, base=3e-4, warmup=500))
print("trained on", r.device, "· last loss", r.history[-1])
save_params("lm.npz", r.params)             # r.params is a normal parameter tree
let logits = predict(lm, r.params, prompt)
print(logits.shape)
let net = resnet_mlp(16, 4, width=128, blocks=4)
let p = net.init(seed=0)
print(param_count(p))
let back = load_params("lm.npz", like=r.params)
print(max(abs(predict(lm, back, prompt) - logits)))
'''


def apsi(args, cwd):
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.apsi").write_text(textwrap.dedent(TRAIN))
    return tmp_path


def test_training_program_runs(project):
    r = apsi(["train.apsi"], project)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("trained on cpu · last loss 2.")
    assert lines[1:] == ["(1, 5, 12)", "136068", "0.0"]
    assert (project / "lm.npz").is_file()


def test_torch_backend_needs_permission(project):
    (project / "t.apsi").write_text(textwrap.dedent('''
        use layers
        use nn
        let net = mlp(2, 2, hidden=[4])
        fit(net, net.init(seed=0), [[0.0, 1.0]], [1], loss="cross_entropy", backend="torch")
    '''))
    r = apsi(["t.apsi"], project)
    assert r.returncode == 1
    assert "fit(backend=\"torch\") needs permission 'python': run with --allow-python" in r.stderr
    assert "t.apsi:5" in r.stderr
    assert "apsi_layers" not in r.stderr and ".py\"" not in r.stderr     # no Python frames
