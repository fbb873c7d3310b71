"""Every test runs with its own user config folder, so the record of trusted apsi.toml files
(apsi_lang/trust.py) is never the real user's, and subprocesses inherit the same one."""

import importlib.util
import os
import signal
import tempfile

import pytest
from child_processes import children_end_with_the_test  # noqa: F401  (autouse: a test's children end with it)

# Property tests draw the same examples on every run (derandomize): CI must not fail on a draw no
# earlier run made. HYPOTHESIS_PROFILE=explore draws new ones, to look for bugs on purpose.
try:
    from hypothesis import settings as _hypothesis

    _hypothesis.register_profile("suite", derandomize=True, database=None)
    _hypothesis.register_profile("explore", max_examples=500)
    _hypothesis.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))
except ImportError:             # (hypothesis is in the test extra; a test file needing it says so)
    pass

# A suite started in the background by a non-interactive shell (a CI script's `cmd &`) inherits SIGINT
# ignored, and so would every `apsi` a test starts: a Ctrl-C test's program would then run on, as
# such a program rightly does. The tests model a terminal's foreground program, which gets Ctrl-C:
# with a handler here, each child starts with SIGINT at its default (exec resets handlers, not SIG_IGN).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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


HAVE_TORCH = importlib.util.find_spec("torch") is not None


def pytest_collection_modifyitems(config, items):
    """Tests marked `torch` skip, saying why, where PyTorch is not installed (it is optional); found
    without importing it, so collection stays fast."""
    if HAVE_TORCH:
        return
    skip = pytest.mark.skip(reason="PyTorch is not installed (optional: apsi pkg install torch-auto)")
    for item in items:
        if item.get_closest_marker("torch"):
            item.add_marker(skip)
