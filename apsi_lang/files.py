"""Atomic writes: a crash or a full disk never leaves a half-written file where the old one was."""

import os
from contextlib import contextmanager


@contextmanager
def atomic_open(path, mode="w", encoding=None):
    """Write to a temporary file in the target's folder; it replaces `path` only if the block succeeds."""
    import tempfile  # not at import time: it pulls in random and shutil

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _mode_for(path):
    """The mode the written file should have: the old file's, or what open() would give a new one.

    mkstemp makes files readable by their owner only; a config file or saved parameters should not
    silently become private."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
