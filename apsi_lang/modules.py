"""`use NAME`: find a module and load it once per process.

Order: a Python package's entry point in the group "apsi.modules" (the object named is a callable
returning {name: value}), then NAME.apsi beside the program. An Apsi module's exports are its
top-level names.
"""

import sys
from pathlib import Path

from . import sandbox
from .errors import ApsiError

GROUP = "apsi.modules"
_loaded = {}          # key -> exports dict
_loading = set()      # for a clear error on `use` cycles


def _entry_point(name):
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        if ep.name == name:
            return ep
    return None


def available():
    """Names of the installed modules (entry points), for messages and the REPL."""
    from importlib.metadata import entry_points

    return sorted(ep.name for ep in entry_points(group=GROUP))


def load(name, program_dir):
    """The exports of module `name` as a dict; raises ApsiError when it can't be found or loaded."""
    ep = _entry_point(name)
    if ep is not None:
        key = ("ep", name)
        if key not in _loaded:
            _loaded[key] = _load_entry_point(ep)
        return _loaded[key]
    path = (Path(program_dir) / f"{name}.apsi").resolve()
    if path.is_file():
        key = ("file", str(path))
        if key not in _loaded:
            if key in _loading:
                raise ApsiError(f"use {name}: {path.name} uses itself through a cycle of 'use' lines")
            _loading.add(key)
            try:
                _loaded[key] = _load_file(path)
            finally:
                _loading.discard(key)
        return _loaded[key]
    installed = ", ".join(available()) or "none"
    raise ApsiError(f"use {name}: no module named '{name}': no installed package provides it "
                    f"(installed: {installed}) and there is no {name}.apsi in {program_dir}")


def _load_entry_point(ep):
    try:
        factory = ep.load()
        exports = dict(factory())
    except ApsiError:
        raise
    except ImportError as e:
        raise ApsiError(f"use {ep.name}: its package failed to import ({e}); "
                        "reinstall Apsi with: python -m pip install -e .") from e
    package = ep.value.split(":")[0].split(".")[0]
    for modname, module in list(sys.modules.items()):
        if modname == package or modname.startswith(package + "."):
            sandbox.register_from_module(module)
    return {k: v for k, v in exports.items() if not k.startswith("_")}


def _load_file(path):
    from .program import run_file_module

    namespace = run_file_module(path)
    return {k: v for k, v in namespace.items() if not k.startswith("_") and k != "args"}
