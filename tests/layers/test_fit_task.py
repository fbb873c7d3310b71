"""Issue 28: metrics with a custom loss. task= says how the model's outputs become classes, so a loss
function (weighted, focal, label-smoothed…) keeps accuracy; an ambiguous request is refused."""

import subprocess
import sys

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp, predict

rng = np.random.default_rng(3)
N = 40
X = rng.standard_normal((N, 4))
Y = np.argmax(X[:, :3], axis=1)
NET = mlp(4, 3, hidden=[8])
P = NET.init(seed=0)
BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]


def _on(backend):
    if backend == "torch":
        pytest.importorskip("torch")
        return {"backend": "torch", "precision": "fp64"}
    return {}


def smoothed(pred, target):
    """Cross-entropy against label-smoothed one-hot targets: a loss fit does not know by name."""
    logp = nn.log_softmax(pred, axis=-1)
    soft = nn.Tensor(np.eye(3)[np.asarray(target.data, dtype=int)] * 0.9 + 0.1 / 3)
    return -nn.mean(nn.sum(soft * logp, axis=-1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loss_function_with_task_multiclass_keeps_accuracy(backend, python_allowed):
    r = fit(NET, P, X, Y, loss=smoothed, task="multiclass", metrics=["accuracy", "top5"], epochs=2,
            val=[X[:10], Y[:10]], verbose=False, **_on(backend))
    out = predict(NET, r.params, X).data
    assert r.metrics.accuracy[-1] == np.mean(np.argmax(out, axis=1) == Y)
    assert r.val_metrics.accuracy[-1] == np.mean(np.argmax(out[:10], axis=1) == Y[:10])
    assert r.metrics.top5[-1] == 1.0


def test_one_hot_targets_and_binary_tasks():
    one_hot = np.eye(3)[Y]
    r = fit(NET, P, X, one_hot, loss="mse", task="multiclass", metrics=["accuracy"], verbose=False)
    out = predict(NET, r.params, X).data
    assert r.metrics.accuracy[-1] == np.mean(np.argmax(out, axis=1) == Y)       # argmax of both
    net = mlp(4, 1, hidden=[8], activation="tanh")
    t = (X[:, 0] > 0.2).astype(float)
    for task, cut in (("binary", 0.0), ("binary_probability", 0.5)):
        r = fit(net, net.init(seed=0), X, t, loss="mse", task=task, metrics=["accuracy"], verbose=False)
        out = predict(net, r.params, X).data[:, 0]
        assert r.metrics.accuracy[-1] == np.mean((out > cut) == (t > 0.5))


@pytest.mark.parametrize("kw, message", [
    ({"loss": smoothed}, r"'accuracy' needs to know how the model's outputs become classes, which a loss "
                         r'function does not say: give task="multiclass"'),
    ({"loss": "mse", "targets": np.eye(3)[Y]}, r'needs loss="cross_entropy" or "bce" \(classes\), or task='),
    ({"loss": smoothed, "task": "regression"}, r"'accuracy' needs loss=\"cross_entropy\" or \"bce\""),
    ({"loss": "cross_entropy", "task": "binary"}, r'task="binary" does not fit loss="cross_entropy" \(its '
                                                  r'task is "multiclass"\)'),
    ({"loss": smoothed, "task": "multi"}, r"unknown task 'multi'.*multiclass"),
    ({"loss": smoothed, "task": "binary", "metrics": ["top5"]}, r"'top5' needs loss=\"cross_entropy\" or "
                                                               r"task=\"multiclass\""),
    ({"loss": smoothed, "task": "multiclass", "metrics": ["mae"]}, r"'mae' compares numbers; with "
                                                                   r'task="multiclass" use accuracy'),
    ({"loss": smoothed, "task": "binary"}, r'accuracy with task="binary" needs 0/1 targets of the output\'s '
                                           r"shape \[3\], but the targets have per-sample shape \[\]"),
])
def test_ambiguous_or_wrong_tasks_are_refused(kw, message):
    kw = dict({"metrics": ["accuracy"], "verbose": False}, **kw)
    targets = kw.pop("targets", Y)
    with pytest.raises(ApsiError, match=message):
        fit(NET, P, X, targets, **kw)


def test_a_resume_with_another_task_is_refused(project_with_python):
    net = mlp(4, 1, hidden=[4])
    t = (X[:, 0] > 0).astype(float)
    kw = dict(loss="mse", metrics=["accuracy"], verbose=False)
    fit(net, net.init(seed=0), X, t, epochs=1, checkpoint="c.ckpt", task="binary", **kw)
    with pytest.raises(ApsiError, match="task differs"):
        fit(net, net.init(seed=0), X, t, epochs=2, resume="c.ckpt", task="binary_probability", **kw)


def test_an_apsi_program_keeps_accuracy_with_its_own_loss(tmp_path):
    (tmp_path / "t.apsi").write_text("""use layers
use nn
let x = randn(64, 3, seed=2)
let y = argmax(x, axis=1)
fn focal(pred, target):
    let p = softmax(pred, axis=-1)
    let pt = sum(p * one_hot(target, 3), axis=-1)
    return mean(-((1 - pt) ** 2) * log(pt))
let net = mlp(3, 3, hidden=[8])
let r = fit(net, net.init(seed=0), x, y, loss=focal, task="multiclass", metrics=["accuracy"], epochs=3,
            verbose=false)
let hits = accuracy(y, argmax(predict(net, r.params, x), axis=1))
print(len(r.metrics.accuracy), r.metrics.accuracy[-1] == hits)
try:
    fit(net, net.init(seed=0), x, y, loss=focal, metrics=["accuracy"], verbose=false)
catch e:
    print(e.message)
""")
    p = subprocess.run([sys.executable, "-m", "apsi", "t.apsi"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "3 true"
    assert lines[1].startswith("fit: metrics: 'accuracy' needs to know how the model's outputs become")
