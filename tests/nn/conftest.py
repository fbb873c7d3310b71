"""Fixtures shared by the nn tests."""

import pytest

from apsi_lang import permissions


@pytest.fixture
def inside(tmp_path, monkeypatch):
    """The current folder is a fresh project with no grants (what a program meets by default)."""
    old = permissions.current()
    permissions.set_current(permissions.Grants(project_root=tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    permissions.set_current(old)
