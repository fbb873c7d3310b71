"""Compile and run Apsi source; turn failures into Apsi messages.

The runner (apsi_cli) calls run_source/run_file and prints `render_runtime_error` for anything that
escapes. Sources are kept by filename so tracebacks can show Apsi lines.
"""

import operator
import sys
from pathlib import Path

from . import modules, permissions, sandbox
from .builtins import BUILTINS
from .compiler import apsi_name, compile_tree
from .errors import ApsiError, ApsiSyntaxError
from .parser import Parser
from .values import Record, show, type_name

SOURCES = {}          # filename -> source lines, for tracebacks
_AUG = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
        "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
        "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
        ">>": operator.rshift}


class Program:
    """A compiled program: its code object and the globals it runs in."""

    def __init__(self, code, namespace):
        self.code = code
        self.namespace = namespace

    def run(self):
        exec(self.code, self.namespace)
        return self.namespace


def new_namespace(program_dir, args=(), echo_to=None):
    ns = {"__builtins__": BUILTINS, "__name__": "apsi_program", "args": list(args)}

    def use(name):
        ns.update(modules.load(name, program_dir))

    def echo(value):
        if value is not None:
            (echo_to or _print_value)(value)

    ns.update(_use=use, _echo=echo, _ga=sandbox.get_attr, _sa=sandbox.set_attr, _augattr=_augattr,
              _R=Record, _show=show, _type=type, _pystr=str, _PLAIN=frozenset({int, float, str}),
              _catch=_catch, _Catchable=Exception, _assert_fail=_assert_fail)
    return ns


def _print_value(value):
    sys.stdout.write(show(value, quoted=True) + "\n")


def _augattr(obj, name, op, value):
    sandbox.set_attr(obj, name, _AUG[op](sandbox.get_attr(obj, name), value))


def _assert_fail(message=None):
    return ApsiError("assertion failed" + (f": {show(message)}" if message is not None else ""),
                     kind="assert")


def _catch(exc):
    """What `catch e:` binds: an ApsiError whose .message is the Apsi-level description."""
    if isinstance(exc, ApsiError):
        return exc
    wrapped = ApsiError(describe(exc), kind=type(exc).__name__)
    wrapped.__cause__ = exc
    return wrapped


def compile_source(text, filename="<input>", namespace=None, echo=False, program_dir=None):
    """Parse and compile; raises ApsiSyntaxError. Returns a Program ready to run."""
    lines = text.split("\n")
    SOURCES[filename] = lines
    program_dir = program_dir or _dir_of(filename)
    ns = namespace if namespace is not None else new_namespace(program_dir)
    body = Parser(text, filename).parse_program()
    fixed = set(BUILTINS)
    user = {k for k in ns if not k.startswith("_")}

    def load_module(name, node):
        try:
            exports = modules.load(name, program_dir)
        except ApsiError as e:
            raise ApsiSyntaxError(e.message, filename, node.line, node.col, lines[node.line - 1]) from None
        fixed.update(exports)
        return exports

    for name in list(user):
        if name in BUILTINS or name == "args":
            user.discard(name)
    fixed.add("args")
    code = compile_tree(body, filename, lines, fixed, user, load_module, echo=echo,
                        full_access=permissions.allowed("python"))
    return Program(code, ns)


def _dir_of(filename):
    p = Path(filename)
    return str(p.parent.resolve()) if not filename.startswith("<") else str(Path.cwd())


def run_source(text, filename="<input>", args=(), grants=None, echo=False):
    if grants is not None:
        permissions.set_current(grants)
    ns = new_namespace(_dir_of(filename), args)
    return compile_source(text, filename, ns, echo=echo).run()


def run_file_module(path):
    """Run an Apsi module file (for `use`), returning its namespace."""
    text = Path(path).read_text(encoding="utf-8")
    ns = new_namespace(str(Path(path).parent))
    return compile_source(text, str(path), ns).run()


# ---- errors ------------------------------------------------------------------------------------

def apsi_frames(tb):
    """(filename, line, function) for the traceback frames that run Apsi code."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in SOURCES:
            frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return frames


def describe(exc):
    """The Apsi-level text for an exception raised while a program runs."""
    if isinstance(exc, ApsiError):
        return exc.message
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, UnboundLocalError):
        name = apsi_name(getattr(exc, "name", None) or str(exc).split("'")[1])
        return f"variable '{name}' is used before 'let {name}' gives it a value"
    if isinstance(exc, NameError):
        name = apsi_name(exc.name or "?")
        return f"'{name}' is used before it is defined (move its 'let' or 'fn' above this line)"
    if isinstance(exc, RecursionError):
        return (f"too many nested calls (more than {sys.getrecursionlimit()}): "
                "check that the recursion reaches its base case")
    if isinstance(exc, AttributeError):
        obj, name = getattr(exc, "obj", None), getattr(exc, "name", None)
        if type(obj) is Record:
            return f"record has no field '{name}' (its fields: {', '.join(vars(obj)) or 'none'})"
        if name is not None:
            return f"a {type_name(obj)} has no field or method '{name}'"
    if isinstance(exc, IndexError):
        return f"index out of range ({exc})"
    if isinstance(exc, KeyError):
        return f"no key {exc}"
    if isinstance(exc, (TypeError, ValueError, OverflowError)):
        return _apsi_words(str(exc))
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"{type(exc).__name__}: {exc}"


def _apsi_words(text):
    for py, apsi in (("'NoneType'", "none"), ("NoneType", "none"), ("'Record'", "record"),
                     ("builtin_function_or_method", "builtin function"), ("'function'", "function"),
                     ("None", "none"), ("True", "true"), ("False", "false")):
        text = text.replace(py, apsi)
    return text


def render_runtime_error(exc):
    """An Apsi traceback: Apsi frames only, each with file:line and its source line."""
    frames = apsi_frames(exc.__traceback__)
    out = []
    if len(frames) > 1:
        out.append("Traceback (most recent call last):")
    for filename, line, func in frames:
        where = "at top level" if func == "<module>" else \
            ("in fn" if func == "<lambda>" else f"in fn {apsi_name(func)}")
        out.append(f"  {filename}:{line}, {where}")
        text = SOURCES.get(filename, [])
        if 0 < line <= len(text) and text[line - 1].strip():
            out.append(f"    {text[line - 1].strip()}")
    loc = f"{frames[-1][0]}:{frames[-1][1]}: " if frames else ""
    out.append(f"{loc}error: {describe(exc)}")
    return "\n".join(out)


def render_syntax_error(exc: ApsiSyntaxError):
    return exc.render()
