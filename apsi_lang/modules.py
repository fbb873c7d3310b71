"""`use NAME`: find a module and load it once per process.

Order: a Python package's entry point in the group "apsi.modules" (the object named is a callable
returning {name: value}), then NAME.apsi beside the program. An Apsi module's exports are its
top-level names.
"""

import os
from pathlib import Path

from .errors import ApsiError

GROUP = "apsi.modules"
_loaded = {}          # key -> exports dict
_compiled = {}        # ("file", path) -> (Program, exported names)
_loading = set()      # for a clear error on `use` cycles


_entry_points = None  # name -> entry point, read once per process (scanning installed packages is slow)


def _entry_point(name):
    global _entry_points
    if _entry_points is None:
        from .installed import entry_points

        _entry_points = entry_points(GROUP)
    return _entry_points.get(name)


def available():
    """Names of the installed modules (entry points), for messages and the REPL."""
    _entry_point("")
    return sorted(_entry_points)


def names(name, program_dir):
    """The names module `name` exports, for the compiler: an installed module is loaded (it is Python
    code), an Apsi file is only compiled, so a program with an error runs nothing, not even its modules.
    Raises ApsiError when the module can't be found; ApsiSyntaxError for an error in its file."""
    ep = _entry_point(name)
    if ep is not None:
        return set(load(name, program_dir))
    path = _file(name, program_dir)
    return set(_compiled_file(name, path)[1])


def loaded():
    """The exports of each module loaded so far, loading nothing more (help names a value by them)."""
    return list(_loaded.values())


def load(name, program_dir):
    """The exports of module `name` as a dict (runs an Apsi module the first time); raises ApsiError
    when it can't be found or loaded."""
    ep = _entry_point(name)
    if ep is not None:
        key = ("ep", name)
        if key not in _loaded:
            _loaded[key] = _load_entry_point(ep)
        return _loaded[key]
    path = _file(name, program_dir)
    key = ("file", str(path))
    if key not in _loaded:
        from .compiler import py_name

        program, exported = _compiled_file(name, path)
        namespace = program.run()
        _loaded[key] = {py_name(k): namespace[py_name(k)] for k in exported if py_name(k) in namespace}
    return _loaded[key]


def _file(name, program_dir):
    """NAME.apsi beside the program, read under the same rule as read_text: the check comes first
    (a link that leads out of the project needs 'read', whether or not its target exists), and what
    it resolved is what is compiled; the file's text is never shown before that check."""
    from . import permissions

    written = os.path.join(str(program_dir), f"{name}.apsi")
    resolved = Path(permissions.check_path("read", written, f"use {name} ({name}.apsi)"))
    if resolved.is_file():
        _shown.setdefault(str(resolved), written)
        return resolved
    import difflib

    from .parser import PYTHON_MODULES

    modules = available()
    if name in PYTHON_MODULES:          # a Python library: where Apsi has what it is wanted for
        raise ApsiError(f"use {name}: no module named '{name}' in Apsi: {PYTHON_MODULES[name]}")
    close = difflib.get_close_matches(name, modules, n=1)
    hint = f" (did you mean 'use {close[0]}'?)" if close else ""
    raise ApsiError(f"use {name}: no module named '{name}'{hint}: no installed package provides it "
                    f"(installed: {', '.join(modules) or 'none'}) and there is no {name}.apsi beside the "
                    f"program ({_shown_folder(program_dir)})")


def _shown_folder(folder):
    """The program's folder as the user knows it: relative to the current folder when inside it (an
    error message should not print the absolute path of someone's project)."""
    rel = os.path.relpath(os.path.realpath(str(folder)), os.path.realpath(os.getcwd()))
    return "this folder" if rel == "." else (rel if not rel.startswith("..") else os.path.basename(
        os.path.realpath(str(folder))) + "/")


_shown = {}           # resolved module path -> the path `use` wrote, for messages


def _compiled_file(name, path):
    """(Program, exported names) of an Apsi module file, compiled once per process."""
    key = ("file", str(path))
    if key not in _compiled:
        if key in _loading:
            raise ApsiError(f"use {name}: {path.name} uses itself through a cycle of 'use' lines")
        _loading.add(key)
        try:
            from .program import compile_module

            _compiled[key] = compile_module(path, display_path(_shown.get(str(path), path)))
        finally:
            _loading.discard(key)
    return _compiled[key]


def forget_files():
    """Forget the Apsi module files compiled so far (the language server checks files being edited:
    a sibling changed since). Installed modules, which are Python, stay loaded."""
    _compiled.clear()


def display_path(path):
    """How messages name a module file: as `use` found it (not where a link leads), relative to the
    current folder when inside it."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _load_entry_point(ep):
    try:
        factory = ep.load()
        exports = dict(factory())
    except ApsiError:
        raise
    except ImportError as e:
        raise ApsiError(f"use {ep.name}: its package failed to import ({e}); "
                        "reinstall Apsi with: python -m pip install -e .") from e
    return {k: v for k, v in exports.items() if not k.startswith("_")}
