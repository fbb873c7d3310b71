"""Attribute access from Apsi code: a per-type allow-list, checked at compile time where it can be.

Names starting with '_' never reach here (the parser refuses them). For the rest, the compiler asks
`needs_guard(name)`: a name that some known type exposes but does not allow (str.format, a generator's
gi_frame, an array's tofile, ...) compiles to a call of `get_attr`, which checks the allow-list of the
value's actual type at run time. Every other name compiles to a plain attribute read, so a loop over
record fields runs at CPython speed. With permission 'python' everything compiles to plain reads.

Packages declare what Apsi may read on their types with a class attribute:
    __apsi_attrs__ = frozenset({"shape", "ndim", "T"})
"""

import sys
import types

from .errors import ApsiError
from .values import Record, type_name

_STR = {"split", "rsplit", "join", "strip", "lstrip", "rstrip", "replace", "upper", "lower", "startswith",
        "endswith", "find", "rfind", "count", "index", "rindex", "isdigit", "isalpha", "isalnum", "isspace",
        "isupper", "islower", "title", "capitalize", "splitlines", "partition", "rpartition", "zfill",
        "ljust", "rjust", "center", "casefold", "swapcase", "removeprefix", "removesuffix", "expandtabs"}
_LIST = {"append", "pop", "extend", "insert", "remove", "index", "count", "sort", "reverse", "copy", "clear"}
_NUMBER = {"real", "imag", "conjugate", "is_integer", "bit_length", "numerator", "denominator"}

ALLOWED = {
    str: frozenset(_STR),
    list: frozenset(_LIST),
    tuple: frozenset({"index", "count"}),
    int: frozenset(_NUMBER),
    bool: frozenset(_NUMBER),
    float: frozenset(_NUMBER),
    range: frozenset({"start", "stop", "step", "index", "count"}),
    ApsiError: ApsiError.__apsi_attrs__,
}

# Attribute names dangerous on some type whatever the known types say (frames, code, file writers).
ALWAYS_GUARDED = frozenset({
    "format", "format_map", "mro", "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code",
    "ag_frame", "ag_code", "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame",
    "tb_next", "co_code", "tofile", "dump", "dumps", "ctypes", "save", "load", "system", "popen",
    "with_traceback", "args", "send", "throw", "close", "func_globals", "im_func", "base", "data",
})

_BUILTIN_TYPES = (
    str, list, tuple, int, float, bool, complex, dict, set, frozenset, bytes, bytearray, range, slice,
    type, memoryview, property, staticmethod, classmethod, map, filter, zip, enumerate, reversed,
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.GeneratorType,
    types.CoroutineType, types.AsyncGeneratorType, types.FrameType, types.TracebackType, types.CodeType,
    types.ModuleType, BaseException, OSError, SyntaxError, StopIteration, UnicodeDecodeError,
)

_registered = set()
_guarded_cache = None


def register(cls):
    """Make a type's public attributes known, so those it does not allow are guarded."""
    global _guarded_cache
    if cls not in _registered:
        _registered.add(cls)
        _guarded_cache = None


def register_from_module(module):
    """Register every class in a Python module that declares __apsi_attrs__."""
    for value in vars(module).values():
        if isinstance(value, type) and "__apsi_attrs__" in vars(value):
            register(value)


def allowed_attrs(tp):
    if tp in ALLOWED:
        return ALLOWED[tp]
    return getattr(tp, "__apsi_attrs__", frozenset())


def _public(tp):
    try:
        return {n for n in dir(tp) if not n.startswith("_")}
    except Exception:
        return set()


def guarded_names():
    """Every name that some known type has but does not allow Apsi to read."""
    global _guarded_cache
    known = list(_BUILTIN_TYPES) + list(_registered)
    np = sys.modules.get("numpy")
    if np is not None:
        known += [np.ndarray, np.generic, np.dtype]
    key = len(known)
    if _guarded_cache is None or _guarded_cache[0] != key:
        names = set(ALWAYS_GUARDED)
        for tp in known:
            names |= _public(tp) - allowed_attrs(tp)
        _guarded_cache = (key, frozenset(names))
    return _guarded_cache[1]


def needs_guard(name):
    return name in guarded_names()


def _python_allowed():
    from .permissions import allowed

    return allowed("python")


def get_attr(obj, name):
    """obj.name for Apsi code: allowed by the type's allow-list, or anything with permission 'python'."""
    tp = type(obj)
    if tp is Record or name in allowed_attrs(tp) or _python_allowed():
        return getattr(obj, name)
    raise ApsiError(refusal(obj, name), kind="permission")


def set_attr(obj, name, value):
    """obj.name = value: records only, or any object with permission 'python'."""
    if type(obj) is Record or _python_allowed():
        setattr(obj, name, value)
        return
    raise ApsiError(f"cannot set '.{name}' on a {type_name(obj)}: only record fields can be assigned "
                    "(Python objects need permission 'python': run with --allow-python)", kind="permission")


def refusal(obj, name):
    allowed = sorted(allowed_attrs(type(obj)))
    shown = ", ".join(allowed[:12]) + (", …" if len(allowed) > 12 else "")
    options = f" (available: {shown})" if allowed else ""
    return (f"'.{name}' of a {type_name(obj)} is not available to Apsi code{options}; full access to "
            "Python objects needs permission 'python': run with --allow-python "
            "(or [run] allow = [\"python\"] in apsi.toml)")
