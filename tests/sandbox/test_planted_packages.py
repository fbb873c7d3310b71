"""Issue 15, part 2: `python -m apsi` ran a planted package. A program wrote
`zzz-1.0.dist-info/{METADATA,entry_points.txt}` into its folder; `python -m apsi` had the current folder
on sys.path, so a later `use` found the planted distribution and called code of its choosing (and every
later run did). Now nothing is imported or found from the current folder, the program's folder or the
project; and the metadata folders themselves are protected names."""

import os
import subprocess
import sys

import pytest

from apsi_lang import installed
from sandbox.helpers import ROOT, cli


def plant(folder, target="os:getcwd"):
    info = folder / "zzz-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zzz\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[apsi.modules]\nevil = {target}\n[apsi.layers]\nevil = {target}\n")


def python_m_apsi(args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env.pop("PYTHONPATH", None)           # as a user runs it: the installed apsi, the folder on sys.path
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def test_a_planted_distribution_is_not_a_module(project):
    plant(project)
    (project / "u.apsi").write_text("if true:\n    use evil\n")
    p = python_m_apsi(["u.apsi"], project)
    assert p.returncode != 0 and "no module named 'evil'" in p.stderr, p.stderr


def test_a_planted_python_module_in_the_current_folder_is_not_imported(project):
    (project / "apsi_lang.py").write_text('print("PLANTED")\n')
    (project / "apsi_cli.py").write_text('print("PLANTED")\n')
    p = python_m_apsi(["-e", "print(1 + 1)"], project)
    assert p.returncode == 0 and p.stdout == "2\n" and "PLANTED" not in p.stdout + p.stderr, p


def test_use_layers_does_not_load_planted_layer_plugins(project):
    plant(project, target="sandbox_planted_xyz:boom")
    p = python_m_apsi(["--allow-python", "-e", "use layers\nprint(1)"], project)
    assert p.returncode == 0 and "sandbox_planted_xyz" not in p.stderr, p.stderr


def test_the_search_path_leaves_out_the_project_and_the_current_folder(project, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(project), "", str(project / "sub"), "/usr/lib/python3/x"])
    assert installed.search_path() == ["/usr/lib/python3/x"]


def test_a_program_cannot_write_the_metadata(project):
    code, out, err = cli(["-e", 'make_dir("zzz-1.0.dist-info")\n'
                                'write_text("zzz-1.0.dist-info/entry_points.txt", "[x]\\n")'], project)
    assert code == 1 and "protected" in err
    assert not (project / "zzz-1.0.dist-info" / "entry_points.txt").exists()


def test_use_errors_do_not_show_the_absolute_project_path(project):
    (project / "u.apsi").write_text("use nothing_here\n")
    code, out, err = cli(["u.apsi"], project)
    assert code != 0 and "no module named 'nothing_here'" in err
    assert str(project) not in err and str(project.parent) not in err, err


@pytest.mark.parametrize("entry", [str(ROOT)])
def test_a_source_checkout_still_runs_in_place(entry):
    """`python -m apsi` from the checkout's own folder keeps it on sys.path (it is Apsi's code)."""
    p = python_m_apsi(["-e", "print(3)"], entry)
    assert p.returncode == 0 and p.stdout == "3\n", p.stderr
