"""Issue 15, part 3: an apsi.toml grants its permissions only when its user has trusted that file's
exact contents (`apsi trust`, as `direnv allow` and `mise trust`); the record lives outside the
project, so a program that rewrote the file cannot grant itself anything for the next run."""

import json
import os
import subprocess
import sys

import pytest

from apsi_lang import trust

NEEDS_READ = 'print(len(read_text("{outside}")))\n'


def apsi(args, cwd, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "outside.txt").write_text("secret")
    p = tmp_path / "proj"
    p.mkdir()
    (p / "apsi.toml").write_text('[run]\nallow = ["read"]\n')
    (p / "p.apsi").write_text(NEEDS_READ.format(outside=tmp_path / "outside.txt"))
    yield p
    trust.revoke(p / "apsi.toml")


def test_an_untrusted_file_grants_nothing_and_says_so_in_one_line(proj):
    r = apsi(["p.apsi"], proj)
    assert r.returncode == 1 and "needs permission 'read'" in r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("apsi: warning")]
    assert len(warnings) == 1 and "is not trusted yet, so it grants nothing" in warnings[0]
    assert f"apsi trust {proj}" in warnings[0]


def test_trusted_contents_grant_and_a_change_needs_trust_again(proj):
    r = apsi(["trust", "--yes"], proj)
    assert r.returncode == 0 and "allow = ['read']" in r.stdout, r.stderr
    assert apsi(["p.apsi"], proj).stdout == "6\n"
    (proj / "apsi.toml").write_text('[run]\nallow = ["read", "python"]\n')      # changed, e.g. by a program
    r = apsi(["p.apsi"], proj)
    assert r.returncode == 1 and "has changed since you trusted it" in r.stderr
    assert trust.state(proj / "apsi.toml") == trust.CHANGED


@pytest.mark.parametrize("answer, trusted", [("y\n", True), ("n\n", False), ("\n", False)])
def test_trust_asks_before_trusting(proj, answer, trusted):
    r = apsi(["trust", str(proj)], proj.parent, stdin=answer)
    assert "grants:" in r.stdout and "allow = ['read']" in r.stdout
    assert (r.returncode == 0) is trusted
    assert (trust.state(proj / "apsi.toml") == trust.TRUSTED) is trusted


def test_revoke_forgets_the_file(proj):
    assert apsi(["trust", "--yes"], proj).returncode == 0
    assert apsi(["trust", "--revoke"], proj).returncode == 0
    assert trust.state(proj / "apsi.toml") == trust.UNTRUSTED


def test_the_record_is_outside_the_project_and_a_program_cannot_write_it(proj):
    record = trust.store()
    assert proj not in record.parents
    assert apsi(["trust", "--yes"], proj).returncode == 0
    assert str((proj / "apsi.toml").resolve()) in json.loads(record.read_text())
    (proj / "w.apsi").write_text(f'write_text("{record}", "{{}}")\n')
    r = apsi(["w.apsi"], proj)
    assert r.returncode == 1 and "needs permission 'write'" in r.stderr


def test_a_file_that_grants_nothing_needs_no_trust(tmp_path):
    (tmp_path / "apsi.toml").write_text("[run]\nallow = []\n")
    r = apsi(["-e", "print(1)"], tmp_path)
    assert r.returncode == 0 and r.stderr == ""


def test_doctor_shows_the_trust_state(proj):
    r = apsi(["doctor", "--json"], proj)
    assert json.loads(r.stdout)["config"]["trust"] == "untrusted"
    apsi(["trust", "--yes"], proj)
    r = apsi(["doctor", "--json"], proj)
    assert json.loads(r.stdout)["config"]["trust"] == "trusted"


def test_no_apsi_toml_to_trust(tmp_path):
    r = apsi(["trust", "--yes"], tmp_path)
    assert r.returncode == 1 and "no apsi.toml" in r.stderr
