"""Issue 16: hyper-parameters and schedule values are checked, and parameters are checked finite after
the last update, on both backends: `sgd(lr=inf)`, `schedule=fn(s) => nan` and `sgd(momentum=nan)`
used to finish with exit 0 and NaN parameters that save_params then saved."""

import subprocess
import sys

import pytest

PROGRAM = """use layers
use nn
let x = randn(32, 3, seed=0)
let y = x @ array([1.0, -2.0, 0.5])
let net = mlp(3, 1, hidden=[8])
let r = fit(net, net.init(seed=0), x, y, loss="mse", epochs=2, batch_size=8, verbose=false{extra})
save_params("out.npz", r.params)
print("saved")
"""

BACKENDS = ["numpy", pytest.param("torch", marks=pytest.mark.torch)]


def run(tmp_path, extra, backend):
    if backend == "torch":
        pytest.importorskip("torch")
        extra += ', backend="torch", precision="fp64"'
    (tmp_path / "t.apsi").write_text(PROGRAM.replace("{extra}", extra))
    args = [sys.executable, "-m", "apsi"] + (["--allow-python"] if backend == "torch" else []) + ["t.apsi"]
    p = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra, message", [
    (", opt=sgd(lr=inf)", "sgd: lr must be a finite number >= 0"),
    (", opt=sgd(lr=0.01, momentum=nan)", "sgd: momentum must be a finite number >= 0"),
    (", opt=adam(lr=nan)", "adam: lr must be a finite number >= 0"),
    (", schedule=fn(s) => nan", "fit: the schedule returned nan at step 0"),
    (", schedule=fn(s) => inf", "fit: the schedule returned inf at step 0"),
    (", schedule=fn(s) => \"a\"", "fit: the schedule returned \"a\" at step 0"),
    (", schedule=fn(s) => 0.01 if s < 5 else nan", "fit: the schedule returned nan at step 5"),
])
def test_bad_hyper_parameters_stop_with_a_message(tmp_path, backend, extra, message):
    code, out, err = run(tmp_path, extra, backend)
    assert code == 1 and "saved" not in out, (out, err)
    assert message in err, err
    assert 'File "' not in err and "Error:" not in err     # no Python traceback
    assert not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_diverging_learning_rate_returns_no_parameters(tmp_path, backend):
    code, out, err = run(tmp_path, ", opt=sgd(lr=1e300)", backend)
    assert code == 1 and "saved" not in out, (out, err)
    assert ("NaN" in err or "infinite" in err) and "Lower the learning rate" in err, err
    assert 'File "' not in err and "Error:" not in err     # no Python traceback
    assert not (tmp_path / "out.npz").exists()
