"""Scoped permissions as Deno has them: --allow-env=A,B, --allow-run=prog, --allow-net=host[:port],
--deny-* (denials win), and the same in apsi.toml. Each attempt refused without its grant."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import trust_toml

ROOT = Path(__file__).parent.parent


def apsi(args, cwd, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    full.update(PYTHONPATH=str(ROOT), NO_COLOR="1", **(env or {}))
    p = subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                       env=full, timeout=60, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


ENV = 'try:\n    print(getenv("{name}"))\ncatch e:\n    print(e.kind, e.message)\n'


@pytest.mark.parametrize("flags, name, allowed", [
    ([], "APSI_T_ONE", False),
    (["--allow-env=APSI_T_ONE"], "APSI_T_ONE", True),
    (["--allow-env=APSI_T_ONE"], "APSI_T_TWO", False),
    (["--allow-env=APSI_T_ONE,APSI_T_TWO"], "APSI_T_TWO", True),
    (["--allow-env"], "APSI_T_TWO", True),
    (["--allow-env", "--deny-env=APSI_T_TWO"], "APSI_T_TWO", False),
    (["--allow-env", "--deny-env=APSI_T_TWO"], "APSI_T_ONE", True),
    (["-A", "--deny-env"], "APSI_T_ONE", False),
])
def test_env_scopes(tmp_path, flags, name, allowed):
    (tmp_path / "t.apsi").write_text(ENV.format(name=name))
    code, out, err = apsi([*flags, "t.apsi"], tmp_path, env={"APSI_T_ONE": "1", "APSI_T_TWO": "2"})
    assert code == 0, err
    if allowed:
        assert out == ("1\n" if name == "APSI_T_ONE" else "2\n")
    else:
        assert out.startswith("permission ") and name in out


def test_env_denial_says_which_names_are_granted(tmp_path):
    (tmp_path / "t.apsi").write_text('getenv("APSI_T_TWO")\n')
    code, _, err = apsi(["--allow-env=APSI_T_ONE", "t.apsi"], tmp_path)
    assert code == 1
    assert ("getenv(\"APSI_T_TWO\") needs permission 'env' (APSI_T_TWO is not among the granted "
            "APSI_T_ONE): run with --allow-env=APSI_T_TWO") in err


def test_run_scopes(tmp_path):
    prog = 'print(run_command([args[0], "x"]).code)\n'
    (tmp_path / "t.apsi").write_text(prog)
    true = "true"
    assert apsi(["--allow-run=true", "t.apsi", true], tmp_path)[:2] == (0, "0\n")
    code, _, err = apsi(["--allow-run=echo", "t.apsi", true], tmp_path)
    assert code == 1 and "(true is not among the granted echo)" in err
    code, _, err = apsi(["--allow-run", "--deny-run=true", "t.apsi", true], tmp_path)
    assert code == 1 and "denied by --deny-run" in err
    # a path is not the granted name: --allow-run=true does not allow /bin/sh
    code, _, err = apsi(["--allow-run=true", "t.apsi", "/bin/sh"], tmp_path)
    assert code == 1 and "needs permission 'run'" in err


def test_net_scopes_are_checked_before_connecting(tmp_path):
    (tmp_path / "t.apsi").write_text('fetch_text(args[0])\n')
    # allowed hosts get as far as connecting (nothing listens on port 9)
    for flag, url in (("--allow-net=localhost", "http://localhost:9/"),
                      ("--allow-net=localhost:9", "http://localhost:9/"),
                      ("--allow-net=LOCALHOST", "http://localhost:9/")):
        code, _, err = apsi([flag, "t.apsi", url], tmp_path)
        assert code == 1 and "needs permission" not in err and "fetch_text(" in err, (flag, err)
    for flag, url in (("--allow-net=localhost:8", "http://localhost:9/"),
                      ("--allow-net=example.com", "http://localhost:9/"),
                      ("--allow-net=localhost", "https://example.com/")):
        code, _, err = apsi([flag, "t.apsi", url], tmp_path)
        assert code == 1 and "needs permission 'net'" in err, (flag, err)
    code, _, err = apsi(["-A", "--deny-net=localhost", "t.apsi", "http://localhost:9/"], tmp_path)
    assert code == 1 and "denied by --deny-net" in err


def test_deny_read_wins_over_allow_read(tmp_path):
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "k.txt").write_text("k")
    (tmp_path / "open.txt").write_text("o")
    (tmp_path / "t.apsi").write_text('print(read_text("open.txt"))\nprint(read_text("secret/k.txt"))\n')
    code, out, err = apsi(["--deny-read=secret", "t.apsi"], tmp_path)
    assert (code, out) == (1, "o\n") and "denied by --deny-read" in err


def test_apsi_toml_scopes_and_denials(tmp_path):
    (tmp_path / "apsi.toml").write_text('[run]\nenv = ["APSI_T_ONE"]\nrun = ["true"]\n'
                                        'deny_env = ["APSI_T_TWO"]\n')
    trust_toml(tmp_path / "apsi.toml")
    (tmp_path / "t.apsi").write_text(ENV.format(name="APSI_T_ONE") + ENV.format(name="APSI_T_TWO") +
                                     'print(run_command(["true"]).code)\n')
    code, out, err = apsi(["--allow-env", "t.apsi"], tmp_path, env={"APSI_T_ONE": "1", "APSI_T_TWO": "2"})
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "1" and lines[1].startswith("permission ") and lines[2] == "0"


def test_apsi_toml_bad_deny_is_an_error(tmp_path):
    (tmp_path / "apsi.toml").write_text('[run]\ndeny = ["nett"]\n')
    trust_toml(tmp_path / "apsi.toml")
    (tmp_path / "t.apsi").write_text("print(1)\n")
    code, out, err = apsi(["t.apsi"], tmp_path)
    assert code == 2 and out == "" and "run.deny has unknown permission 'nett'" in err
