"""Compile and run Apsi source: the namespace a program runs in and the helpers its code calls.

The runner (apsi_cli) compiles with compile_source and runs the Program; apsi_lang.report turns
whatever escapes into Apsi's messages.
"""

import builtins as _python_builtins
import operator
import sys
from pathlib import Path

from . import modules, permissions, sandbox
from .builtins import BUILTINS
from .compiler import apsi_name, compile_tree
from .errors import ApsiError, ApsiSyntaxError
from .parser import Parser
from .report import COMPILED, SOURCES, describe, describe_at, unbound_message  # noqa: F401 (program.describe)
from .scopes import declarations
from .values import Record, a_type, show

_COMPILE_RECURSION = 12000
def safe_mod(a, b):
    """a % b; for a text on the left, the values are formatted the Apsi way first (Python's %s/%r
    of a function or any other object would show its Python text, with a memory address)."""
    if type(a) is not str and type(a) is not bytes:
        return a % b
    if type(b) is dict:         # "%(name)s" % {"name": x}
        return a % {k: v if type(v) in (int, float, str) else show(v) for k, v in b.items()}
    values = b if type(b) is tuple else (b,)
    values = tuple(v if type(v) in (int, float, str) else show(v) for v in values)
    return a % (values if type(b) is tuple else values[0])


_AUG = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
        "//": operator.floordiv, "%": safe_mod, "**": operator.pow, "@": operator.matmul,
        "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
        ">>": operator.rshift}


class Program:
    """A compiled program: its code object and the globals it runs in."""

    def __init__(self, code, namespace):
        self.code = code
        self.namespace = namespace

    def run(self):
        # Apsi ints print at any size: Python's 4300-digit limit on int <-> text guards services
        # against slow parsing of untrusted input; Apsi does not promise CPU time (permissions.md)
        sys.set_int_max_str_digits(0)
        permissions.mark_sandboxed()     # Apsi code always runs under grants, installed or none
        exec(self.code, self.namespace)
        return self.namespace


# The builtins dict of the running code's frames: Apsi's table and nothing of Python's under a name
# Apsi can spell, so a name the program declares but has not bound yet (`if false: let open = 0`)
# is an error, never Python's builtin of that name. C code called from an Apsi frame looks some
# things up in that frame's builtins: NumPy imports lazily (PyImport_Import needs `__import__`).
_RUNTIME_BUILTINS = {**BUILTINS, "__import__": _python_builtins.__import__}
# With permission 'python' (which grants everything) the frames also get Python's builtins, for C code
# such as ndarray.tofile(path) that opens files through the frame's `open`. A name the program
# declares still never falls through to them: the compiler reads such names with `_gv`.
_FULL_BUILTINS = {**vars(_python_builtins), **BUILTINS}


def new_namespace(program_dir, args=(), echo_to=None):
    ns = {"__builtins__": _RUNTIME_BUILTINS, "__name__": "apsi_program", "args": list(args)}

    def use(name):
        ns.update(modules.load(name, program_dir))

    def use_as(name):
        """`use helpers as h`: the module's names as fields of a record."""
        exports = modules.load(name, program_dir)
        return Record(**{apsi_name(k): v for k, v in exports.items() if not apsi_name(k).startswith("_")})

    def echo(value):
        if value is not None:
            (echo_to or _print_value)(value)

    def global_value(name):
        try:
            return ns[name]
        except KeyError:
            raise ApsiError(unbound_message(apsi_name(name))) from None

    ns.update(_use_as=use_as, _Rspread=_record_spread, _FIELD=_FIELD, _kwargs=_kwargs)
    ns.update(_use=use, _echo=echo, _gv=global_value, _chk=sandbox.check, _ga=sandbox.get_attr,
              _sa=sandbox.set_attr, _augattr=_augattr, _R=Record, _NO=_NOT_CHECKED, _show=show, _repr=_repr,
              _type=type,
              _pystr=str, _PLAIN=frozenset({int, float, str}), _mod=safe_mod, _fmtv=_fmtv,
              _catch=_catch, _Catchable=Exception, _assert_fail=_assert_fail)
    return ns


_FIELD = object()          # marks a written field in _record_spread's arguments
_NOT_CHECKED = object()    # a record fast-path flag whose value failed the type test (compiler.flag_updates)


def _record_spread(*parts):
    """{...r, n: 2}: the fields of records and the written (_FIELD, name, value) ones; later ones win."""
    fields = {}
    for part in parts:
        if type(part) is Record:
            fields.update(vars(part))
        elif type(part) is tuple and len(part) == 3 and part[0] is _FIELD:
            fields[part[1]] = part[2]
        else:
            raise ApsiError(f"'...' in a record spreads another record, not {a_type(part)}")
    return Record(**fields)


def _kwargs(m):
    """f(**m): a map whose keys are keyword names (text, not starting with '_')."""
    if type(m) is not dict:
        raise ApsiError(f"'**' in a call spreads a map of keyword arguments, not {a_type(m)}")
    for k in m:
        if type(k) is not str or not k.isidentifier() or k.startswith("_"):
            raise ApsiError(f"'**' in a call: the key {show(k, True)} is not a keyword argument name")
    return m


_SHOWN_TYPES = frozenset({bool, type(None), list, tuple, dict, set, frozenset, Record, bytes})


def _fmtv(value):
    """The value an f-string's `{x:spec}` formats: Apsi's text for what Python would format its own
    way (`{true:>6}` is '  true', not '     1'; a list, a map, none take a str spec); numbers,
    strings and tensors as they are."""
    t = type(value)
    if t is int or t is float or t is str:
        return value
    if t in _SHOWN_TYPES or callable(value) and show(value).startswith("<fn"):
        return show(value)
    if getattr(value, "shape", None) == () and str(getattr(value, "dtype", "")) == "bool":
        return show(value)          # a NumPy/nn boolean scalar: true/false, not True/1
    return value


def _repr(value):
    return show(value, quoted=True)


def _print_value(value):
    text = show(value, quoted=True)
    if text.startswith("<fn ") and callable(value):    # `fit` alone: its signature, not <fn fit>
        from .help import shown_function

        text = shown_function(value) or text
    sys.stdout.write(text + "\n")


def _augattr(obj, name, op, value):
    sandbox.set_attr(obj, name, _AUG[op](sandbox.get_attr(obj, name), value))


def _assert_fail(message=None):
    return ApsiError("assertion failed" + (f": {show(message)}" if message is not None else ""),
                     kind="assert")


def _catch(exc):
    """What `catch e:` binds: an ApsiError whose .message is the Apsi-level description."""
    if isinstance(exc, ApsiError):
        return exc
    wrapped = ApsiError(describe_at(exc), kind=type(exc).__name__)
    wrapped.__cause__ = exc
    return wrapped


def compile_source(text, filename="<input>", namespace=None, echo=False, program_dir=None):
    """Parse and compile; raises ApsiSyntaxError. Returns a Program ready to run."""
    lines = text.split("\n")
    SOURCES[filename] = lines
    program_dir = program_dir or _dir_of(filename)
    ns = namespace if namespace is not None else new_namespace(program_dir)
    old_limit = sys.getrecursionlimit()
    if old_limit < _COMPILE_RECURSION:       # the parser recurses once per nesting level
        sys.setrecursionlimit(_COMPILE_RECURSION)
    try:
        return _compile(text, filename, lines, ns, echo, program_dir)
    except RecursionError:
        raise ApsiSyntaxError("this program is nested too deeply to compile: split deep expressions "
                              "with 'let' and move deep blocks into functions", filename, 1, 1,
                              lines[0]) from None
    finally:
        if old_limit < _COMPILE_RECURSION:
            sys.setrecursionlimit(old_limit)


def _compile(text, filename, lines, ns, echo, program_dir):
    body = Parser(text, filename).parse_program()
    fixed = set(BUILTINS) | {"args"}     # readable everywhere, never assignable
    user = {apsi_name(k) for k in ns if not k.startswith("_") or k.startswith("_kw_")} - fixed
    used = set()                         # names the `use` lines bring in

    def load_module(name, node):
        try:
            exports = modules.names(name, program_dir)
        except ApsiSyntaxError as e:
            e.used_by.append((filename, node.line, name))
            raise
        except ApsiError as e:
            raise ApsiSyntaxError(e.message, filename, node.line, node.col, lines[node.line - 1]) from None
        used.update(exports)
        return exports

    code, attr_sets = compile_tree(body, filename, lines, fixed, user, load_module, echo=echo,
                                   full_access=permissions.allowed("python"))
    COMPILED.setdefault(filename, []).append((code, lines))     # for fn_source, the exact source
    ns.update(sandbox.sets_for(attr_sets))
    if permissions.allowed("python"):
        ns["__builtins__"] = _FULL_BUILTINS
    prog = Program(code, ns)
    prog.exports = (declarations(body) | used) - {"args"}
    return prog


def _dir_of(filename):
    p = Path(filename)
    return str(p.parent.resolve()) if not filename.startswith("<") else str(Path.cwd())


def run_source(text, filename="<input>", args=(), grants=None, echo=False):
    if grants is not None:
        permissions.set_current(grants)
    ns = new_namespace(_dir_of(filename), args)
    return compile_source(text, filename, ns, echo=echo).run()


def compile_module(path, display_name):
    """Compile an Apsi module file (for `use`): (Program, the top-level names it exports)."""
    # the message names the file as `use` shows it (display_name), never the resolved path: a program
    # that catches the error must not learn where its project is (the home folder's name)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ApsiError(f"use {Path(path).stem}: cannot read {display_name}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ApsiError(f"use {Path(path).stem}: {display_name} is not UTF-8 text (byte "
                        f"{e.object[e.start]:#x} at position {e.start}); save it as UTF-8") from None
    ns = new_namespace(str(Path(path).parent))
    prog = compile_source(text, display_name, ns, program_dir=str(Path(path).parent))
    return prog, prog.exports
