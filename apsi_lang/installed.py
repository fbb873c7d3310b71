"""Entry points of installed packages, found only where the user installed them.

`use NAME` and `use layers`' plugins come from entry points. importlib.metadata finds distributions in
every folder on sys.path, which for `python -m apsi` includes the current folder: a program that wrote
`zzz-1.0.dist-info/entry_points.txt` into its project had a later `use` (and every later run) call
code of its choosing (issue 15). So the project folder, the current folder and the program's folder
are left out of the search, whatever sys.path says, and each group is read once per process.

The interpreter's own environment (its site-packages, the user site) is searched wherever it lives:
a project's `.venv` or `~/.venvs/apsi` under the folder `apsi` runs from is where the user installed
Apsi (issue 28), and programs cannot write there (permissions.environment_folders).
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
    environment = permissions.environment_folders()
    return [p for p in sys.path if _trusted(os.path.realpath(p or "."), untrusted, environment)]


def _trusted(path, untrusted, environment):
    return path in environment or not _under_any(path, untrusted)


def _under_any(path, folders):
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
