"""Shared by the sandbox tests: run Apsi code in-process with given grants, or through the real CLI.

Each escape attempt is refused without its permission and, where it should be, allowed with it.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from apsi_lang import permissions, program
from apsi_lang.errors import ApsiError, ApsiSyntaxError

ROOT = Path(__file__).parent.parent.parent


def run(code, *allow, read=(), write=(), extra=None, filename="escape.apsi"):
    """Compile and run `code` in the current folder (the project) with these permissions."""
    proj = Path.cwd()
    permissions.set_current(permissions.Grants(
        frozenset(allow), tuple(str(Path(p).resolve()) for p in read),
        tuple(str(Path(p).resolve()) for p in write), proj.resolve()))
    ns = program.new_namespace(str(proj))
    ns.update(extra or {})
    program.compile_source(code, str(proj / filename), ns, program_dir=str(proj)).run()
    return ns


def refused(code, permission=None, *allow, extra=None, match=None, **kw):
    """A run-time refusal: an Apsi error (never a Python one); names the flag that grants it."""
    with pytest.raises(Exception) as info:
        run(code, *allow, extra=extra, **kw)
    assert not isinstance(info.value, ApsiSyntaxError), info.value
    message = program.describe(info.value)      # what the user would read
    assert not message.startswith(type(info.value).__name__), message   # never a raw Python error
    if permission:
        assert isinstance(info.value, ApsiError) and info.value.kind == "permission", message
        assert f"--allow-{permission}" in message, message
    if match:
        assert match in message, message
    return message


def refused_at_compile(code, *allow, match=None):
    with pytest.raises(ApsiSyntaxError) as info:
        run(code, *allow)
    if match:
        assert match in info.value.message, info.value.message
    return info.value


def cli(args, cwd, env=None, stdin=None, timeout=60):
    """`python -m apsi ARGS` in `cwd`: (exit code, stdout, stderr). Runs twice: confined by the kernel
    (apsi_cli/sandbox/confine.py, where Landlock exists) and with APSI_NO_CONFINE=1, so the language's checks
    are tested on their own; both runs must say the same."""
    results = []
    for switch in ({}, {"APSI_NO_CONFINE": "1"}):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
        full_env["PYTHONPATH"] = str(ROOT)
        full_env.update(env or {}, **switch)
        p = subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                           env=full_env, timeout=timeout, input=stdin,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
        results.append((p.returncode, p.stdout, p.stderr))
    assert results[0] == results[1], f"confined and unconfined runs differ: {results}"
    return results[0]


def cli_cases(folder, programs, name, **kw):
    """`cli([name], …)` for each program text, each in a folder of its own under `folder`, two programs
    at a time (a run is mostly its child's start-up, which leaves a core idle: suite time). Returns
    {program: (exit code, stdout, stderr)}, or the exception cli raised for it; `outcome` reads one."""
    def one(numbered):
        i, text = numbered
        own = Path(folder) / str(i)
        own.mkdir()
        (own / name).write_text(text)
        try:
            return cli([name], own, **kw)
        except Exception as e:          # (said by the test of that program, not by every test)
            return e

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(programs, pool.map(one, enumerate(programs))))


def outcome(results, program):
    """One program's (exit code, stdout, stderr) from cli_cases, raising what cli raised for it."""
    result = results[program]
    if isinstance(result, Exception):
        raise result
    return result
