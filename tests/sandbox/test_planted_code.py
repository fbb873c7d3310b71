"""Issue 15: a program without --allow-write may write inside its project, but not plant code that a
shell, Python's import system or a tool runs later: rewriting an executable drops its execute bits,
and the files a virtual environment, a distribution's metadata, npm or just run are protected."""

import os
import stat

import pytest

from sandbox.helpers import caught_but_the_last, cli, said_by_each


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("name, flags, keeps", [("run.txt", [], False),
                                                ("configure", ["--allow-write"], True),
                                                ("configure", ["--allow-write=configure"], True)])
def test_rewriting_an_executable_keeps_its_execute_bits_only_with_write(project, name, flags, keeps):
    """Issue 29: without write, `configure` (not a data file) cannot be written at all; a data file
    that someone made executable (run.txt) loses its execute bits when a program rewrites it."""
    script = project / name
    for _ in range(2):                     # cli runs twice: with the kernel's wall and without
        script.write_text("#!/bin/sh\necho original\n")
        script.chmod(0o755)
    code, out, err = cli([*flags, "-e", f'write_text("{name}", "#!/bin/sh\\necho planted\\n")'], project)
    assert code == 0, err
    assert "planted" in script.read_text()
    assert bool(mode(script) & 0o111) is keeps, oct(mode(script))
    assert mode(script) & 0o644 == 0o644          # the rest of the mode is kept


PLANTED = [
    "zzz-1.0.dist-info/METADATA", "zzz-1.0.dist-info/entry_points.txt", "pkg.egg-info/entry_points.txt",
    "entry_points.txt", "venv/bin/activate", "venv/bin/python3", "venv/Scripts/pip.exe", "package.json",
    "justfile", "Dockerfile", "sitecustomize.py", "usercustomize.py", "zzz.pth", "bin/activate.fish",
    "matplotlibrc",
]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Every path written by one program (helpers.caught_but_the_last), in a project with a virtual
    environment and each path's folder: ({path: what was said}, exit code, project folder)."""
    project = tmp_path_factory.mktemp("planted")
    (project / "venv").mkdir()
    (project / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for path in PLANTED:
        os.makedirs(project / (os.path.dirname(path) or "."), exist_ok=True)
    writes = [f'write_text("{p}", "planted")' for p in PLANTED]
    code, out, err = cli(["-e", caught_but_the_last(writes)], project)
    return said_by_each(PLANTED, out, err), code, project


@pytest.mark.parametrize("path", PLANTED)
def test_files_that_run_code_later_are_protected(planted, path):
    said, code, project = planted
    assert code == 1 and "protected" in said[path] and "--allow-write" in said[path], said[path]
    assert not (project / path).exists()


def test_a_plain_bin_folder_is_not_protected(project):
    """Only a virtual environment's bin/ (a pyvenv.cfg beside it) holds what a shell runs by convention."""
    (project / "bin").mkdir()
    code, out, err = cli(["-e", 'write_text("bin/data.txt", "ok")'], project)
    assert code == 0, err


def test_configure_is_not_data_so_it_needs_write(project):
    (project / "configure").write_text("#!/bin/sh\necho original\n")
    code, out, err = cli(["-e", 'write_text("configure", "#!/bin/sh\\necho planted\\n")'], project)
    assert code == 1 and "only data files may be written without permission" in err, err
    assert "--allow-write=configure" in err and "original" in (project / "configure").read_text()
