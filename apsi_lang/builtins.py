"""The builtins table every Apsi program sees (and nothing else of Python's).

Functions that touch files, the environment, processes or the network check a permission first.
Relative paths are taken from the current folder; inside the project folder reading and writing
need nothing.
"""

import builtins as _py
import os
import sys

from . import permissions
from .data_files import DATA_BUILTINS
from .errors import ApsiError
from .files import atomic_open, open_checked
from .help import apsi_help, know_builtins
from .numbers import NUMBER_BUILTINS
from .values import Record, a_type, record_fields, show, type_name


def apsi_print(*values, sep=" ", end="\n", file="stdout"):
    """print(…, file="stderr") writes to the error stream (after flushing stdout, to keep order)."""
    if file == "stdout":
        sys.stdout.write(sep.join([show(v) for v in values]) + end)
    elif file == "stderr":
        eprint(*values, sep=sep, end=end)
    else:
        raise ApsiError(f"print: file must be \"stdout\" or \"stderr\", got {show(file, True)} "
                        "(to write a file, use write_text or append_text)")


def eprint(*values, sep=" ", end="\n"):
    """print to stderr."""
    sys.stdout.flush()
    sys.stderr.write(sep.join([show(v) for v in values]) + end)
    sys.stderr.flush()


def apsi_str(value=""):
    return value if type(value) is str else show(value)


def apsi_repr(value):
    return show(value, quoted=True)


def error(message="error"):
    raise ApsiError(apsi_str(message))


def apsi_map(f, *seqs):
    return list(_py.map(f, *seqs))


def apsi_filter(f, seq):
    return list(_py.filter(f, seq))


def apsi_reversed(seq):
    return list(_py.reversed(seq))


def apsi_enumerate(items, start=0):
    """enumerate(xs), lazy as Python's, but never of another lazy enumerate/zip (see _unchained)."""
    return _py.enumerate(_unchained(items), start)


def apsi_zip(*seqs, strict=False):
    return _py.zip(*[_unchained(s) for s in seqs], strict=strict)


def _unchained(items):
    # `e = enumerate(e)` a million times would build a chain that CPython frees (and iterates)
    # recursively in C, one C frame per link, and the interpreter would crash on the stack's end:
    # an enumerate or zip given another one takes its remaining items as a list instead
    return list(items) if type(items) in _LAZY else items


_LAZY = (_py.enumerate, _py.zip)


def apsi_set(items=()):
    """set(xs): a function, not Python's set type (a type object would be one more thing to guard)."""
    return _py.set(items)


def fields(record):
    if type(record) is not Record:
        raise ApsiError(f"fields(r): r must be a record, got {a_type(record)}")
    return record_fields(record)


def get(record, name, default=None):
    """A record's field by a computed name: get(r, "lr", 0.1)."""
    if type(record) is not Record:
        raise ApsiError(f"get(r, name): r must be a record, got {a_type(record)}")
    if type(name) is not str or name.startswith("_"):
        raise ApsiError(f"get(r, name): name must be a field name, got {show(name, True)}")
    return vars(record).get(name, default)


def has(record, name):
    return type(record) is Record and type(name) is str and name in vars(record)


def read_text(path):
    what = f"read_text({show(path, True)})"
    resolved = permissions.check_path("read", path, what)
    try:
        with open_checked(resolved, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ApsiError(f"{what}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ApsiError(f"{what}: the file is not UTF-8 text") from None


def write_text(path, text):
    """Writes atomically: a temporary file beside the target, then a rename."""
    what = f"write_text({show(path, True)})"
    resolved = permissions.check_path("write", path, what)
    if type(text) is not str:
        raise ApsiError(f"write_text(path, text): text must be a string, got {a_type(text)} "
                        "(use str(x) to convert)")
    try:
        with atomic_open(resolved, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        from .data_files import _os_error

        raise _os_error("write_text", path, e) from None


def exists(path):
    return os.path.exists(permissions.check_path("read", path, f"exists({show(path, True)})"))


def getenv(name, default=None):
    if type(name) is not str:
        raise ApsiError(f"getenv(name): name must be a string, got {a_type(name)}")
    permissions.require("env", what=f"getenv({show(name, True)})", name=name)
    return os.environ.get(name, default)


def pyimport(name):
    permissions.require("python", what=f"pyimport({show(name, True)})")
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as e:
        asked = f"pyimport({show(name, True)})"
        if not isinstance(e, ModuleNotFoundError):       # it is there, but does not load
            raise ApsiError(f"{asked}: importing it in {sys.executable} failed: {e}") from None
        missing = (e.name or str(name)).split(".")[0]
        what = (f"no Python module named {missing!r}" if missing == str(name).split(".")[0]
                else f"it needs the Python module {missing!r}, which is not installed")
        raise ApsiError(f"{asked}: {what} in {sys.executable} ({e}); install it with: apsi pkg install "
                        f"{_DISTRIBUTIONS.get(missing, missing)}") from None


# modules whose package is named otherwise (`pip install sklearn` is a deprecated stub that fails);
# torch: `apsi pkg install torch` is the CPU build, torch-auto the one for this machine
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "skimage": "scikit-image", "cv2": "opencv-python",
                  "PIL": "pillow", "yaml": "pyyaml", "bs4": "beautifulsoup4", "torch": "torch-auto",
                  "dateutil": "python-dateutil", "Crypto": "pycryptodome"}


def run_command(command, check=False):
    """Runs a process (a list of strings, no shell); returns {code, stdout, stderr}."""
    import subprocess

    argv = command.split() if type(command) is str else [apsi_str(a) for a in command]
    if not argv:
        raise ApsiError("run_command: the command is empty; give a list like [\"git\", \"status\"]")
    permissions.require("run", what=f"run_command({show(command, True)})", name=argv[0])
    try:
        p = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise ApsiError(f"run_command: cannot start {argv[0]!r}: {e.strerror or e}") from None
    if check and p.returncode != 0:
        raise ApsiError(f"run_command: {argv[0]!r} exited with code {p.returncode}: {p.stderr.strip()}")
    return Record(code=p.returncode, stdout=p.stdout, stderr=p.stderr)


def fetch_text(url, timeout=30):
    if type(url) is not str or not url.lower().startswith(("http://", "https://")):
        # urllib also opens file:// and ftp:// URLs: 'net' must not become a way around 'read'
        raise ApsiError(f"fetch_text({show(url, True)}): only http:// and https:// URLs can be fetched")
    permissions.require("net", what=f"fetch_text({show(url, True)})", name=host_port(url))
    import urllib.request

    class CheckRedirects(urllib.request.HTTPRedirectHandler):
        """A redirect to another host needs 'net' for that host too (or --allow-net=a.com is a way out)."""

        def redirect_request(self, req, fp, code, msg, headers, newurl):
            if not newurl.lower().startswith(("http://", "https://")):
                raise ApsiError(f"fetch_text({show(url, True)}): redirected to {newurl}, not http(s)")
            permissions.require("net", what=f"fetch_text({show(url, True)}) redirected to {newurl}",
                                name=host_port(newurl))
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    opener = urllib.request.build_opener(CheckRedirects)
    try:
        with opener.open(url, timeout=timeout) as r:
            return r.read().decode("utf-8", errors="replace")
    except ApsiError:
        raise
    except Exception as e:
        raise ApsiError(f"fetch_text({show(url, True)}): {e}") from None


def host_port(url):
    """'host:port' of an http(s) URL, the port filled in (80, 443) when the URL has none."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        raise ApsiError(f"fetch_text({show(url, True)}): not a valid URL") from None
    return permissions.net_name((parts.hostname or "").lower(), port)


def apsi_type(value):
    return type_name(value)


def clock():
    """Seconds from an arbitrary start, for timing: let t = clock(); …; print(clock() - t)."""
    import time

    return time.perf_counter()


def apsi_exit(code=0):
    """exit(3) stops with code 3; exit("message") writes the message to stderr and stops with 1."""
    if code is not None and type(code) not in (int, bool, str):
        raise ApsiError(f"exit(code): code must be an int or a message string, got {a_type(code)}")
    raise SystemExit(code)


def apsi_input(prompt=""):
    try:
        return _py.input(apsi_str(prompt))     # (Python's input writes str(prompt): <function …>)
    except EOFError:
        return None


_BUILTINS_PY = {
    "print": apsi_print, "len": _py.len, "range": _py.range, "str": apsi_str, "repr": apsi_repr,
    "int": _py.int, "float": _py.float, "bool": _py.bool, "list": _py.list, "tuple": _py.tuple,
    "abs": _py.abs, "min": _py.min, "max": _py.max, "sum": _py.sum, "round": _py.round,
    "sorted": _py.sorted, "reversed": apsi_reversed, "enumerate": apsi_enumerate, "zip": apsi_zip,
    "map": apsi_map, "filter": apsi_filter, "any": _py.any, "all": _py.all, "type": apsi_type,
    "error": error, "fields": fields, "get": get, "has": has, "input": apsi_input, "exit": apsi_exit,
    "clock": clock,
    "read_text": read_text, "write_text": write_text, "exists": exists, "getenv": getenv,
    "pyimport": pyimport, "run_command": run_command, "fetch_text": fetch_text,
    "divmod": _py.divmod, "pow": _py.pow, "chr": _py.chr, "ord": _py.ord, "eprint": eprint,
    "set": apsi_set, "help": apsi_help,
    **NUMBER_BUILTINS, **DATA_BUILTINS,
}


def _apsi_named(table):
    """Apsi's builtins written in Python carry their Apsi names (`print(getenv)` shows <fn getenv>)."""
    import types

    for name, value in table.items():
        if isinstance(value, types.FunctionType):
            value.__name__ = value.__qualname__ = name
    return table


BUILTINS = _apsi_named(_BUILTINS_PY)
know_builtins(BUILTINS)
