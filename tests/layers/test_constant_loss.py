"""Issue 16: a loss function that returns a constant, NaN, or a value cut off from the model's output
trained silently on NumPy and failed on torch with Python's or PyTorch's text ("a float has no field
or method 'backward'", "element 0 of tensors does not require grad"). Both refuse with one message."""

import subprocess
import sys

import pytest

HEAD = """use layers
use nn
let x = randn(16, 3, seed=0)
let net = mlp(3, 1)
"""
FIT = 'fit(net, net.init(seed=0), x, x[:, 0], loss={loss}, epochs=1, verbose=false, backend="{backend}")'
PROGRAM = HEAD + "let r = " + FIT + "\nprint(r.history)\n"
MESSAGE = "fit: the loss function returned a value that does not depend on the model's output"
LOSSES = ["fn(p, t) => 1.0", "fn(p, t) => nan", "fn(p, t) => mean(t * 0.0)"]


def run(tmp_path, loss, backend, program=PROGRAM):
    (tmp_path / "l.apsi").write_text(program.replace("{loss}", loss).replace("{backend}", backend))
    p = subprocess.run([sys.executable, "-m", "apsi", "--allow-python", "l.apsi"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def on_torch(tmp_path_factory):
    """What torch says for each loss, from one program (each `apsi` start imports PyTorch: suite time):
    the last loss's fit is not caught, so `apsi` says it and exits 1 as for one case alone; the others
    are each caught by `catch e`, which prints the error's kind and words. {loss: (kind, words)}."""
    pytest.importorskip("torch")
    caught = "".join(f"try:\n    {FIT}\ncatch e:\n    print(e.kind, e.message)\n".replace("{loss}", loss)
                     for loss in LOSSES[:-1])
    program = HEAD + caught + "let r = " + FIT.replace("{loss}", LOSSES[-1]) + "\nprint(r.history)\n"
    code, out, err = run(tmp_path_factory.mktemp("torch"), "", "torch", program)
    assert code == 1 and "Traceback (most recent call last):\n  File" not in err, err
    said = {loss: line.split(" ", 1) for loss, line in zip(LOSSES[:-1], out.splitlines(), strict=True)}
    return {**said, LOSSES[-1]: ("error", err.splitlines()[-1].split(": error: ", 1)[1])}


@pytest.mark.parametrize("loss", LOSSES)
def test_a_constant_loss_is_refused_alike_on_both_backends(tmp_path, on_torch, loss):
    code, _out, err = run(tmp_path, loss, "numpy")
    assert code == 1 and MESSAGE in err, err
    kind, words = on_torch[loss]
    assert kind == "error" and MESSAGE in words, (kind, words)      # an Apsi error, not a Python one
    for said in (err, words):
        assert "backward" not in said and "grad_fn" not in said
    assert err.splitlines()[-1].split(": error: ", 1)[1] == words     # the same words


def test_a_loss_from_pred_trains(tmp_path):
    code, out, err = run(tmp_path, "fn(p, t) => mean((p - t) ** 2)", "numpy")
    assert code == 0, err
