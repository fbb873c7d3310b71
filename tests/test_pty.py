"""Programs as users run them in a terminal: stdout, stderr and stdin are a pseudo-terminal, so fit
shows its rich progress bar (piped output takes the one-line-per-epoch path, which the other tests
cover). Issue 16: the torch backend crashed here ("'+' does not work on a float and none") while
every piped test passed."""

import os
import select
import subprocess
import sys
import time

import pytest

FIT = """use layers
use nn
let x = randn(64, 3, seed=0)
let y = x @ array([1.0, -2.0, 0.5])
let net = mlp(3, 1, hidden=[8])
let r = fit(net, net.init(seed=0), x, y, loss="mse", epochs=3, batch_size=16, opt=adam(lr=0.01){extra})
print(f"done {len(r.history)} epochs, last loss {r.history[-1]:.4f}")
"""


def has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


needs_torch = pytest.mark.skipif(not has_torch(), reason="needs PyTorch")


def run_in_pty(args, cwd, typed=None, timeout=120):
    """`python -m apsi ARGS` with a pseudo-terminal as stdin/stdout/stderr: (exit code, what the
    terminal showed). `typed`: lines typed into the terminal, one at a time, as a user would."""
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env.update(TERM="xterm", COLUMNS="100", LINES="40")
    proc = subprocess.Popen([sys.executable, "-m", "apsi", *args], cwd=cwd, stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    shown, deadline = b"", time.monotonic() + timeout
    pending = list(typed or [])
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:          # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                shown += chunk
            if pending and shown.endswith(b">>> "):      # the REPL waits for the next line
                os.write(master, pending.pop(0).encode() + b"\n")
                time.sleep(0.05)
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, shown.decode("utf-8", "replace")


def check_fit_output(code, shown, epochs=3):
    assert code == 0, shown
    assert f"done {epochs} epochs" in shown, shown
    assert "epoch 3/3" in shown, shown          # the progress bar's last epoch stays on screen
    summary = [ln for ln in shown.splitlines() if " → " in ln]   # issue 18: the closing line
    assert summary and any(ch in summary[-1] for ch in "▁▂▃▄▅▆▇█"), shown
    assert "Traceback" not in shown and "error" not in shown, shown


def test_numpy_fit_in_a_terminal(tmp_path):
    (tmp_path / "t.apsi").write_text(FIT.replace("{extra}", ""))
    check_fit_output(*run_in_pty(["t.apsi"], tmp_path))


@needs_torch
def test_torch_fit_in_a_terminal(tmp_path):
    (tmp_path / "t.apsi").write_text(FIT.replace("{extra}", ', backend="torch"'))
    check_fit_output(*run_in_pty(["--allow-python", "t.apsi"], tmp_path))


@needs_torch
def test_torch_fit_fp64_in_a_terminal_with_validation(tmp_path):
    extra = ', backend="torch", precision="fp64", val=[x, y]'
    (tmp_path / "t.apsi").write_text(FIT.replace("{extra}", extra))
    code, shown = run_in_pty(["--allow-python", "t.apsi"], tmp_path)
    check_fit_output(code, shown)
    assert "val " in shown


@pytest.mark.parametrize("backend", ["numpy", pytest.param("torch", marks=needs_torch)])
def test_fit_in_the_repl_in_a_terminal(tmp_path, backend):
    lines = [line for line in FIT.replace("{extra}", f', backend="{backend}"').splitlines()]
    code, shown = run_in_pty(["--allow-python"] if backend == "torch" else [], tmp_path,
                             typed=lines + ["exit()"])
    assert "done 3 epochs" in shown, shown
    assert "Traceback" not in shown and "error" not in shown, shown
    assert code == 0, shown


@needs_torch
@pytest.mark.slow
def test_check_torch_in_a_terminal(tmp_path):
    code, shown = run_in_pty(["check-torch"], tmp_path, timeout=300)
    assert code == 0, shown
    assert "Traceback" not in shown, shown


def _expect(master, shown, pattern, timeout=60):
    deadline = time.monotonic() + timeout
    while pattern not in shown:
        assert time.monotonic() < deadline, shown.decode("utf-8", "replace")
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            shown += os.read(master, 65536)
    return shown


def test_ctrl_c_during_fit_in_the_repl_keeps_the_finished_epochs(tmp_path):
    """Issue 18: in the REPL, Ctrl-C in the middle of fit returns a partial result (r.interrupted,
    the parameters after the last finished epoch) instead of losing the run."""
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env.update(TERM="xterm", COLUMNS="100", LINES="40")
    def controlling_terminal():            # the pty becomes the child's terminal: Ctrl-C sends SIGINT
        import fcntl
        import termios

        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "apsi"], cwd=tmp_path, stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True, preexec_fn=controlling_terminal)
    os.close(slave)
    try:
        shown = _expect(master, b"", b">>> ")
        for line in ("use layers", "use nn", "let x = randn(20000, 20, seed=0)",
                     "let y = argmax(x[:, 0:3], axis=1)", "let net = mlp(20, 3, hidden=[128])"):
            os.write(master, line.encode() + b"\n")
            shown = _expect(master, shown, b">>> ", timeout=30)
            shown = shown.replace(b">>> ", b"> ")         # the next prompt is a new one
        os.write(master, b'let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=50, '
                         b'batch_size=16)\n')
        shown = _expect(master, shown, b"epoch 3/50")
        os.write(master, b"\x03")                              # Ctrl-C, as the terminal sends it
        shown = _expect(master, shown, b">>> ")
        os.write(master, b'print("partial", r.interrupted, r.stopped, len(r.history) >= 2)\n')
        shown = _expect(master, shown, b"partial true")
        os.write(master, b"exit()\n")
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = shown.decode("utf-8", "replace")
    assert "partial true \"interrupted\" true" in text or "partial true interrupted true" in text, text
    assert "fit: interrupted (Ctrl-C) during epoch" in text and "r.params are those after epoch" in text
    assert 'File "' not in text
