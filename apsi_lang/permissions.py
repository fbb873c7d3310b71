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
# permissions that can be granted (or denied) for some names only, as Deno does:
# env for variable names, run for program names, net for host or host:port
NAME_PERMISSIONS = ("env", "run", "net")


@dataclass(frozen=True)
class Grants:
    """The permissions in force: whole grants, path grants, and the project folder."""

    granted: frozenset = frozenset()
    read_paths: tuple = ()
    write_paths: tuple = ()
    project_root: Path = field(default_factory=Path.cwd)
    # permission -> where it came from ("--allow-python", "/proj/apsi.toml"), for messages and doctor
    sources: tuple = ()
    # scoped grants: ((permission, (name, …)), …) for env/run/net, e.g. (("env", ("HOME",)),)
    names: tuple = ()
    # denials win over every grant: whole permissions, and ((permission, (name or path, …)), …)
    denied: frozenset = frozenset()
    denied_scopes: tuple = ()

    def allows(self, permission, path=None, name=None):
        if permission not in PERMISSIONS:
            raise ValueError(f"unknown permission {permission!r}; known: {', '.join(PERMISSIONS)}")
        if self.denies(permission, path, name):
            return False
        if permission in self.granted:
            return True
        if permission in PATH_PERMISSIONS and path is not None:
            target = resolve(path)
            roots = (self.project_root,) + (self.read_paths if permission == "read" else self.write_paths)
            return any(_inside(target, Path(r)) for r in roots)
        if permission in NAME_PERMISSIONS and name is not None:
            return any(_name_matches(permission, name, granted) for granted in _scope(self.names, permission))
        return False

    def denies(self, permission, path=None, name=None):
        """True when a --deny-… flag or a deny key refuses this (denials win over grants)."""
        if permission in self.denied:
            return True
        scope = _scope(self.denied_scopes, permission)
        if not scope:
            return False
        if permission in PATH_PERMISSIONS and path is not None:
            target = resolve(path)
            return any(_inside(target, Path(p)) for p in scope)
        if name is not None:
            return any(_name_matches(permission, name, d) for d in scope)
        return False

    def scoped(self, permission):
        """The names granted for a permission that is not granted whole (for doctor and messages)."""
        return _scope(self.names, permission)


def _scope(pairs, permission):
    for p, names in pairs:
        if p == permission:
            return names
    return ()


def _name_matches(permission, name, granted):
    """env and run: the exact name. net: 'host' allows every port of it, 'host:port' that port."""
    if permission != "net":
        return name == granted
    host, _, port = name.rpartition(":")
    return granted in (name, host)


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


def allowed(permission, path=None, name=None):
    """True when `permission` (for `path` or `name`, if given) is granted; never raises for a denial."""
    return _current.allows(permission, path, name)


def require(permission, what, path=None, name=None):
    """Raise PermissionDenied unless `permission` is granted. `what` names the operation for the message;
    `name` is the variable (env), program (run) or host:port (net) asked for."""
    if _current.allows(permission, path, name):
        return
    raise PermissionDenied(denial_message(permission, what, path, name), permission)


def denial_message(permission, what, path=None, name=None):
    if _current.denies(permission, path, name):
        return (f"{what} is denied by --deny-{permission} (or a deny key in apsi.toml): a denial wins "
                "over every grant")
    flag = f"--allow-{permission}"
    where = ""
    if path is not None and permission in PATH_PERMISSIONS:
        where = f" ({resolve(path)} is outside the project folder {_current.project_root})"
        flag = f"--allow-{permission} (or --allow-{permission}={resolve(path).parent})"
    elif name is not None and permission in NAME_PERMISSIONS:
        scoped = _current.scoped(permission)
        if scoped:
            where = f" ({name} is not among the granted {', '.join(scoped)})"
        flag = f"--allow-{permission}={name} (or --allow-{permission} for all)"
        key = {"env": "env", "run": "run", "net": "net"}[permission]
        return (f"{what} needs permission '{permission}'{where}: run with {flag} "
                f"(or [run] {key} = [\"{name}\"] in apsi.toml)")
    return (f"{what} needs permission '{permission}'{where}: run with {flag} "
            f"(or [run] allow = [\"{permission}\"] in apsi.toml)")
