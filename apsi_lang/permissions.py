"""What a running Apsi program may do, and the small API other packages use to ask.

Permissions: python, read, write, net, env, run. They come from command-line flags and apsi.toml.
Reading and writing inside the project folder (the folder of the nearest apsi.toml, else the
program's folder) needs nothing; outside it, `read`/`write` must be granted (whole, or for paths).

Other packages call `require(name, what=...)` to check and raise, or `allowed(name)` to ask quietly
(so `backend="auto"` can stay on NumPy where `backend="torch"` raises).
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import PermissionDenied

PERMISSIONS = ("python", "read", "write", "net", "env", "run")
PATH_PERMISSIONS = ("read", "write")


@dataclass(frozen=True)
class Grants:
    """The permissions in force: whole grants, path grants, and the project folder."""

    granted: frozenset = frozenset()
    read_paths: tuple = ()
    write_paths: tuple = ()
    project_root: Path = field(default_factory=Path.cwd)
    # permission -> where it came from ("--allow-python", "/proj/apsi.toml"), for messages and doctor
    sources: tuple = ()

    def allows(self, permission, path=None):
        if permission not in PERMISSIONS:
            raise ValueError(f"unknown permission {permission!r}; known: {', '.join(PERMISSIONS)}")
        if permission in self.granted:
            return True
        if permission in PATH_PERMISSIONS and path is not None:
            target = resolve(path)
            roots = (self.project_root,) + (self.read_paths if permission == "read" else self.write_paths)
            return any(_inside(target, Path(r)) for r in roots)
        return False


def resolve(path):
    """An absolute path with symlinks and `..` resolved, so neither can step outside a granted folder."""
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _inside(target, root):
    root = resolve(root)
    return target == root or root in target.parents


_current = Grants()


def current():
    return _current


def set_current(grants):
    """Install the grants for the program about to run (the runner calls this once)."""
    global _current
    _current = grants


def allowed(permission, path=None):
    """True when `permission` (for `path`, if given) is granted; never raises for a denial."""
    return _current.allows(permission, path)


def require(permission, what, path=None):
    """Raise PermissionDenied unless `permission` is granted. `what` names the operation for the message."""
    if _current.allows(permission, path):
        return
    raise PermissionDenied(denial_message(permission, what, path), permission)


def denial_message(permission, what, path=None):
    flag = f"--allow-{permission}"
    where = ""
    if path is not None and permission in PATH_PERMISSIONS:
        where = f" ({resolve(path)} is outside the project folder {_current.project_root})"
        flag = f"--allow-{permission} (or --allow-{permission}={resolve(path).parent})"
    return (f"{what} needs permission '{permission}'{where}: run with {flag} "
            f"(or [run] allow = [\"{permission}\"] in apsi.toml)")
