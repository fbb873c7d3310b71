"""Issue 18: Ctrl-C in the middle of a long fit with checkpoint= names the last saved epoch and the
resume= call; the resumed run in a new process ends exactly where one uninterrupted run ends (NumPy,
and torch fp64). Real programs, real SIGINT, piped output."""

import os
import signal
import subprocess
import sys
import time

import pytest

PROGRAM = """use layers
use nn
let x = randn(20000, 20, seed=0)
let y = argmax(x[:, 0:3], axis=1)
let net = mlp(20, 3, hidden=[128], dropout=0.1)
let resume = args[0] if len(args) > 0 else none
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=4, batch_size=16,
            checkpoint="run.ckpt", resume=resume, verbose=true, BACKEND)
print(r.history)
print(sum(flatten(r.params)[0][1]))
"""

CASES = [("numpy", 'backend="numpy"', []),
         pytest.param("torch", 'backend="torch", precision="fp64"', ["--allow-python"],
                      marks=pytest.mark.torch)]


# one thread: torch's second thread only spins on these batches of 16 (a loaded CI machine ran one
# torch epoch in 9.7 s of CPU with two, 0.4 s with one); the interrupt and the resume are the same
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _apsi(cwd, flags, *args):
    return subprocess.Popen([sys.executable, "-m", "apsi", *flags, "train.apsi", *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("name, backend, flags", CASES)
def test_ctrl_c_mid_epoch_then_resume_equals_one_run(tmp_path, name, backend, flags):
    if name == "torch":
        pytest.importorskip("torch")
    # the uninterrupted run in a folder of its own, beside the one that is cut (suite time: each is one
    # thread on a machine of two cores; a slower cut is only further inside epoch 3 when interrupted)
    for folder in (tmp_path, tmp_path / "whole"):
        folder.mkdir(exist_ok=True)
        (folder / "train.apsi").write_text(PROGRAM.replace("BACKEND", backend))
    one = _apsi(tmp_path / "whole", flags)

    cut = _apsi(tmp_path, flags)
    lines = []
    while not lines or not lines[-1].startswith("epoch 2/4"):
        line = cut.stdout.readline()
        assert line, cut.stderr.read()
        lines.append(line)
    time.sleep(0.15)                                   # well inside epoch 3
    cut.send_signal(signal.SIGINT)
    _, err = cut.communicate(timeout=120)
    assert cut.returncode == 130, err
    said = [ln for ln in err.splitlines() if ln.startswith("fit:")]
    assert said, err
    epoch = int(said[0].split("during epoch ")[1].split(";")[0])
    assert epoch >= 3
    assert said[0].endswith(f'run.ckpt holds the run after epoch {epoch - 1}; continue with '
                            'fit(…, resume="run.ckpt")'), said[0]
    assert err.strip().splitlines()[-1] == "apsi: interrupted (Ctrl-C)" and 'File "' not in err
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]

    whole, err = one.communicate(timeout=300)
    assert one.returncode == 0, err
    rest = _apsi(tmp_path, flags, "run.ckpt")
    out, err = rest.communicate(timeout=300)
    assert rest.returncode == 0, err
    assert out.splitlines()[-2:] == whole.splitlines()[-2:]          # history and weights, exactly
    assert out.splitlines()[0].startswith(f"epoch {epoch}/4")
