"""Issue 28: reduce_lr= (Keras's ReduceLROnPlateau) and csv_log= (Keras's CSVLogger) on both backends,
saved in checkpoints: a run interrupted and resumed equals one run, CSV file included."""

import csv
import math
import subprocess
import sys

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp

rng = np.random.default_rng(5)
X = rng.standard_normal((64, 3))
Y = X[:, :1] * 2.0 - X[:, 1:2]
NET = mlp(3, 1, hidden=[8])
P = NET.init(seed=0)
RULE = {"monitor": "val_loss", "factor": 0.5, "patience": 1, "min_delta": 0.02, "cooldown": 1,
        "min_lr": 0.01}
BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]


@pytest.fixture(autouse=True)
def grants(project_with_python):
    return project_with_python


def _kw(backend, **extra):
    kw = dict(loss="mse", opt=nn.sgd(lr=0.1), batch_size=16, seed=1, verbose=False, validation_split=0.25,
              metrics=["mae"], reduce_lr=RULE)
    if backend == "torch":
        pytest.importorskip("torch")
        kw.update(backend="torch", precision="fp64")
    kw.update(extra)
    return kw


def keras_rates(values, lr, factor, patience, min_delta, cooldown, min_lr, mode="min"):
    """The rate of each epoch under ReduceLROnPlateau as Keras documents it, from the monitored values."""
    best, wait, cool, rates = (math.inf if mode == "min" else -math.inf), 0, 0, []
    for v in values:
        rates.append(lr)
        if cool > 0:
            cool, wait = cool - 1, 0
        if (v < best - min_delta) if mode == "min" else (v > best + min_delta):
            best, wait = v, 0
        elif cool == 0:
            wait += 1
            if wait >= patience and lr > min_lr:
                lr, cool, wait = max(lr * factor, min_lr), cooldown, 0
    return rates, lr


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_rate_follows_keras_reduce_lr_on_plateau(backend):
    r = fit(NET, P, X, Y, epochs=12, **_kw(backend))
    rule = {k: v for k, v in RULE.items() if k != "monitor"}
    rates, last = keras_rates(r.val_history, 0.1, **rule)
    assert r.lr_history == rates
    assert len(set(rates)) >= 3 and rates[-1] == 0.01          # it did reduce, down to min_lr
    assert r.opt.lr == last                                     # opt=r.opt continues at the reduced rate


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_reduced_rate_is_the_rate_the_steps_use(backend):
    """A fit with reduce_lr equals, bit for bit, one whose schedule gives each epoch the same rates."""
    r = fit(NET, P, X, Y, epochs=10, **_kw(backend))
    steps = 3                                                   # 48 training samples, batch 16
    same = fit(NET, P, X, Y, epochs=10, **_kw(backend, reduce_lr=None,
                                             schedule=lambda s: r.lr_history[s // steps]))
    assert same.history == r.history and same.val_history == r.val_history


def test_mode_max_and_cooldown_and_min_lr():
    kw = _kw("numpy", reduce_lr={"monitor": "val_mae", "mode": "max", "factor": 0.2, "patience": 2,
                                 "cooldown": 2, "min_lr": 0.0})
    r = fit(NET, P, X, Y, epochs=10, **kw)
    rates, _ = keras_rates(r.val_metrics.mae, 0.1, 0.2, 2, 1e-4, 2, 0.0, mode="max")
    assert r.lr_history == rates and len(set(rates)) > 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stop", [4, 6])        # 6: just after a reduction, in its cooldown
def test_an_interrupted_and_resumed_run_equals_one_run_csv_included(backend, stop, tmp_path):
    kw = _kw(backend)
    whole = fit(NET, P, X, Y, epochs=9, csv_log="whole.csv", **kw)

    def ctrl_c(epoch, logs):
        if epoch == stop:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        fit(NET, P, X, Y, epochs=9, csv_log="part.csv", checkpoint="run.ckpt", on_epoch=ctrl_c, **kw)
    assert len((tmp_path / "part.csv").read_text().splitlines()) == 1 + stop
    rest = fit(NET, P, X, Y, epochs=9, csv_log="part.csv", resume="run.ckpt", **kw)
    assert rest.history == whole.history and rest.lr_history == whole.lr_history
    assert rest.val_metrics.mae == whole.val_metrics.mae
    for (_, a), (_, b) in zip(nn.flatten(rest.params), nn.flatten(whole.params), strict=True):
        assert np.array_equal(a.data, b.data)
    assert (tmp_path / "part.csv").read_text() == (tmp_path / "whole.csv").read_text()
    assert len(set(whole.lr_history)) > 1                      # the reduction happened across the break


def test_the_csv_log_is_epoch_and_every_key_one_row_per_epoch(tmp_path):
    r = fit(NET, P, X, Y, epochs=5, csv_log="h.csv", **_kw("numpy"))
    with open(tmp_path / "h.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "lr", "mae", "val_loss", "val_mae"]    # sorted, as CSVLogger
    cols = {k: [float(row[i]) for row in rows[1:]] for i, k in enumerate(rows[0])}
    assert cols["epoch"] == [1, 2, 3, 4, 5]
    assert cols["loss"] == r.history and cols["val_loss"] == r.val_history      # repr: exact floats
    assert cols["mae"] == r.metrics.mae and cols["lr"] == r.lr_history
    assert not [p for p in tmp_path.iterdir() if p.name != "h.csv"]             # no temporary left


def test_the_csv_log_follows_the_write_rules(tmp_path):
    outside = tmp_path.parent / "elsewhere.csv"
    with pytest.raises(ApsiError, match=r"fit\(csv_log=.*\) needs permission 'write'"):
        fit(NET, P, X, Y, epochs=1, csv_log=str(outside), **_kw("numpy"))
    assert not outside.exists()
    protected = r"fit\(csv_log=\"apsi.toml\"\) needs permission 'write' for apsi.toml: it is a protected file"
    with pytest.raises(ApsiError, match=protected):
        fit(NET, P, X, Y, epochs=1, csv_log="apsi.toml", **_kw("numpy"))


@pytest.mark.parametrize("kw, message", [
    ({"reduce_lr": {"factor": 1.5}}, r"reduce_lr factor must be a number in \[0, 1\)"),
    ({"reduce_lr": {"patience": -1}}, "reduce_lr patience must be an int >= 0"),
    ({"reduce_lr": {"wait": 2}}, "reduce_lr has no field 'wait'; the fields are monitor, factor"),
    ({"reduce_lr": {"monitor": "val_acc"}},
     r"reduce_lr monitor=\"val_acc\" is not one of loss, mae, val_loss"),
    ({"reduce_lr": {"cooldown": 0.5}}, "reduce_lr cooldown must be an int >= 0"),
    ({"reduce_lr": {"min_lr": -1}}, "reduce_lr min_lr must be a number >= 0"),
    ({"reduce_lr": 3}, "reduce_lr must be true"),
    ({"reduce_lr": {}, "schedule": lambda s: 0.1}, "reduce_lr sets the learning rate, which a schedule"),
    ({"reduce_lr": {}, "opt": nn.sgd(lr=lambda s: 0.1)}, "reduce_lr sets the learning rate"),
    ({"reduce_lr": {"monitor": "val_loss"}, "validation_split": None},
     r"there is no validation data: give val= or validation_split="),
    ({"csv_log": 3}, 'csv_log must be a file name like "history.csv"'),
])
def test_plateau_and_csv_mistakes_are_named(kw, message):
    with pytest.raises(ApsiError, match=message):
        fit(NET, P, X, Y, epochs=1, **_kw("numpy", **kw))


def test_a_resume_with_another_rule_is_refused():
    fit(NET, P, X, Y, epochs=2, checkpoint="run.ckpt", **_kw("numpy"))
    with pytest.raises(ApsiError, match="reduce_lr differs"):
        fit(NET, P, X, Y, epochs=4, resume="run.ckpt", **_kw("numpy", reduce_lr=dict(RULE, factor=0.2)))


def test_an_apsi_program_reduces_its_rate_and_logs_each_epoch(tmp_path):
    (tmp_path / "p.apsi").write_text("""use layers
use nn
let x = randn(64, 3, seed=2)
let y = x[:, 0:1] * 2.0
let net = mlp(3, 1, hidden=[8])
let r = fit(net, net.init(seed=0), x, y, loss="mse", opt=sgd(lr=0.1), epochs=8, verbose=false,
            batch_size=16, reduce_lr={monitor: "loss", factor: 0.5, patience: 1, min_delta: 0.05},
            csv_log="h.csv")
print(r.lr_history[0], r.lr_history[-1] < 0.1, r.opt.lr == r.lr_history[-1] * 0.5 or r.opt.lr)
""")
    p = subprocess.run([sys.executable, "-m", "apsi", "p.apsi"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[:2] == ["0.1", "true"]
    rows = (tmp_path / "h.csv").read_text().splitlines()
    assert rows[0] == "epoch,loss,lr" and len(rows) == 9 and rows[1].startswith("1,")
