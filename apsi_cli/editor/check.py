"""What the syntax tree shows without running anything: builtins called with a wrong number of
arguments, the permissions the program will need (as information), and the Diagnostic that
incremental.py reports them and the parser's and compiler's errors in."""

from dataclasses import dataclass
from pathlib import Path

from apsi_lang import syntax as S
from apsi_lang.builtins import BUILTINS

from .docs import arity

ERROR, WARNING, INFORMATION = "error", "warning", "information"
# builtins whose use needs a permission whatever their arguments (apsi_lang/builtins.py checks them)
NEEDS = {"pyimport": "python", "getenv": "env", "run_command": "run", "fetch_text": "net"}
FLAG_EXAMPLE = {"python": "--allow-python", "env": "--allow-env=NAME", "run": "--allow-run=PROGRAM",
                "net": "--allow-net=HOST"}
# builtins whose first argument is a path: reading or writing outside the project needs a permission
PATH_READS = {"read_text", "read_csv", "read_json", "read_npy", "list_dir", "exists", "read_lines"}
PATH_WRITES = {"write_text", "write_csv", "write_json", "append_text", "make_dir", "delete", "write_npy"}


@dataclass
class Diagnostic:
    line: int           # 1-based
    col: int            # 1-based
    end_col: int
    message: str
    severity: str = ERROR


def _from_syntax_error(e, outline):
    """An error in this file where it is; one in a `use`d file on the `use` line that led there."""
    if e.used_by:
        _, line, module = e.used_by[-1]
        where = f"{e.filename}:{e.line}:{e.col}"
        return Diagnostic(line, 1, len(_line(outline, line)) + 1,
                          f"in module '{module}' ({where}): {e.message}")
    text = _line(outline, e.line)
    end = e.col + max(1, _word_length(text, e.col - 1))
    return Diagnostic(e.line, e.col, end, e.message)


def _line(outline, line):
    return outline.lines[line - 1] if 0 < line <= len(outline.lines) else ""


def _word_length(text, start):
    n = 0
    while start + n < len(text) and (text[start + n].isalnum() or text[start + n] == "_"):
        n += 1
    return n


def walk(nodes):
    """Every node of a syntax tree (statements and expressions), without recursion."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, S.Node):
            yield node
            todo += [getattr(node, f) for f in node.fields]
        elif isinstance(node, list | tuple):
            todo += node


def _builtin_calls(outline, own=None):
    """Calls of Apsi's own builtins (a name the file defines itself is not one)."""
    own = {d.name for d in outline.all_definitions()} if own is None else own
    for node in walk(outline.body):
        if isinstance(node, S.Call) and isinstance(node.func, S.Name) and node.func.id in BUILTINS \
                and node.func.id not in own:
            yield node


def arity_problems(outline, own=None):
    found = []
    for call in _builtin_calls(outline, own):
        if any(isinstance(a, S.Splat) for a in call.args) or any(k is None for k, _ in call.kwargs):
            continue
        bounds = arity(BUILTINS[call.func.id])
        if bounds is None:
            continue
        low, high = bounds
        given = len(call.args)
        named = {k for k, _ in call.kwargs}
        if given < low and not named:
            message = f"{call.func.id}() needs {_count(low)} but is given {given}"
        elif high is not None and given > high:
            most = _count(high, "at most " if low < high else "")
            message = f"{call.func.id}() takes {most} but is given {given}"
        else:
            continue
        found.append(Diagnostic(call.line, call.col, call.col + len(call.func.id), message))
    return found


def _count(n, qualifier=""):
    return f"{qualifier}{n} positional argument{'' if n == 1 else 's'}"


def permission_notes(outline, folder, grants, own=None):
    """Information on each call that will need a permission the folder's grants do not give."""
    found, said = [], set()
    for call in _builtin_calls(outline, own):
        name = call.func.id
        needed, path = NEEDS.get(name), None
        if name in PATH_READS | PATH_WRITES and call.args and isinstance(call.args[0], S.Const) \
                and isinstance(call.args[0].value, str):
            path = call.args[0].value
            verb = "write" if name in PATH_WRITES else "read"
            if _outside(path, folder, grants, verb):
                needed = verb
        if needed is None or (path is None and needed in grants.granted):
            continue
        key = (name, needed, path)
        if key in said:
            continue
        said.add(key)
        flag = f"--allow-{needed}={path}" if path is not None else FLAG_EXAMPLE[needed]
        where = f" for {path} (outside the project folder)" if path is not None else ""
        found.append(Diagnostic(call.line, call.col, call.col + len(name),
                                f"{name} needs permission '{needed}'{where}: run with {flag}, or grant it "
                                "in apsi.toml and trust that file (apsi trust)", INFORMATION))
    return found


def _outside(path, folder, grants, verb):
    import os

    from apsi_lang import permissions

    target = Path(os.path.normpath(os.path.join(folder, os.path.expanduser(path))))
    try:
        return grants.refusal(verb, str(target), permissions.resolve(target)) is not None
    except (OSError, ValueError):
        return False
