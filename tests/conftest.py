"""Every test runs with its own user config folder, so the record of trusted apsi.toml files
(apsi_lang/trust.py) is never the real user's, and subprocesses inherit the same one."""

import os
import tempfile

import pytest

_CONFIG = tempfile.mkdtemp(prefix="apsi-test-config-")
os.environ["XDG_CONFIG_HOME"] = _CONFIG


def trust_toml(path):
    """The user's `apsi trust`, for tests whose apsi.toml must grant what it says."""
    from pathlib import Path

    from apsi_lang import trust

    trust.trust(path, Path(path).read_bytes())


@pytest.fixture
def python_allowed():
    """Grants with `python` for the test (the torch backend), the previous grants restored after."""
    from apsi_lang import permissions

    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset({"python"})))
    yield
    permissions.set_current(before)


@pytest.fixture
def project_with_python(tmp_path, monkeypatch):
    """The test runs in tmp_path as its project folder (writes there need no grant), with `python`
    granted (the torch backend); the previous grants restored after."""
    from apsi_lang import permissions

    monkeypatch.chdir(tmp_path)
    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset({"python"}), project_root=tmp_path))
    yield tmp_path
    permissions.set_current(before)
