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
import subprocess
import sys
from pathlib import Path

import pytest

from apsi_lang import files, permissions, program
from apsi_lang.errors import PermissionDenied
from tests.conftest import trust_toml

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
    trust_toml(project / "apsi.toml")
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
    trust_toml(shared / "apsi.toml")
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
    trust_toml(tmp_path / "apsi.toml")
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
    # the execute bits go without --allow-write (issue 15: a rewritten ./configure stayed runnable)
    assert stat.S_IMODE((project / "keep.txt").stat().st_mode) == mode & ~0o111
    assert (project / "keep.txt").read_text() == "new"
    os.chmod(project / "keep.txt", mode)
    run('write_text("keep.txt", "newer")', "write")
    assert stat.S_IMODE((project / "keep.txt").stat().st_mode) == mode


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


# ---- 4: more ways to reach a protected file ------------------------------------------------

# (program, whether the file must exist first): every function that writes, on a protected name
WRITERS = [
    ('write_text("{p}", "x")', None), ('append_text("{p}", "x")', None),
    ('write_json("{p}", {{a: 1}})', None), ('make_dir("{p}")', None), ('delete("{p}")', "exists"),
]


@pytest.mark.parametrize("call, needs", WRITERS)
@pytest.mark.parametrize("name", ["apsi.toml", "lib.apsi", "conftest.py", "usercustomize.py", "evil.pth",
                                  ".git/config", ".git/hooks/pre-commit", ".venv/pyvenv.cfg", ".envrc",
                                  "__pycache__/x.cpython-311.pyc", "pkg/__init__.py", "build.sh",
                                  "pyproject.toml", "Makefile", "requirements.txt"])
def test_every_writer_is_refused_on_protected_names(project, call, needs, name):
    target = project / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if needs:
        target.write_text("original")
    code = call.format(p=name)
    refused(code, "write", match="protected")
    assert (target.read_text() == "original") if needs else not target.exists()
    run(code, write=[target])                                    # granted for that path: done
    assert not target.exists() if needs else target.exists()


@pytest.mark.parametrize("name", ["APSI.TOML", "Apsi.Toml", "Train.APSI", "tool.PY", "x.Pth", "__PYCACHE__/x",
                                  "apsi.toml.", "apsi.toml ", "x.apsi...", "MAKEFILE", "apsi.toml/"])
def test_names_are_compared_as_case_insensitive_file_systems_do(project, name):
    """On macOS and Windows APSI.TOML is apsi.toml, and Windows drops trailing dots and spaces."""
    (project / "__PYCACHE__").mkdir()
    refused(f'write_text("{name}", "x")', "write", match="protected")
    run(f'write_text("{name.rstrip("/")}", "x")', "write")


def test_a_prefix_through_a_link_does_not_hide_the_name(project):
    """/proc/self/cwd is the project: the names after it are judged as if written relative."""
    (project / "data.txt").write_text("data")
    os.symlink("data.txt", project / "run.apsi")
    for path in ("/proc/self/cwd/run.apsi", "/proc/self/cwd/apsi.toml", "/proc/self/cwd/./sub/../x.py"):
        refused(f'write_text("{path}", "x")', "write", match="protected")
    assert (project / "data.txt").read_text() == "data"


@pytest.mark.parametrize("setup", ["dangling", "chain", "folder", "root", "dotdot", "nested"])
def test_links_leading_to_protected_files(project, setup):
    (project / "a" / "b").mkdir(parents=True)
    (project / ".git").mkdir()
    path = {
        "dangling": ("n.txt", lambda: os.symlink("apsi.toml", project / "n.txt")),          # target absent
        "chain": ("n.txt", lambda: (os.symlink("m.txt", project / "n.txt"),
                                    os.symlink("x.py", project / "m.txt"))),
        "folder": ("g/config", lambda: os.symlink(".git", project / "g")),
        "root": ("r/r/apsi.toml", lambda: os.symlink(".", project / "r")),
        "dotdot": ("l/../../apsi.toml", lambda: os.symlink("a/b", project / "l")),
        "nested": ("a/b/up", lambda: os.symlink("../../.git/hooks", project / "a" / "b" / "up")),
    }[setup]
    name, make = path
    make()
    refused(f'write_text("{name}", "x")', "write", match="protected")
    refused(f'make_dir("{name}")', "write", match="protected")
    assert not (project / "apsi.toml").exists() and not (project / "x.py").exists()
    assert os.listdir(project / ".git") == []


def test_a_write_grant_elsewhere_does_not_cover_a_link_back_to_a_protected_file(project):
    (project / "out").mkdir()
    (project / "apsi.toml").write_text("")
    trust_toml(project / "apsi.toml")
    os.symlink("../apsi.toml", project / "out" / "settings.txt")
    refused('write_text("out/settings.txt", "x")', "write", write=[project / "out"], match="protected")
    run('write_text("out/result.txt", "x")', write=[project / "out"])
    assert (project / "apsi.toml").read_text() == ""


def test_relative_paths_from_a_subfolder(project, monkeypatch):
    """The project is the folder of apsi.toml; a program running in a subfolder writes ../x."""
    (project / "apsi.toml").write_text("")
    trust_toml(project / "apsi.toml")
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    for name in ("../apsi.toml", "../train.apsi", "../.git/config", "./../x.py", "../sub/../apsi.toml"):
        permissions.set_current(permissions.Grants(frozenset(), (), (), project.resolve()))
        with pytest.raises(Exception) as info:
            program.compile_source(f'write_text("{name}", "x")', str(project / "sub" / "p.apsi"),
                                   program.new_namespace(str(project / "sub")),
                                   program_dir=str(project / "sub")).run()
        assert "protected file" in program.describe(info.value)
    assert (project / "apsi.toml").read_text() == ""


def test_make_dir_of_a_dot_folder_then_writing_into_it(project):
    refused('make_dir(".git")', "write", match="'.git'")
    run('make_dir(".git")', write=[project / ".git"])
    refused('write_text(".git/config", "x")', "write", match="'.git'")    # the folder, not what is in it
    run('write_text(".git/config", "x")', write=[project / ".git"])        # a folder grant covers it
    assert (project / ".git" / "config").read_text() == "x"


def test_the_project_folder_itself_cannot_be_deleted(project, monkeypatch):
    empty = project / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    for path in (".", "./", "../empty", "sub/.."):
        permissions.set_current(permissions.Grants(frozenset(), (), (), empty.resolve()))
        with pytest.raises(Exception) as info:
            program.compile_source(f'delete("{path}")', str(empty / "p.apsi"),
                                   program.new_namespace(str(empty)), program_dir=str(empty)).run()
        assert "the project folder itself" in program.describe(info.value), path
        assert empty.is_dir()


def test_deleting_apsi_toml_would_change_the_grants_so_it_is_protected(project):
    (project / "apsi.toml").write_text('[run]\ndeny = ["net"]\n')
    trust_toml(project / "apsi.toml")
    refused('delete("apsi.toml")', "write", match="apsi.toml grants permissions")
    refused('delete("./sub/../APSI.TOML")', "write", match="protected")
    assert (project / "apsi.toml").exists()
    run('delete("apsi.toml")', write=[project / "apsi.toml"])
    assert not (project / "apsi.toml").exists()


def test_a_link_is_deleted_itself_not_its_target(project):
    (project / "apsi.toml").write_text("")
    trust_toml(project / "apsi.toml")
    os.symlink("apsi.toml", project / "shortcut.txt")
    run('delete("shortcut.txt")')
    assert (project / "apsi.toml").exists() and not (project / "shortcut.txt").is_symlink()
    os.symlink("apsi.toml", project / "shortcut")         # issue 29: a name that is not data needs write
    refused('delete("shortcut")', "write", match="only data files")
    run('delete("shortcut")', "write")
    assert (project / "apsi.toml").exists() and not (project / "shortcut").is_symlink()
    os.symlink("inside.txt", project / "alias.apsi")                # a link with a protected name
    refused('delete("alias.apsi")', "write", match="protected")


# ---- 4: which apsi.toml is trusted, without root -------------------------------------------

def test_an_apsi_toml_of_another_user_faked(tmp_path, monkeypatch):
    """Works as root and not: this process pretends to be another user."""
    from apsi_lang import config

    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["python"]\n')
    trust_toml(tmp_path / "apsi.toml")
    assert config.load(tmp_path).allow == ("python",)
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 4242)
    cfg = config.load(tmp_path)
    assert cfg.allow == () and cfg.path is None
    assert f"owned by another user (uid {me})" in cfg.warnings[0] and "grants nothing" in cfg.warnings[0]


def test_an_apsi_toml_in_a_sticky_shared_folder(tmp_path):
    from apsi_lang import config

    shared = tmp_path / "shared"
    (shared / "me" / "proj").mkdir(parents=True)
    (shared / "apsi.toml").write_text('[run]\nallow = ["env"]\n')
    trust_toml(shared / "apsi.toml")
    os.chmod(shared, 0o1777)                    # like /tmp: others may create files here
    cfg = config.load(shared / "me" / "proj")
    assert cfg.allow == () and "its folder is writable by other users" in cfg.warnings[0]


def test_a_linked_apsi_toml_is_judged_by_the_file_it_leads_to(tmp_path):
    from apsi_lang import config

    shared, proj = tmp_path / "shared", tmp_path / "proj"
    shared.mkdir()
    proj.mkdir()
    (shared / "settings.toml").write_text('[run]\nallow = ["run"]\n')
    os.symlink(shared / "settings.toml", proj / "apsi.toml")
    trust_toml(proj / "apsi.toml")
    assert config.load(proj).allow == ("run",)
    os.chmod(shared, 0o777)                     # the real file sits where anyone can replace it
    cfg = config.load(proj)
    assert cfg.allow == () and "writable by other users" in cfg.warnings[0]


# ---- 5: more reads that must not leave the project -----------------------------------------

@pytest.mark.parametrize("call", ['read_text("{p}")', 'exists("{p}")', 'list_dir("{p}")', 'read_json("{p}")',
                                  'read_csv("{p}")'])
@pytest.mark.parametrize("path", ["/proc/self/environ", "/proc/self/cwd/../outside/secret.txt", "/dev/zero",
                                  "root/etc/passwd", "up/outside/secret.txt", "../outside/secret.txt",
                                  "~/secret.txt", "/etc/passwd"])
def test_reads_outside_in_every_form(project, monkeypatch, call, path):
    monkeypatch.setenv("HOME", str(project.parent / "outside"))
    os.symlink("/proc/self/root", project / "root")
    os.symlink("..", project / "up")
    message = refused(call.format(p=path), "read")
    assert f"{path} is outside the project folder" in message
    assert str(project.parent) not in message


def test_use_of_links_outside_in_other_forms(project):
    outside = project.parent / "outside"
    (outside / "m.apsi").write_text("let secret = 1\n")
    os.symlink(outside, project / "shelf")
    os.symlink("shelf/m.apsi", project / "viafolder.apsi")        # through a folder link
    os.symlink(outside / "absent.apsi", project / "dangling.apsi")  # does not exist: the same refusal
    os.symlink("/dev/zero", project / "zero.apsi")
    for name in ("viafolder", "dangling", "zero"):
        message = _use_message(project, name)
        assert f"use {name} ({name}.apsi) needs permission 'read'" in message, message
        assert str(outside) not in message and "secret" not in message


def _use_message(project, name):
    from apsi_lang.errors import ApsiError

    permissions.set_current(permissions.Grants(frozenset(), (), (), project.resolve()))
    with pytest.raises(ApsiError) as info:
        from apsi_lang import modules

        modules.names(name, str(project))
    return info.value.message


def test_tilde_name_is_refused_not_looked_up(project):
    for path in ("~root/.bashrc", "~nosuchuser/x", "~root"):
        message = refused(f'read_text("{path}")', match="only ~ (your home folder) is understood")
        assert "/root" not in message
    (project / "~root").mkdir()
    (project / "~root" / "x").write_text("a folder")
    run('read_text("./~root/x")')


def test_the_suggested_folder_is_the_one_written(project):
    assert "--allow-read=..)" in refused('list_dir("..")', "read")
    assert "--allow-read=/)" in refused('list_dir("/")', "read")
    assert "--allow-read=../outside)" in refused('read_text("../outside/secret.txt")', "read")
    assert "--allow-read=~)" in refused('read_text("~/x")', "read")


def test_home_is_the_one_at_start_even_when_the_environment_loses_it(project, monkeypatch):
    """The confinement removes HOME from the environment; `~` must keep meaning the same folder."""
    home = project.parent / "outside"
    monkeypatch.setenv("HOME", str(home))
    permissions.set_current(permissions.Grants(frozenset(), (str(home),), (), project.resolve()))
    monkeypatch.delenv("HOME")
    assert permissions.check_path("read", "~/secret.txt", "t") == str(home / "secret.txt")


def test_appending_to_a_hard_link_of_a_protected_file_is_refused(project):
    """A hard link is another name for the same file: no path check can see where else it is named."""
    (project / "apsi.toml").write_text("[run]\n")
    trust_toml(project / "apsi.toml")
    os.link(project / "apsi.toml", project / "log.txt")
    message = refused('append_text("log.txt", "allow = [\\"python\\"]\\n")', match="hard links")
    assert "append_text(\"log.txt\")" in message
    assert (project / "apsi.toml").read_text() == "[run]\n"
    run('write_text("log.txt", "fresh")')              # replaced: the name gets its own file
    assert (project / "apsi.toml").read_text() == "[run]\n" and (project / "log.txt").read_text() == "fresh"
    run('append_text("log.txt", "!")')
    assert (project / "log.txt").read_text() == "fresh!"


def test_load_params_names_a_linked_file_as_written(project):
    np = pytest.importorskip("numpy")
    (project / "runs" / "deep").mkdir(parents=True)
    np.savez(project / "runs" / "deep" / "real.npz", **{"_hidden": np.zeros(2)})
    os.symlink("runs/deep/real.npz", project / "m.npz")
    message = refused('use nn\nload_params("m.npz")', match="is not a parameter name")
    assert "m.npz" in message and "runs/deep" not in message and str(project) not in message
    np.savez(project / "runs" / "deep" / "real.npz", w=np.zeros(2))
    message = refused('use nn\nload_params("m.npz", like={w: zeros(3)})', match="does not match")
    assert "load_params: m.npz does not match" in message and "deep" not in message


@pytest.mark.parametrize("form", ["-e", "stdin", "run"])
def test_every_way_to_run_a_program_keeps_protected_files(tmp_path, form):
    """`apsi -e`, a program on standard input (the REPL's way in without a terminal) and `apsi run`."""
    code = ('write_text("apsi.toml", "[run]\\nallow = [\\"python\\"]\\n")\n')
    (tmp_path / "p.apsi").write_text(code)
    args = {"-e": ["-e", code], "stdin": [], "run": ["run", "p.apsi"]}[form]
    rc, out, err = cli(args, tmp_path, stdin=code if form == "stdin" else None)
    assert rc == 1 and "protected file" in err and "--allow-write=apsi.toml" in err, err
    assert not (tmp_path / "apsi.toml").exists()
    # with the permission the file is written (once: the second, unconfined run of `cli` would find
    # it there, untrusted, and say so)
    p = subprocess.run([sys.executable, "-m", "apsi", "--allow-write=apsi.toml", *args], cwd=tmp_path,
                       input=code if form == "stdin" else None, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "python" in (tmp_path / "apsi.toml").read_text()


def test_the_file_system_root_is_no_project(project):
    """`apsi -e` in / (a container's default folder) or a program kept in /: else /etc/cron.d and
    /usr/local/bin would be free to write, and every file free to read."""
    permissions.set_current(permissions.Grants(frozenset(), (), (), Path("/")))
    for permission, path in (("read", "etc/hostname"), ("write", "/etc/cron.d/job"), ("write", "usr/x")):
        with pytest.raises(PermissionDenied) as info:
            permissions.check_path(permission, path, "t")
        assert "the project folder is / (the whole file system)" in info.value.message
        assert f"--allow-{permission}=" in info.value.message
    permissions.set_current(permissions.Grants(frozenset(), (), (str(project),), Path("/")))
    assert permissions.check_path("write", str(project / "out.txt"), "t") == str(project / "out.txt")
    rc, out, err = cli(["-e", 'print(exists("etc/hostname"))'], "/")
    assert rc == 1 and "the project folder is /" in err


def test_a_module_used_through_a_link_is_named_as_used(project):
    (project / "real").mkdir()
    (project / "real" / "impl.apsi").write_text("let x = \n")
    os.symlink("real/impl.apsi", project / "lib.apsi")
    rc, out, err = cli(["-e", "use lib"], project)
    assert rc == 2 and err.startswith("lib.apsi:1:9") and "real" not in err and "impl" not in err
