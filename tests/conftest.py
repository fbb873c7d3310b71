"""Every test runs with its own user config folder, so the record of trusted apsi.toml files
(apsi_lang/trust.py) is never the real user's, and subprocesses inherit the same one."""

import os
import tempfile

_CONFIG = tempfile.mkdtemp(prefix="apsi-test-config-")
os.environ["XDG_CONFIG_HOME"] = _CONFIG


def trust_toml(path):
    """The user's `apsi trust`, for tests whose apsi.toml must grant what it says."""
    from apsi_lang import trust

    trust.trust(path)
