"""Entry points of installed packages, found only where the user installed them.

`use NAME` and `use layers`' plugins come from entry points. importlib.metadata finds distributions in
every folder on sys.path, which for `python -m apsi` includes the current folder: a program that wrote
`zzz-1.0.dist-info/entry_points.txt` into its project had a later `use` (and every later run) call
code of its choosing (issue 15). So the project folder, the current folder and the program's folder
are left out of the search, whatever sys.path says, and each group is read once per process, except
the site-packages of the Python that runs Apsi: a `.venv` inside the project (the usual layout) or a
container's `/` as the current folder holds them, and a program cannot write there (writable.py).
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
    """sys.path without the folders a program can write to without permission."""
    from . import permissions

    untrusted = [os.getcwd(), str(permissions.current().project_root)]
    if program_dir is not None:
        untrusted.append(str(program_dir))
    untrusted = [os.path.realpath(p) for p in untrusted]
    return [p for p in sys.path if not _under_any(os.path.realpath(p or "."), untrusted)
            or _installed(os.path.realpath(p or "."))]


def _installed(path):
    """True for the site-packages of the running Python (or a folder inside them), which the write
    rule protects wherever they are (apsi_lang/writable.environment)."""
    import site

    # only folders named site-packages or dist-packages (Windows lists the prefix itself too): the write
    # rule refuses every path through a folder so named, wherever it is
    return _under_any(path, [os.path.realpath(p) for p in site.getsitepackages()
                             if os.path.basename(p.rstrip("/\\")).endswith("-packages")])


def _under_any(path, folders):
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
