"""Classes 4, 5 and 7: protected project files, paths and links, and the files Apsi writes.

4: a program cannot grant itself permissions or plant code: apsi.toml, *.apsi, *.py and anything
   named with (or under a folder named with) a leading '.' need --allow-write for that path; an
   apsi.toml another user wrote or could write grants nothing.
5: paths are str only, `~` is one rule, `use` reads under read_text's rule, messages show the path
   as written.
7: new files get 0666 minus the umask, existing ones keep their mode, links inside are written through.
"""

import os
import stat

import pytest

from apsi_lang import files

from .helpers import cli, refused, run

PROTECTED = ["apsi.toml", "other.apsi", "apsi.py", "sitecustomize.py", ".git/config", ".bashrc",
             ".venv/bin/activate", "sub/.hidden", "__pycache__/apsi.cpython-311.pyc", "numpy.so",
             "lib/tool.pyw", ".github/workflows/ci.yml"]


@pytest.mark.parametrize("name", PROTECTED)
def test_protected_files_need_write_for_that_path(project, name):
    target = project / name
    target.parent.mkdir(parents=True, exist_ok=True)
    message = refused(f'write_text("{name}", "planted")', "write", match="protected")
    assert f"--allow-write={name}" in message
    assert not target.exists()
    run(f'write_text("{name}", "ok")', write=[target])          # that path granted
    assert target.read_text() == "ok"
    run(f'write_text("{name}", "all")', "write")                 # or write as a whole
    assert target.read_text() == "all"


def test_save_params_is_protected_too(project):
    pytest.importorskip("numpy")
    refused('use nn\nsave_params(".hidden", {w: zeros(2)})', "write", match="protected")
    (project / ".git").mkdir()
    refused('use nn\nsave_params(".git/hooks", {w: zeros(2)})', "write", match="protected")
    assert not (project / ".git" / "hooks.npz").exists()
    run('use nn\nsave_params("model", {w: zeros(2)})')            # model.npz: ordinary data
    assert (project / "model.npz").exists()


def test_links_to_or_named_like_protected_files_are_protected(project):
    (project / "apsi.toml").write_text("")
    (project / "data.txt").write_text("data")
    os.symlink(project / "apsi.toml", project / "notes.txt")       # innocent name, protected target
    os.symlink(project / "data.txt", project / "run.apsi")        # protected name, innocent target
    refused('write_text("notes.txt", "[run]\\nallow = [\\"python\\"]")', "write", match="protected")
    refused('write_text("run.apsi", "print(1)")', "write", match="protected")
    assert (project / "apsi.toml").read_text() == "" and (project / "data.txt").read_text() == "data"


def test_ordinary_data_inside_the_project_needs_nothing(project):
    run('write_text("out.txt", "a")\nwrite_text("data/x.csv", "b")'.replace("data/", ""))
    assert (project / "out.txt").read_text() == "a"


def test_untrusted_parent_apsi_toml_grants_nothing(tmp_path):
    shared = tmp_path / "shared"
    (shared / "proj").mkdir(parents=True)
    (shared / "apsi.toml").write_text('[run]\nallow = ["python", "env"]\n')
    (shared / "proj" / "t.apsi").write_text('print(pyimport("math").pi > 3)\n')
    os.chmod(shared, 0o777)                                       # like /tmp: anyone may write here
    rc, out, err = cli(["proj/t.apsi"], shared)
    assert rc == 1 and "warning" in err and "grants nothing" in err and "needs permission 'python'" in err
    os.chmod(shared, 0o755)
    os.chmod(shared / "apsi.toml", 0o666)                         # the file itself writable by all
    rc, out, err = cli(["proj/t.apsi"], shared)
    assert rc == 1 and "other users can write it" in err
    os.chmod(shared / "apsi.toml", 0o644)
    assert cli(["proj/t.apsi"], shared)[:2] == (0, "true\n")     # trusted again


def test_apsi_toml_owned_by_another_user_grants_nothing(tmp_path):
    if os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")
    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["python"]\n')
    (tmp_path / "t.apsi").write_text('print(pyimport("math").pi > 3)\n')
    os.chown(tmp_path / "apsi.toml", 12345, 12345)
    rc, out, err = cli(["t.apsi"], tmp_path)
    assert rc == 1 and "owned by another user" in err


# ---- 5: paths ------------------------------------------------------------------------------

@pytest.mark.parametrize("call", ["read_text", "exists", "write_text"])
def test_paths_are_strings_only(project, call):
    text = ', "x"' if call == "write_text" else ""
    for path in ('"/etc/hostname".encode()', "[1]", "none"):
        refused(f"{call}({path}{text})", match="a path must be a string")
        refused(f"{call}({path}{text})", None, "read", "write", match="a path must be a string")


def test_home_is_expanded_in_check_and_open_alike(project, monkeypatch, capsys):
    home = project.parent / "home"
    home.mkdir()
    (home / "h.txt").write_text("at home")
    monkeypatch.setenv("HOME", str(home))
    message = refused('read_text("~/h.txt")', "read")
    assert "~/h.txt is outside the project folder" in message and str(home) not in message
    run('print(read_text("~/h.txt"))', read=[home])
    assert capsys.readouterr().out == "at home\n"
    (project / "~").mkdir()
    (project / "~" / "h.txt").write_text("a folder named ~")
    run('print(read_text("./~/h.txt"))')
    assert capsys.readouterr().out == "a folder named ~\n"


def test_denials_show_the_path_as_written(project):
    os.symlink("/proc/self/exe", project / "exe")
    message = refused('read_text("exe")', "read")
    assert "exe is outside" in message and "/proc" not in message and "python" not in message.lower()
    message = refused('read_text("../outside/secret.txt")', "read")
    assert "../outside/secret.txt is outside the project folder" in message
    assert str(project) not in message
    message = refused('write_text("../outside/x.txt", "x")', "write")
    assert "--allow-write=../outside" in message


def test_use_follows_the_read_rule(project, tmp_path):
    secret = project.parent / "outside" / "lib.apsi"
    secret.write_text("let password = \"hunter2\"\nthis is not apsi\n")
    os.symlink(secret, project / "lib.apsi")
    (project / "main.apsi").write_text("use lib\nprint(1)\n")
    rc, out, err = cli(["main.apsi"], project)
    assert rc != 0 and "needs permission 'read'" in err and "hunter2" not in err and "not apsi" not in err
    rc, out, err = cli([f"--allow-read={secret.parent}", "main.apsi"], project)
    assert "needs permission 'read'" not in err           # allowed: now it is read (and its error shown)


def test_use_of_a_link_inside_the_project_works(project):
    (project / "real.apsi").write_text("let v = 7\n")
    os.symlink(project / "real.apsi", project / "alias.apsi")
    (project / "main.apsi").write_text("use alias\nprint(v)\n")
    assert cli(["main.apsi"], project)[:2] == (0, "7\n")


# ---- 7: modes and links --------------------------------------------------------------------

def test_new_files_get_0666_minus_umask(project):
    old = os.umask(0o027)
    files._umask = None
    try:
        run('write_text("new.txt", "x")')
        assert stat.S_IMODE((project / "new.txt").stat().st_mode) == 0o640
    finally:
        os.umask(old)
        files._umask = None
    run('write_text("new2.txt", "x")')
    assert stat.S_IMODE((project / "new2.txt").stat().st_mode) == 0o666 & ~old


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o664, 0o755])
def test_existing_files_keep_their_mode(project, mode):
    (project / "keep.txt").write_text("old")
    os.chmod(project / "keep.txt", mode)
    run('write_text("keep.txt", "new")')
    assert stat.S_IMODE((project / "keep.txt").stat().st_mode) == mode
    assert (project / "keep.txt").read_text() == "new"


def test_save_params_modes(project):
    pytest.importorskip("numpy")
    (project / "m.npz").write_bytes(b"")
    os.chmod(project / "m.npz", 0o640)
    run('use nn\nsave_params("m.npz", {w: zeros(2)})')
    assert stat.S_IMODE((project / "m.npz").stat().st_mode) == 0o640


def test_links_inside_the_project_are_written_through(project):
    (project / "data").mkdir()
    (project / "data" / "real.txt").write_text("old")
    os.symlink(project / "data" / "real.txt", project / "link.txt")
    os.symlink(project / "data", project / "dlink")
    run('write_text("link.txt", "via link")\nwrite_text("dlink/other.txt", "via folder link")')
    assert (project / "link.txt").is_symlink()
    assert (project / "data" / "real.txt").read_text() == "via link"
    assert (project / "data" / "other.txt").read_text() == "via folder link"
