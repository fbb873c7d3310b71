"""Data in and out: JSON, CSV, folders, appending and deleting — each under the read/write rules.

Every function checks its permission first (inside the project folder reading and writing need
nothing; elsewhere `read`/`write`), then works on the resolved path the check returns (so what is
checked is what is used; messages still name the path as the program wrote it). JSON objects become
maps (their keys are any text); CSV rows become records (with a header of names) or lists
(csv_read.py reads them).
"""

import os

from . import permissions
from .errors import ApsiError
from .files import open_checked
from .path_errors import os_error as _os_error
from .path_errors import path_arg as _path
from .values import Record, a_type, show


def _read(fn, path):
    path = _path(fn, path)
    resolved = permissions.require("read", what=f"{fn}({show(path, True)})", path=path)
    try:
        with open_checked(resolved, encoding="utf-8-sig") as f:
            return f.read()
    except OSError as e:
        raise _os_error(fn, path, e) from None
    except UnicodeDecodeError:
        raise ApsiError(f"{fn}({show(path, True)}): the file is not UTF-8 text") from None


def _write(fn, path, text, mode="w"):
    from .files import append_checked, atomic_open

    path = _path(fn, path)
    resolved = permissions.require("write", what=f"{fn}({show(path, True)})", path=path)
    try:
        if mode == "a":
            with append_checked(resolved) as f:
                f.write(text)
        else:
            with atomic_open(resolved, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as e:
        raise _os_error(fn, path, e) from None


# ---- JSON ------------------------------------------------------------------------------------------

def read_json(path):
    """The JSON value in a file: objects become maps, arrays lists, null none."""
    import json

    text = _read("read_json", path)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ApsiError(f"read_json({show(path, True)}): not valid JSON at line {e.lineno}, column "
                        f"{e.colno}: {e.msg}") from None
    except RecursionError:
        raise ApsiError(f"read_json({show(path, True)}): the JSON is nested too deeply") from None
    except ValueError as e:                 # a number too long to convert, NaN/Infinity
        raise ApsiError(f"read_json({show(path, True)}): {e}") from None


def _no_constant(name):
    raise ValueError(f"{name} is not JSON (write null, or a string)")


def write_json(path, value, indent=2):
    """Write `value` as JSON (maps with string keys, records, lists, tuples, numbers, text, bools, none)."""
    import json

    if indent is not None and (type(indent) is not int or indent < 0):
        raise ApsiError(f"write_json: indent must be an int >= 0 or none, got {show(indent, True)}")
    plain = _jsonable(value, "value", 0)
    _write("write_json", path, json.dumps(plain, indent=indent, ensure_ascii=False, allow_nan=False) + "\n")


def _jsonable(v, where, depth):
    if depth > 500:
        raise ApsiError("write_json: the value is nested more than 500 deep")
    t = type(v)
    if v is None or t in (bool, int, str):
        return v
    if t is float:
        if v != v or v in (float("inf"), float("-inf")):
            raise ApsiError(f"write_json: {where} is {show(v)}, which JSON cannot hold")
        return v
    if t in (list, tuple):
        return [_jsonable(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
    if t is dict:
        out = {}
        for k, x in v.items():
            if type(k) is not str:
                raise ApsiError(f"write_json: {where} has the key {show(k, True)}; JSON keys are "
                                "strings (use str(k))")
            out[k] = _jsonable(x, f"{where}[{show(k, True)}]", depth + 1)
        return out
    if t is Record:
        return {k: _jsonable(x, f"{where}.{k}", depth + 1) for k, x in vars(v).items()}
    hint = " (use .tolist() for a tensor)" if type(v).__name__ == "Tensor" else ""
    raise ApsiError(f"write_json: {where} is {a_type(v)}, which JSON cannot hold{hint}")


# ---- CSV ---------------------------------------------------------------------------------------------

def read_csv(path, header=True, sep=",", numbers=True, **options):
    """Rows of a CSV file: records named by the header line (header=false: lists); as="columns" gives
    a list per column instead. Columns of numbers hold numbers (csv_read says which cells are)."""
    from .csv_read import read_csv as read

    return read(path, header=header, sep=sep, numbers=numbers, **options)


# ---- folders and files ----------------------------------------------------------------------------

def list_dir(path="."):
    """The names in a folder, sorted."""
    path = _path("list_dir", path)
    resolved = permissions.require("read", what=f"list_dir({show(path, True)})", path=path)
    try:
        return sorted(os.listdir(resolved))
    except OSError as e:
        raise _os_error("list_dir", path, e) from None


def make_dir(path):
    """Create a folder (and the folders above it); nothing happens when it exists."""
    path = _path("make_dir", path)
    resolved = permissions.check_path("write", path, f"make_dir({show(path, True)})", folder=True)
    try:
        os.makedirs(resolved, exist_ok=True)
    except FileExistsError:
        raise ApsiError(f"make_dir({show(path, True)}): a file of that name exists") from None
    except OSError as e:
        raise _os_error("make_dir", path, e) from None


def append_text(path, text):
    """Add text at the end of a file (created when missing)."""
    if type(text) is not str:
        raise ApsiError(f"append_text(path, text): text must be a string, got {a_type(text)} "
                        "(use str(x) to convert)")
    _write("append_text", path, text, mode="a")


def delete(path):
    """Delete a file or an empty folder."""
    path = _path("delete", path)
    # a link is deleted itself, not what it points to: its folder is resolved, its name is not. A
    # folder is judged as a folder (writable.py) and only removed as one, a file only as a file.
    literal = permissions.expand_home(path)
    folder = os.path.isdir(literal) and not os.path.islink(literal.rstrip("/") or "/")
    target = permissions.check_path("write", path, f"delete({show(path, True)})", follow=False,
                                    folder=folder)
    try:
        if folder:
            os.rmdir(target)
        else:
            os.remove(target)
    except OSError as e:
        if os.path.isdir(target):
            raise ApsiError(f"delete({show(path, True)}): the folder is not empty; delete what is in "
                            "it first") from None
        raise _os_error("delete", path, e) from None


DATA_BUILTINS = {
    "read_json": read_json, "write_json": write_json, "read_csv": read_csv, "list_dir": list_dir,
    "make_dir": make_dir, "append_text": append_text, "delete": delete,
}
