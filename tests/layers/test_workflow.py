"""Issue 18: the training workflow. Checkpoints and exact resume (4 epochs at once == 2 + resume 2,
bit for bit, on NumPy and torch fp64; to rounding on fp32), metrics checked against independent
formulas, validation_split, early stopping, on_epoch, r.opt, and stops that keep what was trained."""

import numpy as np
import pytest

from apsi_lang import interactive
from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.layers import fit, mlp, predict

rng = np.random.default_rng(0)
X = rng.standard_normal((64, 5))
Y = (X[:, 0] - X[:, 1] > 0).astype(int) + (X[:, 2] > 1).astype(int)
NET = mlp(5, 3, hidden=[16], dropout=0.2, batch_norm=True)
P = NET.init(seed=0)

BACKENDS = [("numpy", None), pytest.param("torch", "fp64", marks=pytest.mark.torch),
            pytest.param("torch", "fp32", marks=pytest.mark.torch)]


@pytest.fixture(autouse=True)
def grants(project_with_python):
    return project_with_python


def _opts(backend, precision, **extra):
    if backend == "torch":
        pytest.importorskip("torch")
    kw = dict(loss="cross_entropy", opt=nn.adam(lr=0.01), batch_size=10, seed=3, verbose=False,
              backend=backend, metrics=["accuracy"], val=[X[:16], Y[:16]],
              schedule=lambda s: 0.01 / (1 + 0.1 * s))
    if precision:
        kw["precision"] = precision
    kw.update(extra)
    return kw


def _backend(backend, precision):
    if backend == "torch":
        pytest.importorskip("torch")
        return {"backend": "torch", "precision": precision}
    return {}


def _leaves(tree):
    return [v.data for _, v in nn.flatten(tree)]


@pytest.mark.parametrize("backend, precision", BACKENDS)
def test_two_epochs_and_a_resume_are_four_epochs_bit_for_bit(backend, precision):
    kw = _opts(backend, precision)
    whole = fit(NET, P, X, Y, epochs=4, **kw)
    first = fit(NET, P, X, Y, epochs=2, checkpoint="run.ckpt", **kw)
    assert first.history == whole.history[:2]
    rest = fit(NET, P, X, Y, epochs=4, resume="run.ckpt", **kw)
    assert rest.history == whole.history and rest.val_history == whole.val_history
    assert rest.metrics.accuracy == whole.metrics.accuracy
    assert rest.val_metrics.accuracy == whole.val_metrics.accuracy
    for a, b in zip(_leaves(rest.params), _leaves(whole.params), strict=True):
        assert np.array_equal(a, b)                   # weights and batch norm's running statistics
    assert rest.steps == whole.steps and rest.epochs == 4
    assert rest.opt.steps == whole.opt.steps == whole.steps


def test_a_resume_of_another_run_is_refused_naming_what_differs():
    kw = _opts("numpy", None)
    fit(NET, P, X, Y, epochs=1, checkpoint="run.ckpt", **kw)
    said = r"the rows of one step \(batch_size × processes\) differs \(checkpoint: 10, now: 8\)"
    with pytest.raises(ApsiError, match=r"fit: resume='run.ckpt' was written by another run: " + said):
        fit(NET, P, X, Y, epochs=2, resume="run.ckpt", **dict(kw, batch_size=8))
    with pytest.raises(ApsiError, match="the number of samples differs"):
        fit(NET, P, X[:60], Y[:60], epochs=2, resume="run.ckpt", **kw)
    other = mlp(5, 3, hidden=[8])
    with pytest.raises(ApsiError, match="the model differs"):
        fit(other, other.init(seed=0), X, Y, epochs=2, resume="run.ckpt", **kw)
    with pytest.raises(ApsiError, match="holds 1 epochs, more than epochs=0|epochs must be"):
        fit(NET, P, X, Y, epochs=0, resume="run.ckpt", **kw)
    with open("junk.ckpt", "wb") as f:
        f.write(b"not a checkpoint")
    with pytest.raises(ApsiError, match="is not a checkpoint written by fit"):
        fit(NET, P, X, Y, epochs=2, resume="junk.ckpt", **kw)


def test_a_checkpoint_is_plain_arrays_never_a_pickle(tmp_path):
    import zipfile

    fit(NET, P, X, Y, epochs=1, checkpoint="run.ckpt", **_opts("numpy", None))
    with zipfile.ZipFile(tmp_path / "run.ckpt") as z:
        names = z.namelist()
        assert all(n.endswith(".npy") for n in names) and "meta.npy" in names
        for n in names:
            header = z.read(n)[:200]
            assert b"'O'" not in header and b"|O" not in header          # no object arrays
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_checkpoint_follows_the_write_rules(tmp_path):
    outside = tmp_path.parent / "elsewhere.ckpt"
    with pytest.raises(ApsiError, match="needs permission 'write'"):
        fit(NET, P, X, Y, epochs=1, checkpoint=str(outside), **_opts("numpy", None))


# --- metrics --------------------------------------------------------------------------------------

def _softmax_ce_accuracy(logits, y):
    return float(np.mean(np.argmax(logits, axis=1) == y))


@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_metrics_match_formulas_on_predictions(backend, precision):
    kw = _opts(backend, precision, metrics=["accuracy", "top5"], schedule=None)
    r = fit(NET, P, X, Y, epochs=2, **kw)
    probs = predict(NET, r.params, X).data
    assert r.metrics.accuracy[-1] == _softmax_ce_accuracy(probs, Y)
    assert r.metrics.top5[-1] == 1.0                                     # 3 classes: always in the top 5
    assert r.val_metrics.accuracy[-1] == _softmax_ce_accuracy(probs[:16], Y[:16])


def test_regression_metrics_match_their_definitions():
    y = X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.1
    net = mlp(5, 1, hidden=[8])

    def half_mae(pred, target):
        return nn.mean(abs(pred - target)) / 2

    r = fit(net, net.init(seed=0), X, y, loss="mse", epochs=3, verbose=False,
            metrics=["mae", "mse", "rmse", "r2", half_mae])
    pred = predict(net, r.params, X).data[:, 0]
    err = pred - y
    assert np.isclose(r.metrics.mae[-1], np.mean(np.abs(err)), rtol=1e-14)
    assert np.isclose(r.metrics.mse[-1], np.mean(err ** 2), rtol=1e-14)
    assert np.isclose(r.metrics.rmse[-1], np.sqrt(np.mean(err ** 2)), rtol=1e-14)
    r2 = 1 - np.sum(err ** 2) / np.sum((y - y.mean()) ** 2)
    assert np.isclose(r.metrics.r2[-1], r2, rtol=1e-12)
    assert np.isclose(r.metrics.half_mae[-1], np.mean(np.abs(err)) / 2, rtol=1e-14)
    try:
        from sklearn.metrics import r2_score
    except ImportError:
        return
    assert np.isclose(r.metrics.r2[-1], r2_score(y, pred), rtol=1e-12)


def test_bce_accuracy_uses_the_logit_sign_and_masks_apply():
    yb = (X[:, 0] > 0).astype(float)
    mask = np.arange(64) % 4 != 0
    net = mlp(5, 1, hidden=[8])
    r = fit(net, net.init(seed=0), X, yb, loss="bce", mask=mask, epochs=2, verbose=False,
            metrics=["accuracy"])
    logits = predict(net, r.params, X).data
    hit = ((logits[:, 0] > 0) == (yb > 0.5))[mask]
    assert r.metrics.accuracy[-1] == float(np.mean(hit))


def test_metric_mistakes_are_named():
    with pytest.raises(ApsiError, match=r"fit: metrics: unknown metric 'acc'.*accuracy"):
        fit(NET, P, X, Y, loss="cross_entropy", metrics=["acc"], verbose=False)
    with pytest.raises(ApsiError, match=r"'r2' compares numbers; with loss=\"cross_entropy\" use accuracy"):
        fit(NET, P, X, Y, loss="cross_entropy", metrics=["r2"], verbose=False)
    with pytest.raises(ApsiError, match="a metric function needs a name"):
        fit(NET, P, X, Y, loss="cross_entropy", metrics=[lambda p, t: 1.0], verbose=False)


# --- validation_split, early stopping, on_epoch -----------------------------------------------------

@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_validation_split_holds_out_the_last_samples_before_shuffling(backend, precision):
    kw = dict(loss="cross_entropy", epochs=2, verbose=False, seed=1, batch_size=8,
              **_backend(backend, precision))
    a = fit(NET, P, X, Y, validation_split=0.25, **kw)
    b = fit(NET, P, X[:48], Y[:48], val=[X[48:], Y[48:]], **kw)
    assert a.history == b.history and a.val_history == b.val_history
    with pytest.raises(ApsiError, match="give val= or validation_split=, not both"):
        fit(NET, P, X, Y, validation_split=0.2, val=[X, Y], **kw)
    with pytest.raises(ApsiError, match="validation_split must be a fraction between 0 and 1"):
        fit(NET, P, X, Y, validation_split=1.5, **kw)


@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_early_stopping_stops_and_restores_the_best_epoch(backend, precision):
    kw = dict(loss="cross_entropy", verbose=False, seed=1, batch_size=8, opt=nn.adam(lr=0.05),
              val=[X[:16], 2 - Y[:16]], **_backend(backend, precision))   # a val set it gets worse on
    r = fit(NET, P, X, Y, epochs=30, early_stopping={"patience": 2}, **kw)
    assert r.stopped == "early" and r.stopped_epoch == len(r.history) < 30
    best = int(np.argmin(r.val_history)) + 1
    assert r.best_epoch == best and r.stopped_epoch == best + 2
    again = fit(NET, P, X, Y, epochs=best, **kw)
    for a, b in zip(_leaves(r.params), _leaves(again.params), strict=True):
        assert np.array_equal(a, b)
    keep = fit(NET, P, X, Y, epochs=30, early_stopping={"patience": 2, "restore_best": False}, **kw)
    assert keep.stopped_epoch == r.stopped_epoch and not np.array_equal(_leaves(keep.params)[0],
                                                                         _leaves(r.params)[0])
    with pytest.raises(ApsiError, match='monitor="val_acc" is not one of loss, val_loss'):
        fit(NET, P, X, Y, epochs=2, early_stopping={"monitor": "val_acc"}, **kw)
    with pytest.raises(ApsiError, match="there is no validation data"):
        fit(NET, P, X, Y, epochs=2, early_stopping={"monitor": "val_loss"}, loss="cross_entropy",
            verbose=False)


@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_on_epoch_sees_the_logs_and_can_stop(backend, precision):
    seen = []

    def watch(epoch, logs):
        seen.append((epoch, logs.loss, logs.val_loss, logs.metrics.accuracy, logs.lr))
        return "stop" if epoch == 3 else None

    r = fit(NET, P, X, Y, epochs=10, on_epoch=watch, **_opts(backend, precision))
    assert [e for e, *_ in seen] == [1, 2, 3] and r.stopped == "callback" and len(r.history) == 3
    assert [s[1] for s in seen] == r.history and [s[3] for s in seen] == r.metrics.accuracy
    assert seen[0][4] == pytest.approx(0.01 / (1 + 0.1 * 6))       # the last step's rate (7 steps/epoch)
    with pytest.raises(ApsiError, match='on_epoch returned 5; return "stop"'):
        fit(NET, P, X, Y, epochs=2, on_epoch=lambda e, logs: 5, **_opts("numpy", None))


# --- stops that keep what was trained ---------------------------------------------------------------

@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_ctrl_c_in_the_repl_returns_the_last_finished_epoch(monkeypatch, backend, precision):
    monkeypatch.setattr(interactive, "_active", True)

    def stop_at(epoch, logs):
        if epoch == 2:
            raise KeyboardInterrupt

    r = fit(NET, P, X, Y, epochs=5, on_epoch=stop_at, **_opts(backend, precision))
    assert r.interrupted and r.stopped == "interrupted" and len(r.history) == 2
    two = fit(NET, P, X, Y, epochs=2, **_opts(backend, precision))
    assert all(np.array_equal(a, b) for a, b in zip(_leaves(r.params), _leaves(two.params), strict=True))


@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_a_nan_stop_with_a_checkpoint_keeps_the_last_finite_epoch(capsys, backend, precision):
    def blow_up(step):
        return 0.01 if step < 14 else 1e300

    r = fit(NET, P, X * 1e150, Y, epochs=5, checkpoint="run.ckpt", loss="cross_entropy", verbose=False,
            opt=nn.sgd(lr=0.01), schedule=blow_up, batch_size=10, **_backend(backend, precision))
    assert r.stopped == "nan" and len(r.history) == 2
    assert all(np.isfinite(a).all() for a in _leaves(r.params))
    assert "r.params are those after epoch 2" in capsys.readouterr().err


def test_r_opt_continues_the_moments_and_the_step_count():
    r = fit(NET, P, X, Y, epochs=2, loss="cross_entropy", verbose=False, opt=nn.adam(lr=0.01), batch_size=10)
    assert r.opt.steps == r.steps == 14 and r.opt._state is not None
    again = fit(NET, r.params, X, Y, epochs=1, loss="cross_entropy", verbose=False, opt=r.opt, batch_size=10)
    assert again.opt.steps == 21 and r.opt.steps == 14           # fit never changes the given optimizer


def test_an_apsi_program_uses_the_workflow_and_errors_in_on_epoch_point_at_its_line(tmp_path):
    import subprocess
    import sys

    program = (
        "use layers\nuse nn\nlet x = randn(32, 3, seed=0)\nlet y = argmax(x, axis=1)\n"
        "let net = mlp(3, 3, hidden=[4])\n"
        "fn watch(epoch, logs):\n"
        "    print(epoch, logs.loss > 0, logs.metrics.accuracy >= 0, logs.val_metrics.accuracy >= 0)\n"
        "    return logs.nothing if epoch == 2 else none\n"
        "let r = fit(net, net.init(seed=0), x, y, loss=\"cross_entropy\", epochs=3, metrics=[\"accuracy\"],\n"
        "            validation_split=0.25, checkpoint=\"run.ckpt\", on_epoch=watch, verbose=false)\n")
    (tmp_path / "t.apsi").write_text(program)
    p = subprocess.run([sys.executable, "-m", "apsi", "t.apsi"], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == "1 true true true\n2 true true true\n", (p.stdout, p.stderr)
    assert p.stderr.strip().splitlines()[-1] == ("t.apsi:8:17: error: record has no field 'nothing' (its "
                                                 "fields: loss, val_loss, lr, seconds, metrics, val_metrics)")
    assert 'File "' not in p.stderr and (tmp_path / "run.ckpt").exists()


@pytest.mark.parametrize("backend, precision", BACKENDS[:2])
def test_continuing_with_r_opt_is_one_longer_run(backend, precision):
    """Full-batch Adam (the batch order only reorders a sum): 1 epoch + 1 epoch with opt=r.opt is a
    2-epoch run to rounding; with a fresh adam the moments and bias correction restart."""
    net = mlp(5, 3, hidden=[8])
    kw = dict(loss="cross_entropy", batch_size=64, verbose=False, backend=backend)
    if precision:
        kw["precision"] = precision
        pytest.importorskip("torch")
    two = fit(net, net.init(seed=0), X, Y, epochs=2, opt=nn.adam(lr=0.05), **kw)
    one = fit(net, net.init(seed=0), X, Y, epochs=1, opt=nn.adam(lr=0.05), **kw)
    more = fit(net, one.params, X, Y, epochs=1, opt=one.opt, **kw)
    fresh = fit(net, one.params, X, Y, epochs=1, opt=nn.adam(lr=0.05), **kw)
    for a, b in zip(_leaves(more.params), _leaves(two.params), strict=True):
        assert np.allclose(a, b, rtol=0, atol=1e-12)
    assert max(np.max(np.abs(b - c)) for b, c in zip(_leaves(two.params), _leaves(fresh.params),
                                                    strict=True)) > 1e-4


def test_a_tampered_checkpoint_is_refused_never_a_python_error(tmp_path):
    """A checkpoint is a file in the project: a program may have written it. Its arrays and JSON are
    checked before anything of it is used."""
    import json
    import zipfile

    kw = _opts("numpy", None)
    fit(NET, P, X, Y, epochs=1, checkpoint="run.ckpt", **kw)
    with zipfile.ZipFile(tmp_path / "run.ckpt") as z:
        entries = {n: z.read(n) for n in z.namelist()}

    def tamper(name, change):
        meta_npy = entries["meta.npy"]
        header_end = meta_npy.index(b"\n", 10) + 1
        meta = json.loads(meta_npy[header_end:].decode())
        change(meta)
        raw = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        import io

        buf = io.BytesIO()
        np.lib.format.write_array(buf, raw, allow_pickle=False)
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            for n, data in entries.items():
                z.writestr(n, buf.getvalue() if n == "meta.npy" else data)

    cases = {"shuffle.ckpt": lambda m: m.update(shuffle={"bit_generator": "nope"}),
             "history.ckpt": lambda m: m.update(history="x"),
             "stop.ckpt": lambda m: m.update(stop=[1]),
             "names.ckpt": lambda m: m.update(opt_leaves="many")}
    for name, change in cases.items():
        tamper(name, change)
        with pytest.raises(ApsiError, match=rf"fit: resume='{name}'"):
            fit(NET, P, X, Y, epochs=2, resume=name, **kw)
