"""Issue 29: apsi.toml grants that nobody trusted. Each case runs against a concurrent writer that swaps
the file between a trusted text and an untrusted one, as a program allowed to write apsi.toml could:
no run may get a grant from the untrusted text, `apsi trust` records the bytes it showed, and
`apsi setup` trusts only what it showed."""

import hashlib
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from apsi_lang import config, trust
from tests.conftest import trust_toml

TRUSTED = '[run]\nallow = ["read"]\n'
PLANTED = '[run]\nallow = ["python"]\n'


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


@contextmanager
def swapping(path, texts):
    """A thread that replaces `path` with each of `texts` in turn, as fast as it can, until the block
    ends (atomic replaces, so every read sees one whole text)."""
    stop = threading.Event()
    swaps = [0]

    def loop():
        tmp = path.with_name("swap.tmp")
        while not stop.is_set():
            for text in texts:
                tmp.write_text(text)
                os.replace(tmp, path)
                swaps[0] += 1

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield swaps
    finally:
        stop.set()
        t.join()


@pytest.fixture
def proj(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    (p / "apsi.toml").write_text(TRUSTED)
    trust_toml(p / "apsi.toml")
    yield p
    trust.revoke(p / "apsi.toml")


def test_load_never_grants_the_text_that_was_not_trusted(proj):
    """One read: the text parsed is the text hashed. (Before: 2 reads, and a swap in between gave
    python from the untrusted text.)"""
    granted = {"read": 0, "python": 0, "nothing": 0}
    with swapping(proj / "apsi.toml", [TRUSTED, PLANTED]) as swaps:
        for _ in range(3000):
            allow = config.load(proj).allow
            granted["python" if "python" in allow else "read" if "read" in allow else "nothing"] += 1
    assert swaps[0] > 100 and granted["read"] > 0 and granted["nothing"] > 0, (swaps, granted)
    assert granted["python"] == 0, granted


@pytest.mark.slow
def test_flagless_runs_never_get_python_while_the_file_is_swapped(proj):
    """As the red team ran it: plain `apsi` runs while apsi.toml is swapped (19 of 60 got python)."""
    (proj / "p.apsi").write_text('print(pyimport("math").pi > 3)\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    results = []
    with swapping(proj / "apsi.toml", [TRUSTED, PLANTED]):
        for i in range(30):                              # with the kernel's wall and without, in turn
            switch = {"APSI_NO_CONFINE": "1"} if i % 2 else {}
            p = subprocess.run([sys.executable, "-m", "apsi", "p.apsi"], cwd=proj, env={**env, **switch},
                               capture_output=True, text=True, timeout=60)
            results.append(p.stdout)
    assert results.count("true\n") == 0, results


def test_apsi_trust_records_the_bytes_it_showed(proj):
    """Each `apsi trust --yes` while the file is swapped: the record is the hash of the text whose
    grants it printed, never of the other one."""
    from apsi_cli.main import cli

    shown = {TRUSTED: "allow = ['read']", PLANTED: "allow = ['python']"}
    wrong = 0
    with swapping(proj / "apsi.toml", [TRUSTED, PLANTED]):
        for _ in range(600):
            trust.revoke(proj / "apsi.toml")
            r = CliRunner().invoke(cli, ["trust", "--yes", str(proj)])
            assert r.exit_code == 0, r.output
            recorded = trust._records()[os.path.realpath(proj / "apsi.toml")]
            text = next(t for t in shown if sha(t) == recorded)
            wrong += shown[text] not in r.output
    assert wrong == 0


def test_a_swap_while_apsi_trust_asks_is_not_trusted(proj):
    """The file changes while the prompt is open: the answer trusts what was shown, and the new text
    grants nothing."""
    trust.revoke(proj / "apsi.toml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    p = subprocess.Popen([sys.executable, "-m", "apsi", "trust", str(proj)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = b""
    while b"Trust this file" not in out:
        chunk = p.stdout.read1(4096)
        assert chunk, out + p.stderr.read()
        out += chunk
    (proj / "apsi.toml").write_text(PLANTED)              # swapped while the question is open
    rest, err = p.communicate(b"y\n", timeout=60)
    assert p.returncode == 0 and b"allow = ['read']" in out, (out, rest, err)
    assert trust._records()[os.path.realpath(proj / "apsi.toml")] == sha(TRUSTED)
    assert trust.state(proj / "apsi.toml") == trust.CHANGED
    assert config.load(proj).allow == ()


# ---- apsi setup ---------------------------------------------------------------------------------

CLONED = '[run]\nread = ["/"]\nwrite = ["/"]\nrun = ["sh"]\n'


def _wizard(folder, answers, yes=False):
    """The apsi.toml step of `apsi setup`, with the user's answers (hardware and PyTorch are the
    other steps, tested in tests/pkg/test_doctor.py)."""
    from apsi_cli import setup_wizard

    runner = CliRunner()
    old = Path.cwd()
    os.chdir(folder)
    try:
        with runner.isolation(input=answers) as (out, _err, _):
            setup_wizard._write_config(yes)
            return out.getvalue().decode()
    finally:
        os.chdir(old)


@pytest.fixture
def cloned(tmp_path):
    """A cloned repository whose apsi.toml grants read and write everywhere and `sh`; never trusted."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "apsi.toml").write_text(CLONED)
    yield repo
    trust.revoke(repo / "apsi.toml")


@pytest.mark.parametrize("answer, trusted", [("n\n", False), ("y\n", True), ("\n", False)])
def test_setup_shows_every_grant_and_trusts_only_when_told(cloned, answer, trusted):
    out = _wizard(cloned / "src", "y\nnet\n" + answer)
    for line in ("read = ['/']", "write = ['/']", "run = ['sh']", "allow = ['net']"):
        assert line in out, out
    assert "Trust this file's exact contents?" in out
    assert (trust.state(cloned / "apsi.toml") == trust.TRUSTED) is trusted
    assert config.load(cloned).read == (("/",) if trusted else ())


def test_setup_yes_does_not_trust_grants_it_did_not_choose(cloned):
    out = _wizard(cloned / "src", "", yes=True)
    assert "read = ['/']" in out and "Not trusted" in out and "apsi trust" in out
    assert trust.state(cloned / "apsi.toml") == trust.UNTRUSTED


def test_setup_keeps_trust_of_a_file_trusted_before(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "apsi.toml").write_text(TRUSTED)
    trust_toml(tmp_path / "apsi.toml")
    out = _wizard(tmp_path / "sub", "y\nnet\n")
    assert "Trust this file" not in out and "allow = ['read', 'net']" in out
    assert config.load(tmp_path).allow == ("read", "net")


def test_a_flagless_run_after_setup_said_no_reads_nothing_outside(cloned):
    _wizard(cloned / "src", "y\nnet\nn\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    p = subprocess.run([sys.executable, "-m", "apsi", "-e", 'print(read_text("/etc/hostname"))'],
                       cwd=cloned / "src", env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "needs permission 'read'" in p.stderr and "not trusted" in p.stderr


def test_setup_trusts_what_it_showed_while_the_file_is_swapped(tmp_path):
    """A writer swaps the project's apsi.toml between the trusted text and a planted one while the
    wizard edits it. The wizard either edited the trusted text (and trusts exactly the result it
    printed) or read the planted one (and, told no, trusts nothing new); never anything else."""
    (tmp_path / "sub").mkdir()
    toml = tmp_path / "apsi.toml"
    toml.write_text(TRUSTED)
    edited = '[run]\nallow = ["read", "net"]\n'
    outcomes, bad = set(), []
    with swapping(toml, [TRUSTED, PLANTED]):
        for _ in range(40):
            trust.trust(toml, TRUSTED.encode())            # each round starts from the trusted text
            out = _wizard(tmp_path / "sub", "y\nnet\nn\n")
            recorded = trust._records().get(os.path.realpath(toml))
            if recorded == sha(edited) and "allow = ['read', 'net']" in out:
                outcomes.add("edited the trusted text")
            elif recorded == sha(TRUSTED) and "Not trusted" in out and "allow = ['python', 'net']" in out:
                outcomes.add("read the planted text, trusted nothing")
            elif recorded == sha(TRUSTED) and "already grants net; it is left as it is" in out:
                outcomes.add("read its own last edit, changed nothing")
            else:
                bad.append(out)
    assert bad == [] and outcomes, (bad, outcomes)
