"""Files Apsi writes and reads: atomic writes with the usual modes, and opens of checked paths.

A write never leaves a half-written file where the old one was (a temporary file beside the target,
then a rename). The result has the mode any program's new file gets (0666 minus the umask), or the
mode the file already had. Paths come resolved from permissions.check_path, so a symlink inside the
project is written through (the link stays, its target changes) and what was checked is what opens.
"""

import os
import re
import stat
import threading
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
    name = os.path.basename(path)
    remove_stale(folder, name)
    fd, tmp = _temporary(folder, name)
    try:
        os.fchmod(fd, keep)
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
        os.replace(tmp, path)
    finally:
        # removed, then forgotten: a Ctrl-C raised into this thread between the two leaves the name in
        # PENDING, where remove_pending still finds it (see there)
        try:
            os.unlink(tmp)
        except FileNotFoundError:       # replaced (the write succeeded)
            pass
        PENDING.discard(tmp)


PENDING = set()     # temporary files of atomic writes in progress, on any thread
_creating = threading.Lock()    # held from naming a temporary file to creating it
_closed = False     # remove_pending(final=True) ran: no new temporary file, the process is ending


def remove_pending(final=False):
    """Delete the temporary files of writes that will never finish: after a Ctrl-C or SIGTERM, which is
    raised into the writing thread between any two of its steps (right after the file was created, or
    in the middle of the cleanup above), and the thread unwinds or is abandoned inside C code (see
    bigstack.abandoned). `final`: the process is about to end with a thread still running, and that
    thread must not create a new file after this."""
    global _closed
    held = _creating.acquire(timeout=1.0)        # (a creation under way ends in microseconds)
    try:
        _closed = _closed or final
        for tmp in list(PENDING):
            try:
                os.unlink(tmp)
            except OSError:
                pass
            PENDING.discard(tmp)
    finally:
        if held:
            _creating.release()


def _may_keep_execute(path):
    """A program may rewrite files of its project without --allow-write; had a rewritten executable
    (./configure, a script in bin/) kept its mode, the user would run the program's code next time.
    Only with the write permission for the path does a rewrite keep the execute bits."""
    from . import permissions

    grants = permissions.current()
    return not grants.denies("write", path) and grants.explicitly("write", permissions.resolve(path))


def _temporary(folder, name):
    """A new file beside the target, opened write-only (tempfile.mkstemp opens read-write, which the
    kernel's confinement refuses where only writing is granted), never through a link. Its name says
    whose it is: `.NAME.HOST-PID.RANDOM.tmp`, so a later write of NAME can tell a leftover of a writer
    that died (kill -9) from one in progress. Listed in PENDING before it exists, so another thread's
    remove_stale never takes it for a leftover."""
    for _ in range(100):
        tmp = os.path.join(folder, f"{_prefix(name)}{_host()}-{os.getpid()}.{os.urandom(6).hex()}.tmp")
        fd = _create(tmp)
        if fd is not None:
            return fd, tmp
    raise FileExistsError(f"no free temporary name in {folder}")


def _create(tmp):
    """The new file's descriptor, or None when the name is taken. The name stays in PENDING unless the
    file was not made: an exception raised into this thread right after the creation (Ctrl-C) must
    leave it where remove_pending finds it."""
    with _creating:
        if _closed:
            raise OSError(f"{tmp}: not created, the process is ending")
        PENDING.add(tmp)
        try:
            return _open_new(tmp)
        except FileExistsError:
            PENDING.discard(tmp)
            return None
        except OSError:
            PENDING.discard(tmp)
            raise


def _open_new(tmp):
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)


# ---- temporary files left by writers that died -------------------------------------------------------

_HOST = []


def _host():
    """4 hex digits of this machine's name (a pid means nothing on another machine sharing the folder);
    found on the first write, not at start-up."""
    if not _HOST:
        import hashlib
        import socket

        _HOST.append(hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:4])
    return _HOST[0]

STALE_AFTER = 24 * 3600      # seconds: older than this, a temporary file is a leftover whoever wrote it
# patterns as text: re compiles them on the first write, not at start-up
_TAIL = r"([0-9a-f]{4})-(\d+)\.[0-9a-f]{12}\.tmp"
# any temporary file of an atomic write: this naming, and the one before it (.RANDOM.tmp)
LEFTOVER = r"\..+\.[0-9a-f]{4}-\d+\.[0-9a-f]{12}\.tmp|\.[0-9a-f]{12}\.tmp"
_seen = {}                   # folder -> temporary files found there by its first write in this process


def _prefix(name):
    """`.NAME.` for the target's name, or `.~HASH.` for a name too long to repeat (255 bytes at most)."""
    if len(os.fsencode(name)) <= 100:
        return f".{name}."
    import hashlib

    return f".~{hashlib.sha256(os.fsencode(name)).hexdigest()[:16]}."


def remove_stale(folder, name):
    """Delete the temporary files of earlier writes of `name` in `folder` whose writer is gone: a
    process on this machine that no longer exists, or any writer more than a day ago. The folder is
    listed once per process (a loop writing many files into one folder lists it once)."""
    if folder not in _seen:
        try:
            _seen[folder] = [e for e in os.listdir(folder) if re.fullmatch(LEFTOVER, e)]
        except OSError:           # a folder granted for writing only cannot be listed: nothing to do
            _seen[folder] = []
    prefix = _prefix(name)
    for entry in list(_seen[folder]):
        tail = re.fullmatch(_TAIL, entry[len(prefix):]) if entry.startswith(prefix) else None
        path = os.path.join(folder, entry)
        if tail and path not in PENDING and _writer_gone(path, tail.group(1), int(tail.group(2))):
            try:
                os.unlink(path)
                _seen[folder].remove(entry)
            except (OSError, ValueError):     # gone already (another thread, another process)
                pass


def _writer_gone(path, host, pid):
    import time

    try:
        if time.time() - os.lstat(path).st_mtime > STALE_AFTER:
            return True
    except OSError:
        return False
    if host != _host():
        return False              # another machine's (a shared folder): only age tells
    if pid == os.getpid():
        return True               # this process's, and not in PENDING: an earlier process with this pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:               # alive, or not ours to ask about (another user, the confinement)
        return False
    return False


def leftovers(root, limit=20000):
    """(path, size) of the temporary files of atomic writes under `root` that nothing removed (for
    `apsi doctor`); at most `limit` entries are looked at, and .git and node_modules are skipped."""
    found, seen = [], 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "node_modules")]
        seen += len(names) + len(dirs)
        for n in names:
            if re.fullmatch(LEFTOVER, n) and os.path.join(folder, n) not in PENDING:
                try:
                    found.append((os.path.join(folder, n), os.lstat(os.path.join(folder, n)).st_size))
                except OSError:
                    pass
        if seen > limit:
            break
    return found


def open_checked(resolved, mode="r", encoding=None):
    """Open a path resolved by permissions.check_path. O_NOFOLLOW: if the last part became a symlink
    since the check, the open fails instead of following it."""
    return open(resolved, mode, encoding=encoding, opener=lambda p, _: os.open(p, os.O_RDONLY | _NOFOLLOW))


class NotRegular(OSError):
    """A file read by position (a data file) that is a pipe, a device or a socket."""


def open_regular(resolved):
    """open_checked for a file read by position (pread): a named pipe (FIFO) would block the open
    until some writer came, and a device has no size, so anything but a regular file is refused. The
    open does not wait (O_NONBLOCK, cleared again: it changes nothing for a regular file)."""
    import fcntl
    import stat

    def opener(p, _):
        fd = os.open(p, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise NotRegular(0, "it is not a regular file (a named pipe, a device or a socket); a data "
                                "file is a file on disk")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd

    return open(resolved, "rb", opener=opener)


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
