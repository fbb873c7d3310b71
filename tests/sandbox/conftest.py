import pytest

from apsi_lang import permissions


@pytest.fixture
def project(tmp_path, monkeypatch):
    """tmp/proj is the project folder (the current folder); tmp/outside holds a file outside it."""
    before = permissions.current()      # restored after: Grants() made here would hold the tmp folder
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret", encoding="utf-8")
    (proj / "inside.txt").write_text("inside", encoding="utf-8")
    monkeypatch.chdir(proj)
    yield proj
    permissions.set_current(before)
