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


def digest(path, data=None):
    """SHA-256 of `data` (the bytes a caller read, parsed and showed) or else of the file now."""
    return hashlib.sha256(Path(path).read_bytes() if data is None else data).hexdigest()


def _key(path):
    return os.path.realpath(str(path))


def _records():
    try:
        data = json.loads(store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def state(path, data=None):
    """TRUSTED when this exact content was trusted, CHANGED when another content was, else UNTRUSTED.
    `data`: the bytes the caller read and will use (config.load parses them): judge those, never a
    second read of the file, which another process may have changed in between."""
    recorded = _records().get(_key(path))
    if recorded is None:
        return UNTRUSTED
    try:
        return TRUSTED if recorded == digest(path, data) else CHANGED
    except OSError:
        return UNTRUSTED


def trust(path, data):
    """Record `data`, the exact bytes of the file that were shown to the user, as trusted (atomic
    write of the record). If the file holds other bytes by now, they stay untrusted."""
    _write({**_records(), _key(path): digest(path, data)})


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
