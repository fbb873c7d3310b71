"""The apsi command itself: forms of invocation, exit codes, permission flags, lazy imports."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import trust_toml

APSI = [sys.executable, "-m", "apsi"]


def run(args, cwd=None, stdin=None, env=None):
    full_env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    full_env.update(env or {})
    return subprocess.run(APSI + args, cwd=cwd, input=stdin, capture_output=True, text=True,
                          env=full_env, timeout=120)


@pytest.fixture
def prog(tmp_path):
    def write(text, name="prog.apsi"):
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p
    return write


def test_version_and_help():
    r = run(["--version"])
    assert r.returncode == 0 and r.stdout.startswith("apsi ")
    r = run(["--help"])
    assert r.returncode == 0
    for word in ("--allow-python", "-e CODE", "doctor", "pkg", "run", "setup"):
        assert word in r.stdout


def test_run_forms_pass_args(prog):
    p = prog('print("args", args)\n')
    for form in (["run", str(p), "x", "--flag"], [str(p), "x", "--flag"]):
        r = run(form)
        assert r.returncode == 0, r.stderr
        assert r.stdout == 'args ["x", "--flag"]\n'


def test_e_echoes_values_but_not_none():
    r = run(["-e", "1 + 2; none; let x = [1]; x; print(\"p\")"])
    assert r.stdout == "3\n[1]\np\n"


@pytest.mark.parametrize("form", [["--allow-python", "{p}"], ["run", "--allow-python", "{p}"],
                                  ["--allow-python", "run", "{p}"], ["-A", "{p}"]])
def test_permission_flag_positions(prog, form):
    p = prog('print(pyimport("math").sqrt(16.0))\n')
    r = run([a.format(p=p) for a in form])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "4.0\n"


def test_denied_without_flag(prog):
    p = prog('print(pyimport("math").sqrt(16.0))\n')
    r = run([str(p)])
    assert r.returncode == 1
    assert ("pyimport(\"math\") needs permission 'python': run with --allow-python "
            "(or [run] allow = [\"python\"] in apsi.toml)") in r.stderr
    assert "Traceback (most recent call last):\n  File" not in r.stderr


def test_apsi_toml_grants(prog, tmp_path):
    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["python"]\n')
    trust_toml(tmp_path / "apsi.toml")
    sub = tmp_path / "src"
    sub.mkdir()
    p = sub / "p.apsi"
    p.write_text('print(pyimport("math").floor(2.5))\n')
    r = run([str(p)])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "2\n"


def test_missing_file_is_usage_error(tmp_path):
    r = run([str(tmp_path / "nope.apsi")])
    assert r.returncode == 2
    assert "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_syntax_error_runs_nothing(prog):
    p = prog('print("before")\nlet = 3\n')
    r = run([str(p)])
    assert r.returncode == 2
    assert r.stdout == ""
    assert f"{p}:2:5: expected a name after 'let'" in r.stderr


def test_debug_shows_python_traceback(prog):
    p = prog("fn f(n):\n    return 1 / n\nf(0)\n")
    r = run([str(p)])
    assert r.returncode == 1 and 'File "' not in r.stderr
    assert f"{p}:2:14: error: division by zero" in r.stderr
    r = run([str(p)], env={"APSI_DEBUG": "1"})
    assert 'File "' in r.stderr and "ZeroDivisionError" in r.stderr


def test_exit_code_from_program():
    assert run(["-e", "exit(3)"]).returncode == 3


def test_start_is_light():
    """`apsi -e` imports neither numpy, torch nor rich."""
    code = ("import sys\nfrom apsi_cli.main import main\n"
            "try:\n    main(['-e', 'print(1)'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'torch', 'rich') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().splitlines() == ["1", "[]"], r.stderr


def test_python_dash_m_matches_console_script():
    r = subprocess.run([sys.executable, "-m", "apsi", "-e", "print(6 * 7)"], capture_output=True,
                       text=True, timeout=60)
    assert r.stdout == "42\n"


def test_a_bug_in_a_command_is_reported_without_traceback():
    code = ("import apsi_cli.runner as r\n"
            "def boom(*a, **k):\n    raise RuntimeError('boom')\n"
            "r.run_code = boom\n"
            "from apsi_cli.main import main\nmain(['-e', 'print(1)'])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "APSI_DEBUG"})
    assert p.returncode == 1
    assert "apsi: internal error: RuntimeError: boom" in p.stderr
    assert "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, APSI_DEBUG="1"))
    assert "Traceback" in p.stderr


def test_e_passes_what_follows_as_args():
    r = run(["-e", "print(args)", "x", "--flag", "-e", "y"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == '["x", "--flag", "-e", "y"]\n'


def test_closed_pipe_stops_quietly():
    p = subprocess.Popen(APSI + ["-e", "for i in range(1000000): print(i)"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "0\n"
    p.stdout.close()
    assert p.wait(timeout=60) == 141
    assert p.stderr.read() == ""


def test_a_python_file_is_pointed_to_python(tmp_path):
    p = tmp_path / "script.py"
    p.write_text("import os\n")
    r = run([str(p)])
    assert r.returncode == 2
    assert "is a Python file: run it with python" in r.stderr


def test_exit_with_a_message_goes_to_stderr():
    r = run(["-e", 'print("a"); exit("out of data")'])
    assert (r.returncode, r.stdout, r.stderr) == (1, "a\n", "out of data\n")
    assert run(["-e", "exit()"]).returncode == 0


def test_check_compiles_without_running(tmp_path):
    (tmp_path / "ok.apsi").write_text('write_text("ran.txt", "x")\nprint(1)\n')
    (tmp_path / "bad.apsi").write_text("print(totl)\n")
    (tmp_path / "badmod.apsi").write_text("use nosuchmodule\n")
    r = run(["check", "ok.apsi"], cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert not (tmp_path / "ran.txt").exists()
    r = run(["check", "ok.apsi", "bad.apsi", "badmod.apsi"], cwd=tmp_path)
    assert r.returncode == 2
    assert "bad.apsi:1:7: undefined name 'totl'" in r.stderr and "nosuchmodule" not in r.stderr
    r = run(["check", "badmod.apsi"], cwd=tmp_path)
    assert r.returncode == 2 and "no module named 'nosuchmodule'" in r.stderr
    r = run(["check", "missing.apsi"], cwd=tmp_path)
    assert r.returncode == 2 and "cannot check 'missing.apsi': it does not exist" in r.stderr
