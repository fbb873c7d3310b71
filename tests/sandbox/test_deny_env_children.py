"""Issue 15: `--deny-env=NAME` held for the program's own env() reads but not for the programs it
started: under `--allow-env --allow-run=env` the denied variable was still in the child's
environment. Denied names now leave the environment children inherit (kernel wall on and off)."""

import os
import shutil
import subprocess
import sys

import pytest

from sandbox.helpers import ROOT

pytestmark = pytest.mark.skipif(shutil.which("env") is None, reason="needs the env program")

SHOW = 'print(run_command(["env"]).stdout)'


def both_walls(args, cwd, env):
    """Each run, confined by the kernel and with APSI_NO_CONFINE=1 (the environment a child sees
    differs between them, so they are checked one by one, not compared)."""
    for switch in ({}, {"APSI_NO_CONFINE": "1"}):
        full = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
        full.update(env, PYTHONPATH=str(ROOT), **switch)
        p = subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, env=full, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        yield p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("flags", [
    ["--allow-env", "--allow-run=env", "--deny-env=SECRET_TOKEN"],
    ["--allow-env=SECRET_TOKEN,OTHER_VAR", "--allow-run=env", "--deny-env=SECRET_TOKEN"],
    ["--allow-all", "--deny-env=SECRET_TOKEN"],
])
def test_denied_variables_do_not_reach_started_programs(project, flags):
    for code, out, err in both_walls([*flags, "-e", SHOW], project,
                                     {"SECRET_TOKEN": "s3cr3t", "OTHER_VAR": "kept"}):
        assert code == 0, err
        assert "s3cr3t" not in out and "SECRET_TOKEN" not in out
        assert "OTHER_VAR=kept" in out
        assert "\n\n\n" not in out           # no blanked entries left in the environment block


def test_the_program_itself_cannot_read_a_denied_variable(project):
    read = ["--allow-env", "--deny-env=SECRET_TOKEN", "-e", 'print(env("SECRET_TOKEN"))']
    for _, out, _ in both_walls(read, project, {"SECRET_TOKEN": "s3cr3t"}):
        assert "s3cr3t" not in out
