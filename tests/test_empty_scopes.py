"""Issue 15: a permission flag with an empty value (`--allow-read="$UNSET"`) granted the whole
permission. An empty scope is an error that says so, for every scoped flag, before anything runs."""

import subprocess
import sys

import pytest

SCOPED = [f"--{verb}-{name}" for verb in ("allow", "deny") for name in ("read", "write", "net", "env", "run")]


@pytest.mark.parametrize("flag", SCOPED)
@pytest.mark.parametrize("value", ["", ",", " , "])
def test_an_empty_scope_is_refused(tmp_path, flag, value):
    (tmp_path / "p.apsi").write_text('print("ran")\n')
    p = subprocess.run([sys.executable, "-m", "apsi", f"{flag}={value}", "p.apsi"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "ran" not in p.stdout, (p.stdout, p.stderr)
    assert f"{flag}={value} has an empty scope" in p.stderr and "Traceback" not in p.stderr


def test_empty_read_scope_does_not_grant_reading_outside(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "p.apsi").write_text(f'print(read_text("{outside}"))\n')
    p = subprocess.run([sys.executable, "-m", "apsi", "--allow-read=", "p.apsi"], cwd=proj,
                       capture_output=True, text=True, timeout=60)
    assert "secret" not in p.stdout and p.returncode != 0


def test_the_bare_flag_and_star_still_grant_everything(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "p.apsi").write_text(f'print(read_text("{outside}"))\n')
    for flag in ("--allow-read", "--allow-read=*"):
        p = subprocess.run([sys.executable, "-m", "apsi", flag, "p.apsi"], cwd=proj, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and "secret" in p.stdout, (flag, p.stderr)
