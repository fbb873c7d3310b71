"""Issue 29, the smaller two: messages about files Apsi writes show the path as written (never the
project's absolute folder), and temporary files of atomic writes that a killed writer left behind are
removed by the next write of the same file, and listed by `apsi doctor` until then."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from apsi_lang import files

from .helpers import ROOT, cli, run

FIT = """use layers
use nn
let x = randn(8, 2, seed=0)
let net = mlp(2, 2, hidden=[4])
fit(net, net.init(seed=0), x, argmax(x, axis=1), loss="cross_entropy", epochs=1, checkpoint="nodir/run.ckpt")
"""


@pytest.mark.parametrize("program, said", [
    (FIT, 'fit(checkpoint="nodir/run.ckpt"): the folder "nodir" does not exist'),
    ('use nn\nsave_params("nodir/m.npz", {w: zeros(2)})',
     'save_params("nodir/m.npz"): the folder "nodir" does not exist'),
])
def test_a_missing_folder_is_named_as_written(project, program, said):
    pytest.importorskip("numpy")
    code, out, err = cli(["-e", program], project)          # with the kernel's wall and without
    assert code == 1 and said in err and "make_dir" in err, err
    assert str(project) not in err and str(project.parent) not in err and os.sep + "tmp" not in err, err


def _leftover(folder, name, pid, host=None, age=0.0):
    path = folder / f"{files._prefix(name)}{host or files._host()}-{pid}.{os.urandom(6).hex()}.tmp"
    path.write_bytes(b"half a file")
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_next_write_removes_its_own_leftovers_and_nothing_else(project, monkeypatch):
    monkeypatch.setattr(files, "_seen", {})
    alive = os.getppid()                                      # a process that is running
    dead = _leftover(project, "out.csv", _dead_pid())
    old = _leftover(project, "out.csv", alive, age=2 * 86400)
    running = _leftover(project, "out.csv", alive)
    elsewhere = _leftover(project, "out.csv", _dead_pid(), host="ffff" if files._host() != "ffff" else "eeee")
    other = _leftover(project, "other.csv", _dead_pid())
    lookalike = project / ".out.csv.notes.tmp"
    lookalike.write_text("the user's")
    run('write_text("out.csv", "a,b\\n")')
    assert (project / "out.csv").read_text() == "a,b\n"
    assert not dead.exists() and not old.exists()
    assert running.exists() and elsewhere.exists() and other.exists() and lookalike.exists()
    assert sorted(p for p, _ in files.leftovers(project)) == sorted(map(str, (running, elsewhere, other)))


def test_with_the_kernels_wall_too(project):
    """The confined process may ask whether a pid is alive and remove the file (project folder)."""
    for switch in ({}, {"APSI_NO_CONFINE": "1"}):
        left = _leftover(project, "m.npz", _dead_pid())
        env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
        p = subprocess.run([sys.executable, "-m", "apsi", "-e", 'write_text("m.npz", "x")'], cwd=project,
                           env={**env, "PYTHONPATH": str(ROOT), **switch}, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        assert not left.exists(), switch


@pytest.mark.slow
def test_kill_9_mid_write_then_doctor_lists_it_and_the_next_write_removes_it(project):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env["PYTHONPATH"] = str(ROOT)
    program = 'let s = "x" * 50000000\nprint("ready")\nwhile true:\n    write_text("big.txt", s)\n'
    for _ in range(10):                                     # until a kill lands inside a write
        proc = subprocess.Popen([sys.executable, "-m", "apsi", "-e", program], cwd=project, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "ready\n"
        # kill as soon as a write's temporary file is seen (a fixed sleep missed every write in one CI run)
        deadline = time.monotonic() + 10
        while not files.leftovers(project) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
        err = proc.communicate(timeout=30)[1]
        left = files.leftovers(project)
        if left:
            break
    assert left, f"no kill landed inside a write; the program said: {err}"
    doctor = subprocess.run([sys.executable, "-m", "apsi", "doctor", "--json"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    row = [c for c in json.loads(doctor.stdout)["checks"] if c["key"] == "leftovers"]
    assert row[0]["status"] == "warn" and left[0][0] in row[0]["detail"], row
    p = subprocess.run([sys.executable, "-m", "apsi", "-e", 'write_text("big.txt", "whole")'], cwd=project,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert files.leftovers(project) == [] and (project / "big.txt").read_text() == "whole"
    doctor = subprocess.run([sys.executable, "-m", "apsi", "doctor", "--json"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    row = [c for c in json.loads(doctor.stdout)["checks"] if c["key"] == "leftovers"]
    assert row[0]["status"] == "ok", row
