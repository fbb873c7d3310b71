"""Class 6: no program crashes the interpreter. Deep recursion, through C code too, is the Apsi error
"too many nested calls"; programs run on a big-stack thread and still exit, flush and stop on Ctrl-C
as before."""

import signal
import subprocess
import sys
import time

import pytest

from apsi_lang import bigstack

from .helpers import ROOT, cli

DEEP = "let t = []\nfor i in range(30000):\n    t = [t]\n"


@pytest.mark.parametrize("code", [
    "fn f(x):\n    return sorted([x], key=f)\nf(0)",
    "fn f(x):\n    return min([x], key=f)\nf(0)",
    "fn f(x):\n    return max([x, x], key=f)\nf(0)",
    "fn f(x):\n    return map(f, [x])\nf(0)",
    "fn f(x):\n    return filter(f, [x])\nf(0)",
    "fn f(x):\n    let xs = [x]\n    xs.sort(key=f)\n    return xs\nf(0)",
    "let f = fn(x) => sorted([x], key=f)\nf(0)",
    DEEP + "print(str(t))",
    DEEP + "print(t)",
    DEEP + 'print(f"{t}")',
    DEEP + "let u = []\nfor i in range(30000):\n    u = [u]\nprint(t == u)",
    "let t = ()\nfor i in range(30000):\n    t = (t,)\nlet u = ()\nfor i in range(30000):\n"
    "    u = (u,)\nprint(t == u)",
    "use nn\nfn f(x):\n    return tree_map(f, [x])\nf(1.0)",
])
def test_deep_recursion_is_an_apsi_error(tmp_path, code):
    (tmp_path / "deep.apsi").write_text(code)
    rc, out, err = cli(["deep.apsi"], tmp_path)
    assert rc == 1, (rc, err[-300:])
    assert "too many nested calls" in err and 'File "' not in err


def test_deep_recursion_in_a_used_module_and_in_e(tmp_path):
    (tmp_path / "helpers.apsi").write_text("fn f(x):\n    return sorted([x], key=f)\n")
    (tmp_path / "main.apsi").write_text("use helpers\nf(0)\n")
    rc, out, err = cli(["main.apsi"], tmp_path)
    assert rc == 1 and "too many nested calls" in err
    rc, out, err = cli(["-e", "fn f(x):\n    return min([x], key=f)\nf(0)"], tmp_path)
    assert rc == 1 and "too many nested calls" in err


def test_exit_codes_and_output_order_survive_the_thread(tmp_path):
    rc, out, err = cli(["-e", 'print("a")\nexit(3)'], tmp_path)
    assert (rc, out) == (3, "a\n")
    rc, out, err = cli(["-e", 'print("before")\nerror("boom")'], tmp_path)
    assert rc == 1 and out == "before\n" and "boom" in err
    rc, out, err = cli(["-i"], tmp_path, stdin="fn f(x):\n    return sorted([x], key=f)\n\nf(0)\nprint(5)\n")
    assert "too many nested calls" in err and "5" in out


def test_ctrl_c_stops_a_running_program_with_130(tmp_path):
    (tmp_path / "loop.apsi").write_text('print("started")\nlet i = 0\nwhile true:\n    i += 1\n')
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"}
    # (a shell's background job ignores SIGINT, and so would the child: give it the default handler)
    p = subprocess.Popen([sys.executable, "-m", "apsi", "loop.apsi"], cwd=tmp_path, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout.readline() == "started\n"
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 130 and "interrupted" in err


def test_call_returns_raises_and_nests():
    assert bigstack.call(lambda: 41 + 1) == 42
    assert bigstack.call(lambda: bigstack.call(lambda: "inner")) == "inner"
    with pytest.raises(ZeroDivisionError):
        bigstack.call(lambda: 1 / 0)
    with pytest.raises(SystemExit):
        bigstack.call(lambda: sys.exit(4))
