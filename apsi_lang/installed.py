"""Entry points of installed packages, found only where the user installed them.

`use NAME` and `use layers`' plugins come from entry points. importlib.metadata finds distributions in
every folder on sys.path, which for `python -m apsi` includes the current folder: a program that wrote
`zzz-1.0.dist-info/entry_points.txt` into its project had a later `use` (and every later run) call
code of its choosing (issue 15). So the project folder, the current folder and the program's folder
are left out of the search, whatever sys.path says, and each group is read once per process.

The interpreter's own environment (its site-packages, the user site) is searched wherever it lives:
a project's `.venv` or `~/.venvs/apsi` under the folder `apsi` runs from is where the user installed
Apsi (issue 28), and programs cannot write there (writable.py asks environment_folders).
"""

import os
import sys

_cache = {}     # group -> {name: entry point}


def entry_points(group, program_dir=None):
    """{name: entry point} of `group` from the installed environment (first distribution wins, as
    importlib.metadata orders them)."""
    if group not in _cache:
        from importlib.metadata import distributions

        found = {}
        for dist in distributions(path=search_path(program_dir)):
            for ep in dist.entry_points:
                if ep.group == group:
                    found.setdefault(ep.name, ep)
        _cache[group] = found
    return _cache[group]


def search_path(program_dir=None):
    """sys.path without the folders a program can write to without permission; the interpreter's
    environment is kept wherever it lives."""
    from . import permissions

    untrusted = [os.getcwd(), str(permissions.current().project_root)]
    if program_dir is not None:
        untrusted.append(str(program_dir))
    untrusted = [os.path.realpath(p) for p in untrusted]
    environment = environment_folders()
    return [p for p in sys.path if _trusted(os.path.realpath(p or "."), untrusted, environment)]


def _trusted(path, untrusted, environment):
    return path in environment or not _under_any(path, untrusted)


_ENVIRONMENT = []     # environment_folders(), once per process


def environment_folders():
    """The interpreter's own environment, resolved: its standard library and the folders its
    packages are installed in (sysconfig's paths for sys.prefix and sys.base_prefix, and the user
    site), and a virtual environment's programs (bin/, Scripts/). It is where the user installed Apsi
    and its modules, wherever it lives (a project's .venv, ~/.venvs/apsi): `use` trusts what is
    installed there, and a program may not write there without `write` for that path (writable.py)."""
    if not _ENVIRONMENT:
        import site
        import sysconfig

        folders = set()
        for base in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
            paths = sysconfig.get_paths(vars={"base": base, "platbase": base, "installed_base": base,
                                              "installed_platbase": base})
            folders.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))
        if sys.prefix != sys.base_prefix:
            folders.add(sysconfig.get_paths()["scripts"])
        if site.ENABLE_USER_SITE:
            folders.add(site.getusersitepackages())
        _ENVIRONMENT.extend(sorted({os.path.realpath(f) for f in folders}))
    return tuple(_ENVIRONMENT)


def _under_any(path, folders):
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
