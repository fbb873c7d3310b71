"""Issue 28: on Ctrl-C in a terminal, fit's "continue with resume" line was printed above the progress
bars (rich redrew them after it); it comes below them now, as the last thing fit says. A real
program in a pseudo-terminal that is its controlling terminal, Ctrl-C typed as the terminal sends it."""

import os
import select
import subprocess
import sys
import time

import pytest

PROGRAM = """use layers
use nn
let x = randn(20000, 20, seed=0)
let y = argmax(x[:, 0:3], axis=1)
let net = mlp(20, 3, hidden=[128])
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=50, batch_size=16,
            checkpoint="run.ckpt")
"""


def _controlling_terminal():
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _read_until(master, shown, pattern, timeout=90):
    deadline = time.monotonic() + timeout
    while pattern not in shown:
        assert time.monotonic() < deadline, shown.decode("utf-8", "replace")
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    return shown


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_the_resume_line_comes_below_the_bars(tmp_path):
    (tmp_path / "train.apsi").write_text(PROGRAM)
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env.update(TERM="xterm", COLUMNS="100", LINES="40")
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "train.apsi"], cwd=tmp_path, stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True,
                            preexec_fn=_controlling_terminal)
    os.close(slave)
    try:
        shown = _read_until(master, b"", b"epoch 3/50")
        os.write(master, b"\x03")                      # Ctrl-C, as the terminal sends it
        shown = _read_until(master, shown, b"apsi: interrupted (Ctrl-C)")
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = shown.decode("utf-8", "replace")
    said = text.rindex('resume="run.ckpt")')           # (the terminal may wrap the line before it)
    assert "continue with fit(" in text[said - 200:said]
    assert "steps/s" not in text[said:], text[said - 300:]          # no bar drawn after the line
    assert "epoch 3/50" in text[:said] and 'File "' not in text
