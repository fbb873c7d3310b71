"""Issue 16: hyper-parameters and schedule values are checked, and parameters are checked finite after
the last update, on both backends: `sgd(lr=inf)`, `schedule=fn(s) => nan` and `sgd(momentum=nan)`
used to finish with exit 0 and NaN parameters that save_params then saved."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

HEAD = """use layers
use nn
let x = randn(32, 3, seed=0)
let y = x @ array([1.0, -2.0, 0.5])
let net = mlp(3, 1, hidden=[8])
"""
FIT = 'fit(net, net.init(seed=0), x, y, loss="mse", epochs=2, batch_size=8, verbose=false{extra})'
PROGRAM = HEAD + "let r = " + FIT + '\nsave_params("out.npz", r.params)\nprint("saved")\n'
# one case of a program that runs several (each caught, as `catch e` sees the error the CLI would say)
CAUGHT = "try:\n    let r = " + FIT + '\n    save_params("out{i}.npz", r.params)\n    print("{i} saved")\n' \
         'catch e:\n    print("{i}", e.kind, e.message)\n'
TORCH = ', backend="torch", precision="fp64"'

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
        extra += TORCH
    folder.mkdir()
    (folder / "t.apsi").write_text(PROGRAM.replace("{extra}", extra))
    args = [sys.executable, "-m", "apsi"] + (["--allow-python"] if backend == "torch" else []) + ["t.apsi"]
    p = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=120)
    return Ran(folder, p.returncode, p.stdout, p.stderr)


class Ran:
    """A case run as its own program through `apsi`: exit code, stdout and stderr."""

    def __init__(self, folder, code, out, err):
        self.folder, self.code, self.out, self.err = folder, code, out, err

    def check(self, says):
        assert self.code == 1 and "saved" not in self.out, (self.out, self.err)
        assert says(self.err), self.err
        assert 'File "' not in self.err and "Error:" not in self.err     # no Python traceback
        assert not (self.folder / "out.npz").exists()


class Caught:
    """A case run inside one program with others (_together): what its `catch e` printed."""

    def __init__(self, folder, i, printed):
        self.folder, self.i, self.printed = folder, i, printed

    def check(self, says):
        assert self.printed.startswith("error "), self.printed      # an Apsi error, not a Python one
        assert says(self.printed), self.printed
        assert not (self.folder / f"out{self.i}.npz").exists()


# On torch, one bad hyper-parameter and the diverging rate go through `apsi` alone (its exit code and
# stderr); the other cases run in one program, each fit in try/catch: each `apsi` start imports PyTorch
# (two seconds of CPU: suite time), and the numpy runs show every case's exit code and stderr.
ALONE = {BAD[0][0], DIVERGING}


def _together(folder, extras):
    folder.mkdir()
    (folder / "t.apsi").write_text(HEAD + "".join(
        CAUGHT.replace("{extra}", extra + TORCH).replace("{i}", str(i)) for i, extra in enumerate(extras)))
    p = subprocess.run([sys.executable, "-m", "apsi", "--allow-python", "t.apsi"], cwd=folder,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    printed = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert sorted(printed) == sorted(str(i) for i in range(len(extras))), p.stdout
    return {extra: Caught(folder, i, printed[str(i)]) for i, extra in enumerate(extras)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case's result, the programs run two at a time (each is mostly start-up: suite time), by
    (extra, backend)."""
    backends = ["numpy"]
    try:
        import torch  # noqa: F401

        backends.append("torch")
    except ImportError:
        pass
    extras = [e for e, _ in BAD] + [DIVERGING]
    alone = [(extra, b) for extra in extras for b in backends if b == "numpy" or extra in ALONE]
    root = tmp_path_factory.mktemp("hyper")
    with ThreadPoolExecutor(2) as pool:
        together = pool.submit(_together, root / "together", [e for e in extras if e not in ALONE]) \
            if "torch" in backends else None
        done = dict(zip(alone, pool.map(lambda ic: _run(root / str(ic[0]), *ic[1]), enumerate(alone))))
        if together is not None:
            done.update({(extra, "torch"): r for extra, r in together.result().items()})
        return done


def run(runs, extra, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    return runs[(extra, backend)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra, message", BAD)
def test_bad_hyper_parameters_stop_with_a_message(runs, backend, extra, message):
    run(runs, extra, backend).check(lambda said: message in said)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_diverging_learning_rate_returns_no_parameters(runs, backend):
    run(runs, DIVERGING, backend).check(
        lambda said: ("NaN" in said or "infinite" in said) and "Lower the learning rate" in said)
