"""Issue 16: a loss function that returns a constant, NaN, or a value cut off from the model's output
trained silently on NumPy and failed on torch with Python's or PyTorch's text ("a float has no field
or method 'backward'", "element 0 of tensors does not require grad"). Both refuse with one message."""

import subprocess
import sys

import pytest

PROGRAM = """use layers
use nn
let x = randn(16, 3, seed=0)
let net = mlp(3, 1)
let r = fit(net, net.init(seed=0), x, x[:, 0], loss={loss}, epochs=1, verbose=false, backend="{backend}")
print(r.history)
"""
MESSAGE = "fit: the loss function returned a value that does not depend on the model's output"


def run(tmp_path, loss, backend):
    (tmp_path / "l.apsi").write_text(PROGRAM.replace("{loss}", loss).replace("{backend}", backend))
    p = subprocess.run([sys.executable, "-m", "apsi", "--allow-python", "l.apsi"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("loss", ["fn(p, t) => 1.0", "fn(p, t) => nan", "fn(p, t) => mean(t * 0.0)"])
def test_a_constant_loss_is_refused_alike_on_both_backends(tmp_path, loss):
    pytest.importorskip("torch")
    results = [run(tmp_path, loss, b) for b in ("numpy", "torch")]
    for code, _out, err in results:
        assert code == 1 and MESSAGE in err, err
        assert "backward" not in err and "grad_fn" not in err
    assert results[0][2].splitlines()[-1] == results[1][2].splitlines()[-1]     # the same words


def test_a_loss_from_pred_trains(tmp_path):
    code, out, err = run(tmp_path, "fn(p, t) => mean((p - t) ** 2)", "numpy")
    assert code == 0, err
