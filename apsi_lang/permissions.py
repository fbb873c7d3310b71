"""What a running Apsi program may do, and the small API other packages use to ask.

Permissions: python, read, write, net, env, run. They come from command-line flags and apsi.toml.
Reading and writing inside the project folder (the folder of the nearest apsi.toml, else the
program's folder) needs nothing; outside it, `read`/`write` must be granted (whole, or for paths).
Inside it, a program may write without `write` only data files whose name and place no common tool
reads as code or settings (the allow-list in writable.py, used by `protected_reason`); anything else
(apsi.toml, programs, scripts, Makefile, test_x.txt, .git/) needs `write` granted for that path.

Paths are `str` only. `check_path` resolves a path once (`~`, `..`, symlinks) and returns the
resolved path, which the caller opens, so what is checked is what is opened; messages show the path
as the program wrote it, never the resolved one (which could reveal $HOME or a link's target).

Other packages call `require(name, what=...)` to check and raise, or `allowed(name)` to ask quietly
(so `backend="auto"` can stay on NumPy where `backend="torch"` raises).
"""

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from .errors import PermissionDenied
from .records import Factory, record

PERMISSIONS = ("python", "read", "write", "net", "env", "run")
PATH_PERMISSIONS = ("read", "write")
# permissions that can be granted (or denied) for some names only, as Deno does:
# env for variable names, run for program names, net for host or host:port
NAME_PERMISSIONS = ("env", "run", "net")


def _home_now():
    return os.path.expanduser("~")


@record(frozen=True)
class Grants:
    """The permissions in force: whole grants, path grants, and the project folder."""

    granted: frozenset = frozenset()
    read_paths: tuple = ()
    write_paths: tuple = ()
    project_root: Path = Factory(Path.cwd)
    # permission -> where it came from ("--allow-python", "/proj/apsi.toml"), for messages and doctor
    sources: tuple = ()
    # scoped grants: ((permission, (name, …)), …) for env/run/net, e.g. (("env", ("HOME",)),)
    names: tuple = ()
    # denials win over every grant: whole permissions, and ((permission, (name or path, …)), …)
    denied: frozenset = frozenset()
    denied_scopes: tuple = ()
    # the home folder `~` means, taken when the grants are made (before the environment is cleaned)
    home: str = Factory(_home_now)
    # set by confined(): what runs may only compute, and the messages say so (not a --deny flag)
    only_computes: str = ""

    def allows(self, permission, path=None, name=None):
        if permission not in PERMISSIONS:
            raise ValueError(f"unknown permission {permission!r}; known: {', '.join(PERMISSIONS)}")
        if self.denies(permission, path, name):
            return False
        if permission in PATH_PERMISSIONS and path is not None:
            return self.refusal(permission, path, resolve(path)) is None
        if permission in self.granted:
            return True
        if permission in NAME_PERMISSIONS and name is not None:
            return any(_name_matches(permission, name, granted) for granted in _scope(self.names, permission))
        return False

    def explicitly(self, permission, target):
        """True when `permission` is granted for `target` by a flag or apsi.toml (not the project)."""
        grants = self.read_paths if permission == "read" else self.write_paths
        return permission in self.granted or any(_inside(target, Path(r)) for r in grants)

    def refusal(self, permission, written, target, folder=False):
        """None when `permission` covers `target` (resolved from `written`); else why not:
        "denied", "outside", or why the file is protected (folder=True: a folder, see writable.py)."""
        if self.denies(permission, written):
            return "denied"
        if self.explicitly(permission, target):
            return None
        inside = _inside(target, self.project_root)
        if inside and resolve(self.project_root) == Path("/"):
            return "root"
        if permission == "write":
            reason = protected_reason(written, target, self.project_root, folder)
            if reason:
                return reason
        return None if inside else "outside"

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


def host_problem(value):
    """Why `value` cannot be a net grant (a host, or host:port), or None. A URL or a port that is no
    number matched nothing, while the kernel wall read it as every port: refused with what to write."""
    if "://" in value or "/" in value:
        from urllib.parse import urlsplit

        netloc = urlsplit(value if "://" in value else f"//{value}").netloc
        return f"{value!r} is a URL, not a host: write {netloc or 'its host'} (a host, or host:port)"
    host, colon, port = value.rpartition(":")
    if colon and not host.endswith("]") and ":" not in host:
        if not host:
            return f"{value!r} has no host before its port: write localhost:{port} or 127.0.0.1:{port}"
        if not (port.isdigit() and 0 < int(port) < 65536):
            return (f"{value!r}: the port {port!r} is not a number from 1 to 65535 (write {host}:8080, "
                    f"or {host} for every port)")
    if not value or any(c.isspace() for c in value):
        return f"{value!r} is not a host name (write example.com, or example.com:443 for one port)"
    return None


def _name_matches(permission, name, granted):
    """env and run: the exact name. net: 'host' allows every port of it, 'host:port' that port."""
    if permission != "net":
        return name == granted
    (host, port), (want, want_port) = host_form(name), host_form(granted)
    return host == want and want_port in ("", port)


def host_form(value):
    """(host, port or "") of a net name, as DNS and URLs compare them: without case, without the
    trailing dot of a fully qualified name ("example.com." is example.com), and an IPv6 address
    without the brackets a URL writes it in ("[::1]:80" is ::1 port 80; a bare "::1" has no port).
    Compared as strings, --deny-net=example.com let http://example.com./ through, and
    --deny-net=[::1] http://[::1]/."""
    value = value.lower()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    else:                       # a name with no port, or an IPv6 address
        host, port = value, ""
    return host.rstrip("."), port


def net_name(host, port):
    """The name a connection to host:port is asked about as ("[::1]:80" for an IPv6 address)."""
    host = str(host)
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def resolve(path):
    """An absolute path with symlinks and `..` resolved, so neither can step outside a granted folder."""
    return Path(os.path.realpath(expand_home(str(path))))


def expand_home(path):
    """`~` and `~/…` name the home folder as $HOME said when the grants were made (the kernel's
    confinement then removes $HOME, and with it os.path.expanduser's answer). `~name/…` is left as
    written: check_path refuses it (looking the user up would tell a program which users exist)."""
    if path == "~":
        return _current.home
    if path.startswith("~/"):
        return _current.home.rstrip("/") + path[1:]
    return path


def protected_reason(written, target, root, folder=False):
    """Why writing `written` (resolving to `target`) inside the project needs --allow-write, or None
    (the rule itself is apsi_lang/writable.py: an allow-list). Every name that leads there counts:
    the name as written (with its folder resolved, so an absolute path through a link such as
    /proc/self/cwd is judged by the same names), and the file it reaches (a link named x.apsi, or a
    link to apsi.toml). folder=True: a folder is made or deleted (make_dir, delete)."""
    from . import writable

    root = resolve(root)
    lexical = Path(os.path.abspath(expand_home(written)))
    named = resolve(lexical.parent) / lexical.name
    for path in (lexical, named, target):
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            continue        # outside the project: the read/write grants decide
        if not parts:
            if path == target:
                return "the project folder itself"
            continue
        reason = writable.reason(parts, folder) or writable.environment(root, parts)
        if reason:
            return reason
    return None


def check_path(permission, path, what, follow=True, folder=False):
    """The resolved path (a str) that `permission` ('read' or 'write') allows at `path`; raises
    PermissionDenied (or ApsiError for a path that is not a string). Open what this returns.
    follow=False: the last part is not followed if it is a link (to delete the link itself).
    folder=True: the path names a folder to make or delete, judged as a folder (writable.py)."""
    from .errors import ApsiError

    if type(path) is not str:
        from .values import a_type

        raise ApsiError(f"{what}: a path must be a string, not {a_type(path)}")
    if not path or "\0" in path:
        raise ApsiError(f"{what}: {path!r} is not a file name")
    if path.startswith("~") and not (path == "~" or path.startswith("~/")):
        raise ApsiError(f"{what}: only ~ (your home folder) is understood, not ~name; write the "
                        f"folder itself, or ./{path} for a folder named {path.split('/')[0]}")
    try:
        if follow:
            target = resolve(path)
        else:
            literal = os.path.abspath(expand_home(path))
            target = resolve(os.path.dirname(literal)) / os.path.basename(literal)
    except OSError as e:
        # a link the system will not let this user follow (/proc/1/cwd): where it leads is unknown,
        # so nothing is granted; said in Apsi's words, not as Python's PermissionError
        # (the part that failed is not named: it may be where a link in the project leads, outside)
        raise ApsiError(f"{what}: cannot follow {path!r} ({e.strerror or 'not allowed'}); "
                        f"name a file in the project folder (or one an --allow-{permission} grant "
                        "covers)") from None
    reason = current().refusal(permission, path, target, folder)
    if reason is None:
        return str(target)
    if reason == "outside" and _inside(Path(os.path.normpath(os.path.abspath(expand_home(path)))),
                                       current().project_root):
        reason = "linked out"       # the name is in the project, a link there leads out of it
    raise PermissionDenied(denial_message(permission, what, path, reason=reason), permission)


def _inside(target, root):
    root = resolve(root)
    return target == root or root in target.parents


_DEFAULT = Grants()
_current = _DEFAULT


# Grants in force for the code running in this thread or task only, over the program's: a function
# from a model file runs under none (confined), whatever the program that loaded it may do.
_override = ContextVar("apsi_grants_override", default=None)


def current():
    override = _override.get()
    return _current if override is None else override


@contextmanager
def confined():
    """Run the block with no permissions granted (the project folder stays the program's): what a
    program run without any flag or apsi.toml may do, and no more. For code that came from a file
    (a model file's Apsi functions), so it never gains what the program that loaded it was granted."""
    # every permission denied, so reading and writing inside the project (which needs no grant) are
    # refused too: a model file's function could otherwise read project files (load_csv) and rewrite
    # its data files (save_params) whenever the model runs
    token = _override.set(Grants(project_root=current().project_root, home=current().home,
                                 denied=frozenset(PERMISSIONS), only_computes="a model file's function"))
    try:
        yield
    finally:
        _override.reset(token)


def sandboxed():
    """True once grants were installed for an Apsi program (the runner's set_current), or Apsi code
    ran in this process (mark_sandboxed). A Python program that only imports apsi_layers is not
    sandboxed: Apsi's permissions are for Apsi code."""
    return _current is not _DEFAULT


def mark_sandboxed():
    """Apsi code is about to run: with no grants installed, it runs with none (a fresh Grants(), so
    sandboxed() holds from now on in this process)."""
    global _current
    if _current is _DEFAULT:
        _current = Grants()


def set_current(grants):
    """Install the grants for the program about to run (the runner calls this once)."""
    global _current
    _current = grants


def allowed(permission, path=None, name=None):
    """True when `permission` (for `path` or `name`, if given) is granted; never raises for a denial."""
    return current().allows(permission, path, name)


def require(permission, what, path=None, name=None):
    """Raise PermissionDenied unless `permission` is granted. `what` names the operation for the message;
    `name` is the variable (env), program (run) or host:port (net) asked for. With a path (read/write):
    returns the resolved path to open (see check_path)."""
    if path is not None and permission in PATH_PERMISSIONS:
        return check_path(permission, path, what)
    if current().allows(permission, None, name):
        return None
    raise PermissionDenied(denial_message(permission, what, None, name), permission)


def denial_message(permission, what, path=None, name=None, reason="outside"):
    """The message for a refusal; a path appears as the program wrote it."""
    if current().only_computes:
        return (f"{what} is refused: {current().only_computes} may only compute (it came from a file, so "
                "it reads and writes no files and uses no environment, network or processes, whatever "
                "this program may do)")
    if reason == "denied" or current().denies(permission, path, name):
        return (f"{what} is denied by --deny-{permission} (or a deny key in apsi.toml): a denial wins "
                "over every grant")
    flag = f"--allow-{permission}"
    where = ""
    if path is not None and permission in PATH_PERMISSIONS:
        folder = _folder_of(path)
        if reason == "the project folder itself":
            return (f"{what} needs permission 'write' for {path}: it is the project folder itself "
                    "(deleting or replacing it changes the folder above it); if this program should, "
                    f"run with --allow-write={path}")
        if reason == "root":
            return (f"{what} needs permission '{permission}': the project folder is / (the whole file "
                    "system), where nothing is free; run the program from a folder of its own, or with "
                    f"--allow-{permission}={folder}")
        if reason not in ("outside", "linked out"):
            return (f"{what} needs permission 'write' for {path}: it is a protected file in the project "
                    f"folder ({reason}); if this program should change it, run with "
                    f"--allow-write={path}")
        where = f" ({path} is outside the project folder)"
        flag = f"--allow-{permission} (or --allow-{permission}={folder})"
        if reason == "linked out":
            # granting the folder of the name would not do; where the link leads is not said (a
            # program without `read` learns nothing of the files outside its project)
            where = f" ({path} is outside the project folder: a link in the path leads there)"
            flag = f"--allow-{permission} (or --allow-{permission}=FOLDER, the folder the link leads to)"
    elif name is not None and permission in NAME_PERMISSIONS:
        scoped = current().scoped(permission)
        if scoped:
            where = f" ({name} is not among the granted {', '.join(scoped)})"
        flag = f"--allow-{permission}={name} (or --allow-{permission} for all)"
        key = {"env": "env", "run": "run", "net": "net"}[permission]
        return (f"{what} needs permission '{permission}'{where}: run with {flag} "
                f"(or [run] {key} = [\"{name}\"] in apsi.toml)")
    return (f"{what} needs permission '{permission}'{where}: run with {flag} "
            f"(or [run] allow = [\"{permission}\"] in apsi.toml)")


def _folder_of(path):
    """The folder to suggest granting for `path` as written: its parent, or itself for '/', '..', '~'."""
    stripped = path.rstrip("/") or "/"
    last = os.path.basename(stripped)
    if stripped == "/" or last in ("..", ".") or (last.startswith("~") and "/" not in stripped):
        return stripped
    return os.path.dirname(stripped) or "."
