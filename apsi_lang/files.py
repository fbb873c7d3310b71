"""Files Apsi writes and reads: atomic writes with the usual modes, and opens of checked paths.

A write never leaves a half-written file where the old one was (a temporary file beside the target,
then a rename). The result has the mode any program's new file gets (0666 minus the umask), or the
mode the file already had. Paths come resolved from permissions.check_path, so a symlink inside the
project is written through (the link stays, its target changes) and what was checked is what opens.
"""

import os
import stat
from contextlib import contextmanager

_umask = None
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def umask():
    """The process's umask (read once; os.umask can only be read by setting it)."""
    global _umask
    if _umask is None:
        _umask = os.umask(0o022)
        os.umask(_umask)
    return _umask


@contextmanager
def atomic_open(path, mode="w", encoding=None):
    """Write to a temporary file in the target's folder; it replaces `path` only if the block succeeds."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        keep = stat.S_IMODE(os.stat(path).st_mode)      # an existing file keeps its mode …
        if not _may_keep_execute(path):
            keep &= ~0o111                              # … but not its execute bits (see below)
    except FileNotFoundError:
        keep = 0o666 & ~umask()
    fd, tmp = _temporary(folder)
    PENDING.add(tmp)
    try:
        os.fchmod(fd, keep)
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
        os.replace(tmp, path)
    finally:
        PENDING.discard(tmp)
        if os.path.lexists(tmp):
            os.unlink(tmp)


PENDING = set()     # temporary files of atomic writes in progress, on any thread


def remove_pending():
    """Delete the temporary files of writes that will never finish (the process ends without
    unwinding the thread that makes them: see bigstack.abandoned)."""
    for tmp in list(PENDING):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _may_keep_execute(path):
    """A program may rewrite files of its project without --allow-write; had a rewritten executable
    (./configure, a script in bin/) kept its mode, the user would run the program's code next time.
    Only with the write permission for the path does a rewrite keep the execute bits."""
    from . import permissions

    grants = permissions.current()
    return not grants.denies("write", path) and grants.explicitly("write", permissions.resolve(path))


def _temporary(folder):
    """A new file beside the target, opened write-only (tempfile.mkstemp opens read-write, which the
    kernel's confinement refuses where only writing is granted), never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    for _ in range(100):
        tmp = os.path.join(folder, f".{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def open_checked(resolved, mode="r", encoding=None):
    """Open a path resolved by permissions.check_path. O_NOFOLLOW: if the last part became a symlink
    since the check, the open fails instead of following it."""
    return open(resolved, mode, encoding=encoding, opener=lambda p, _: os.open(p, os.O_RDONLY | _NOFOLLOW))


class HardLinked(OSError):
    """The file has other names (hard links), which the path check never saw."""


def append_checked(resolved, encoding="utf-8"):
    """Open a resolved path to add at its end (created with 0666 minus the umask, as any program's new
    file), not following a last part that became a symlink since the check. A file with other names
    (hard links) is refused: adding to it would change a file under a name that was not checked (a
    hard link to apsi.toml); an atomic write replaces the name instead, so it is safe there."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW

    def opener(p, _):
        fd = os.open(p, flags, 0o666)
        if os.fstat(fd).st_nlink > 1:
            os.close(fd)
            raise HardLinked(0, "the file has other names (hard links); write it whole with "
                                "write_text, which gives this name its own file")
        return fd

    return open(resolved, "a", encoding=encoding, opener=opener)
