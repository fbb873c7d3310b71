"""What a running Apsi program may do, and the small API other packages use to ask.

Permissions: python, read, write, net, env, run. They come from command-line flags and apsi.toml.
Reading and writing inside the project folder (the folder of the nearest apsi.toml, else the
program's folder) needs nothing; outside it, `read`/`write` must be granted (whole, or for paths).
Inside it, files that grant permissions or run code are protected (`protected_reason`): writing
apsi.toml, *.apsi, *.py (and compiled or native Python modules), scripts, the files that tell pip,
pytest or make what to run, or anything named with, or under a folder named with, a leading '.'
(.git/, .venv/, .bashrc) needs `write` granted for that path (docs/permissions.md has the list).

Paths are `str` only. `check_path` resolves a path once (`~`, `..`, symlinks) and returns the
resolved path, which the caller opens, so what is checked is what is opened; messages show the path
as the program wrote it, never the resolved one (which could reveal $HOME or a link's target).

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


def _home_now():
    return os.path.expanduser("~")


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
    # the home folder `~` means, taken when the grants are made (before the environment is cleaned)
    home: str = field(default_factory=_home_now)

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

    def refusal(self, permission, written, target):
        """None when `permission` covers `target` (resolved from `written`); else why not:
        "denied", "outside", or why the file is protected."""
        if self.denies(permission, written):
            return "denied"
        if self.explicitly(permission, target):
            return None
        if permission == "write":
            reason = protected_reason(written, target, self.project_root) or environment_reason(target)
            if reason:
                return reason
        if _inside(target, self.project_root):
            return "root" if resolve(self.project_root) == Path("/") else None
        return "outside"

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


# Inside the project, what grants permissions or runs code: apsi.toml, programs and scripts, Python
# sources and the compiled or native modules `python -m apsi` would import from the folder (and the
# libraries a Windows program loads from it), and the files that tell pip, pytest or make what to run.
PROTECTED_NAMES = {
    "apsi.toml": "apsi.toml grants permissions",
    "pyproject.toml": "it tells pip and other tools which code to build and run",
    "setup.cfg": "it tells pip and other tools which code to build and run",
    "tox.ini": "it tells tox and pytest which commands to run",
    "pytest.ini": "it tells pytest which code to load",
    "requirements.txt": "pip installs what it lists",
    "makefile": "make runs the commands in it",
    "gnumakefile": "make runs the commands in it",
    "justfile": "just runs the commands in it",
    "package.json": "npm runs the scripts it lists",
    "pyvenv.cfg": "it makes the folder a Python environment",
    "entry_points.txt": "Python's import system runs the code it names",
    "activate": "a shell sources it",
    "procfile": "it names the commands a platform runs",
    "dockerfile": "docker build runs the commands in it",
    "environment.yml": "conda installs what it lists",
    "matplotlibrc": "matplotlib loads the backend module it names",
}
# Folders Python's import machinery reads from a folder on sys.path: a planted distribution's
# entry points (`zzz-1.0.dist-info/entry_points.txt`) ran code on a later `use` (issue 15).
PROTECTED_FOLDER_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".egg")
PROTECTED_SUFFIXES = (".apsi", ".py", ".pyc", ".pyo", ".pyw", ".pyz", ".pth", ".so", ".pyd", ".dll",
                      ".dylib", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".ipynb")


def protected_reason(written, target, root):
    """Why writing `written` (resolving to `target`) inside the project needs --allow-write, or None.
    Every name that leads there counts: the name as written (with its folder resolved, so an absolute
    path through a link such as /proc/self/cwd is judged by the same names), and the file it reaches
    (a link named x.apsi, or a link to apsi.toml). Names are compared ignoring case and trailing dots
    and spaces, as case-insensitive file systems (macOS, Windows) do."""
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
        reason = _protected_name(parts) or _in_environment(root, parts)
        if reason:
            return reason
    return None


def _protected_name(parts):
    name = parts[-1].casefold().rstrip(" .")
    if name in PROTECTED_NAMES:
        return PROTECTED_NAMES[name]
    if name.endswith(PROTECTED_SUFFIXES) or name.startswith("activate."):
        return "programs, scripts and Python files run code"
    folders = [p for p in parts[:-1] if p.casefold().rstrip(" .").endswith(PROTECTED_FOLDER_SUFFIXES)]
    if folders or name.endswith(PROTECTED_FOLDER_SUFFIXES):
        return f"'{(folders or [parts[-1]])[0]}' tells Python's import system which code to run"
    hidden = [p for p in parts if p.startswith(".") or p.casefold().rstrip(" .") == "__pycache__"]
    if hidden:
        return f"'{hidden[0]}' holds tools' settings or code (files named with a leading '.' and " \
               "what is under such folders are protected)"
    return None


def _in_environment(root, parts):
    """Files in the bin/ (Scripts/ on Windows) folder of a virtual environment inside the project
    (venv/bin/python, venv/bin/activate): a shell runs or sources them."""
    for i, part in enumerate(parts[:-1]):
        if part.casefold() in ("bin", "scripts") and (root.joinpath(*parts[:i]) / "pyvenv.cfg").exists():
            return f"'{'/'.join(parts[:i + 1])}' holds a Python environment's programs"
    return None


_ENVIRONMENT = []     # environment_folders(), once per process


def environment_folders():
    """The interpreter's own environment, resolved: the folders its packages are installed in
    (sysconfig's purelib and platlib for sys.prefix and sys.base_prefix, and the user site), and a
    virtual environment's programs (bin/, Scripts/). It is where the user installed Apsi and its
    modules, wherever it lives (a project's .venv, ~/.venvs/apsi): `use` trusts what is installed
    there (installed.py), and a program may write there only with write granted for that path, as for
    .git/."""
    if not _ENVIRONMENT:
        import site
        import sys
        import sysconfig

        folders = set()
        for base in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
            paths = sysconfig.get_paths(vars={"base": base, "platbase": base})
            folders.update(paths[k] for k in ("purelib", "platlib"))
        if sys.prefix != sys.base_prefix:
            folders.add(sysconfig.get_paths()["scripts"])
        if site.ENABLE_USER_SITE:
            folders.add(site.getusersitepackages())
        _ENVIRONMENT.extend(sorted({os.path.realpath(f) for f in folders}))
    return tuple(_ENVIRONMENT)


def environment_reason(target):
    """Why writing `target` would change the interpreter's installed packages, or None."""
    for folder in environment_folders():
        if _inside(target, Path(folder)):
            return "it is in the Python environment Apsi runs in (its installed packages run code)"
    return None


def check_path(permission, path, what, follow=True):
    """The resolved path (a str) that `permission` ('read' or 'write') allows at `path`; raises
    PermissionDenied (or ApsiError for a path that is not a string). Open what this returns.
    follow=False: the last part is not followed if it is a link (to delete the link itself)."""
    from .errors import ApsiError

    if type(path) is not str:
        from .values import a_type

        raise ApsiError(f"{what}: a path must be a string, not {a_type(path)}")
    if not path or "\0" in path:
        raise ApsiError(f"{what}: {path!r} is not a file name")
    if path.startswith("~") and not (path == "~" or path.startswith("~/")):
        raise ApsiError(f"{what}: only ~ (your home folder) is understood, not ~name; write the "
                        f"folder itself, or ./{path} for a folder named {path.split('/')[0]}")
    if follow:
        target = resolve(path)
    else:
        literal = os.path.abspath(expand_home(path))
        target = resolve(os.path.dirname(literal)) / os.path.basename(literal)
    reason = _current.refusal(permission, path, target)
    if reason is None:
        return str(target)
    raise PermissionDenied(denial_message(permission, what, path, reason=reason), permission)


def _inside(target, root):
    root = resolve(root)
    return target == root or root in target.parents


_DEFAULT = Grants()
_current = _DEFAULT


def current():
    return _current


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
    return _current.allows(permission, path, name)


def require(permission, what, path=None, name=None):
    """Raise PermissionDenied unless `permission` is granted. `what` names the operation for the message;
    `name` is the variable (env), program (run) or host:port (net) asked for. With a path (read/write):
    returns the resolved path to open (see check_path)."""
    if path is not None and permission in PATH_PERMISSIONS:
        return check_path(permission, path, what)
    if _current.allows(permission, None, name):
        return None
    raise PermissionDenied(denial_message(permission, what, None, name), permission)


def denial_message(permission, what, path=None, name=None, reason="outside"):
    """The message for a refusal; a path appears as the program wrote it."""
    if reason == "denied" or _current.denies(permission, path, name):
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
        if reason != "outside":
            return (f"{what} needs permission 'write' for {path}: it is a protected file in the project "
                    f"folder ({reason}); if this program should change it, run with "
                    f"--allow-write={path}")
        where = f" ({path} is outside the project folder)"
        flag = f"--allow-{permission} (or --allow-{permission}={folder})"
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


def _folder_of(path):
    """The folder to suggest granting for `path` as written: its parent, or itself for '/', '..', '~'."""
    stripped = path.rstrip("/") or "/"
    last = os.path.basename(stripped)
    if stripped == "/" or last in ("..", ".") or (last.startswith("~") and "/" not in stripped):
        return stripped
    return os.path.dirname(stripped) or "."
