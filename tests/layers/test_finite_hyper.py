"""Issue 16: hyper-parameters and schedule values are checked, and parameters are checked finite after
the last update, on both backends: `sgd(lr=inf)`, `schedule=fn(s) => nan` and `sgd(momentum=nan)`
used to finish with exit 0 and NaN parameters that save_params then saved."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

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
BAD = [
    (", opt=sgd(lr=inf)", "sgd: lr must be a finite number >= 0"),
    (", opt=sgd(lr=0.01, momentum=nan)", "sgd: momentum must be a finite number >= 0"),
    (", opt=adam(lr=nan)", "adam: lr must be a finite number >= 0"),
    (", schedule=fn(s) => nan", "fit: the schedule returned nan at step 0"),
    (", schedule=fn(s) => inf", "fit: the schedule returned inf at step 0"),
    (", schedule=fn(s) => \"a\"", "fit: the schedule returned \"a\" at step 0"),
    (", schedule=fn(s) => 0.01 if s < 5 else nan", "fit: the schedule returned nan at step 5"),
]
DIVERGING = ", opt=sgd(lr=1e300)"


def _run(folder, extra, backend):
    if backend == "torch":
        extra += ', backend="torch", precision="fp64"'
    folder.mkdir()
    (folder / "t.apsi").write_text(PROGRAM.replace("{extra}", extra))
    args = [sys.executable, "-m", "apsi"] + (["--allow-python"] if backend == "torch" else []) + ["t.apsi"]
    p = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=120)
    return folder, p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case's program, run two at a time (each is mostly start-up: suite time), by (extra, backend)."""
    backends = ["numpy"]
    try:
        import torch  # noqa: F401

        backends.append("torch")
    except ImportError:
        pass
    cases = [(extra, b) for extra in [e for e, _ in BAD] + [DIVERGING] for b in backends]
    root = tmp_path_factory.mktemp("hyper")
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda ic: _run(root / str(ic[0]), *ic[1]), enumerate(cases))
        return dict(zip(cases, done))


def run(runs, extra, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    return runs[(extra, backend)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra, message", BAD)
def test_bad_hyper_parameters_stop_with_a_message(runs, backend, extra, message):
    folder, code, out, err = run(runs, extra, backend)
    assert code == 1 and "saved" not in out, (out, err)
    assert message in err, err
    assert 'File "' not in err and "Error:" not in err     # no Python traceback
    assert not (folder / "out.npz").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_diverging_learning_rate_returns_no_parameters(runs, backend):
    folder, code, out, err = run(runs, DIVERGING, backend)
    assert code == 1 and "saved" not in out, (out, err)
    assert ("NaN" in err or "infinite" in err) and "Lower the learning rate" in err, err
    assert 'File "' not in err and "Error:" not in err     # no Python traceback
    assert not (folder / "out.npz").exists()
