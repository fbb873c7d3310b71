"""The file-level import graph (scripts/import_cycles.py, function-level imports counted) keeps two
properties: no circle between two files but the two the language needs, and no file outside
apsi_layers/backends/<name>/ (the registry aside) imports a backend's own modules."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "import_cycles.py"


def _module():
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_the_two_circles_the_language_needs():
    m = _module()
    pairs = m.two_cycles(m.graph())
    assert {frozenset(p) for p in pairs} == m.ALLOWED, pairs


def test_no_file_outside_a_backend_imports_its_modules():
    m = _module()
    assert m.backend_reach(m.graph()) == []


def test_the_script_finds_a_circle_closed_inside_a_function(tmp_path, monkeypatch):
    """A function-level import closes a circle too (the measure the issue asked for)."""
    m = _module()
    pkg = tmp_path / "apsi_lang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import g\n")
    (pkg / "b.py").write_text("def g():\n    from .a import x\n")
    monkeypatch.setattr(m, "ROOT", tmp_path)
    monkeypatch.setattr(m, "PACKAGES", ("apsi_lang",))
    assert m.two_cycles(m.graph()) == [("apsi_lang.a", "apsi_lang.b")]


def test_the_script_exits_1_on_a_circle_outside_the_allowed_ones():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "0 outside the allowed ones" in done.stdout, done.stdout + done.stderr
