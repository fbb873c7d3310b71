"""`use units` in tests: until Apsi is reinstalled with this version's pyproject.toml, the `units`
entry point is missing from the installed metadata; a session folder then declares it (outside every
project folder, as installed.py requires) for this process and the programs it starts."""

import os
import sys
from pathlib import Path

import pytest

from apsi_lang import permissions, run_source

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="package", autouse=True)
def units_entry_point(tmp_path_factory):  # package scope: undone after the last units test
    from apsi_lang import installed, modules

    if "units" in installed.entry_points(modules.GROUP):
        yield
        return
    folder = tmp_path_factory.mktemp("units-entry-point")
    info = folder / "apsi_units_dev-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: apsi-units-dev\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(
        "[apsi.modules]\nunits = apsi_layers.apsi_modules:units_module\n")
    sys.path.insert(0, str(folder))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(folder), old) if p)
    installed._cache.clear()
    modules._entry_points = None
    yield
    sys.path.remove(str(folder))
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old
    installed._cache.clear()
    modules._entry_points = None


@pytest.fixture
def run(tmp_path, capsys):
    """Run Apsi source in this process; returns (namespace, stdout)."""
    old = permissions.current()

    def run(src):
        ns = run_source(src, filename=str(tmp_path / "t.apsi"),
                        grants=permissions.Grants(project_root=tmp_path))
        return ns, capsys.readouterr().out
    yield run
    permissions.set_current(old)


@pytest.fixture
def U():
    """The Python surface of `use units` (what the Apsi names are bound to)."""
    from apsi_lang.values import Record
    from apsi_layers.units.exports import units_exports

    return Record(**units_exports())
