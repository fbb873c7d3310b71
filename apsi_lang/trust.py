"""Which apsi.toml files their user has trusted, as `direnv allow` and `mise trust` do.

A program that gets any foothold inside its project could rewrite the project's apsi.toml to grant
itself everything on the next run; the kernel's wall cannot stop that (the project stays writable).
So the permissions in an apsi.toml count only when the user trusted that file's exact contents: a
record kept outside every project (the user's config folder), keyed by the file's resolved path and
holding the SHA-256 of its bytes. A changed file is untrusted until trusted again.
"""

import hashlib
import json
import os
from pathlib import Path

TRUSTED, UNTRUSTED, CHANGED = "trusted", "untrusted", "changed"


def store():
    """The record: $XDG_CONFIG_HOME/apsi/trusted.json (~/.config/apsi/trusted.json)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "apsi" / "trusted.json"


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _key(path):
    return os.path.realpath(str(path))


def _records():
    try:
        data = json.loads(store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def state(path):
    """TRUSTED when this exact content was trusted, CHANGED when another content was, else UNTRUSTED."""
    recorded = _records().get(_key(path))
    if recorded is None:
        return UNTRUSTED
    try:
        return TRUSTED if recorded == digest(path) else CHANGED
    except OSError:
        return UNTRUSTED


def trust(path):
    """Record the file's current contents as trusted (atomic write of the record)."""
    _write({**_records(), _key(path): digest(path)})


def revoke(path):
    records = _records()
    if records.pop(_key(path), None) is not None:
        _write(records)


def _write(records):
    from .files import atomic_open

    target = store()
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(str(target), "w", encoding="utf-8") as f:
        json.dump(records, f, indent=1, sort_keys=True)
