"""Issue 28: a virtual environment inside the project (`.venv`), or in ~/.venvs/apsi with `apsi` run
from ~, hid every module: installed.py left out every sys.path entry under the current or project
folder (issue 15's fix for planted dist-info folders), the environment's site-packages included. The
interpreter's own environment is now trusted wherever it lives, and programs cannot write into it;
planted folders elsewhere in the project stay ignored (test_planted_packages.py)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from apsi_lang import installed, writable
from sandbox.helpers import ROOT, refused, run

SOURCES = ("apsi", "apsi_cli", "apsi_lang", "apsi_layers", "pyproject.toml", "README.md", "examples")


@pytest.fixture
def environment_in(monkeypatch):
    """Pretend the interpreter's environment is `folder` (resolved), as a venv inside the project is."""
    def pretend(folder):
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setattr(installed, "_ENVIRONMENT", [os.path.realpath(folder)])
        monkeypatch.setattr(writable, "_folders", None)     # (it asks installed again)
        return folder
    return pretend


def test_the_search_path_keeps_the_environment_inside_the_project(project, environment_in, monkeypatch):
    site = environment_in(project / ".venv" / "lib" / "python3" / "site-packages")
    monkeypatch.setattr(sys, "path", [str(project), str(site), str(project / "planted"), "/usr/lib/py/x"])
    assert installed.search_path() == [str(site), "/usr/lib/py/x"]


def test_the_real_environment_is_where_the_interpreter_installs():
    found = installed.environment_folders()
    assert os.path.realpath(sysconfig.get_paths()["purelib"]) in found
    assert all(os.path.isabs(f) for f in found)


def test_a_program_cannot_write_into_the_environment(project, environment_in):
    environment_in(project / "py" / "lib" / "pkgs")       # (names no other rule knows)
    message = refused('write_text("py/lib/pkgs/numpy_helper.txt", "x")', "write",
                      match="Python environment Apsi runs in")
    assert "--allow-write=py/lib/pkgs/numpy_helper.txt" in message
    assert not (project / "py" / "lib" / "pkgs" / "numpy_helper.txt").exists()
    # as for .git/: granted for that path, the user has said so
    run('write_text("py/lib/pkgs/ok.txt", "x")', write=["py/lib/pkgs"])
    assert (project / "py" / "lib" / "pkgs" / "ok.txt").read_text() == "x"


# --- real virtual environments (python -m venv + pip install -e, offline) ---------------------------

def _packages_without_apsi(deps):
    """The test interpreter's installed packages, hard-linked into `deps` (copied where links cannot
    be made), without Apsi itself: the new environment finds NumPy, click… there, and Apsi only in
    its own site-packages. (Links, not symlinks: the kernel's confinement checks the target's path.)"""
    deps.mkdir()
    sources = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    for site in dict.fromkeys(sources):
        for name in sorted(os.listdir(site)):
            skip = name.startswith(("apsi", "__editable__", "__pycache__", "torch", "nvidia", "triton"))
            if skip or name.endswith(".pth") or (deps / name).exists():
                continue
            src = os.path.join(site, name)
            if os.path.isdir(src):
                shutil.copytree(src, deps / name, copy_function=_link_or_copy, symlinks=True)
            else:
                _link_or_copy(src, deps / name)


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _bare_venv(where, deps):
    """A venv at `where` that finds Apsi's dependencies but not Apsi; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "test-deps.pth").write_text(f"{deps}\n")
    return python


def _make_venv(where, deps, source):
    """A venv at `where` with `source` installed editable from it, offline; its apsi."""
    python = _bare_venv(where, deps)
    env = {**_clean_env(), "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}
    p = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "-e", str(source)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return where / "bin" / "apsi"


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APSI_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, **extra}


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone's sources (what `pip install -e .` needs) and the packages Apsi depends on."""
    base = tmp_path_factory.mktemp("clone")
    proj = base / "apsi"
    proj.mkdir()
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, proj / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, proj / name)
    _packages_without_apsi(base / "deps")
    return proj, base / "deps"


@pytest.mark.slow
def test_a_venv_inside_the_project_runs_the_quickstart(clone):
    """The README's first command from a fresh clone with its own .venv."""
    proj, deps = clone
    apsi = _make_venv(proj / ".venv", deps, proj)
    p = subprocess.run([str(apsi), "examples/quickstart.apsi"], cwd=proj, capture_output=True, text=True,
                       env=_clean_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    assert "accuracy" in p.stdout


@pytest.mark.slow
def test_a_venv_in_home_runs_from_home(clone, tmp_path):
    """docs/pkg.md's ~/.venvs/apsi, with apsi run from ~ (the home folder is then the project)."""
    proj, deps = clone
    home = tmp_path / "home"
    apsi = _make_venv(home / ".venvs" / "apsi", deps, proj)
    for name in ("nn", "layers", "plot", "units", "web"):
        p = subprocess.run([str(apsi), "-e", f"use {name}\nprint(\"{name} ok\")"], cwd=home,
                           capture_output=True, text=True, env=_clean_env(HOME=str(home)), timeout=120)
        assert p.returncode == 0 and p.stdout == f"{name} ok\n", p.stderr


@pytest.mark.slow
def test_doctor_says_why_the_shipped_modules_cannot_be_found(clone, tmp_path):
    """`python -m apsi doctor` from a checkout that is not installed in this Python: doctor said
    "Nothing is broken" while `use layers` failed."""
    proj, deps = clone
    python = _bare_venv(tmp_path / "venv", deps)

    def doctor():
        p = subprocess.run([str(python), "-m", "apsi", "doctor", "--json"], cwd=proj, capture_output=True,
                           text=True, env=_clean_env(), timeout=120)
        rows = [c for c in json.loads(p.stdout)["checks"] if c["key"] == "modules"]
        return p.returncode, rows

    code, rows = doctor()
    assert code == 1 and [r["status"] for r in rows] == ["fail"], rows
    assert rows[0]["detail"].startswith("`use nn, layers, plot, units, web` cannot find them for a program "
                                        "in this folder: no installed package provides them in this Python")
    assert f"{python} -m pip install -e" in rows[0]["fix"]
    # the metadata a checkout keeps after `pip install -e` elsewhere is under the folder: not searched
    info = proj / "apsi.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: apsi\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[apsi.modules]\nnn = apsi_layers.apsi_modules:nn_module\n"
                                           "layers = apsi_layers.apsi_modules:layers_module\n")
    try:
        code, rows = doctor()
    finally:
        shutil.rmtree(info)
    assert code == 1 and "Apsi's metadata is only in apsi.egg-info, under the current or project folder, " \
        "which `use` does not search" in rows[0]["detail"], rows
