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
from .permissions import allowed
from .values import Record, a_type


def _public(tp):
    try:
        return {n for n in dir(tp) if not n.startswith("_")}
    except Exception:
        return set()


def _all_but(tp, *dangerous):
    """Everything public on a well-understood type except the names that reach outside Apsi."""
    return frozenset(_public(tp) - set(dangerous))


# Plain data types: every public method is harmless except string formatting (it walks attributes).
ALLOWED = {
    str: _all_but(str, "format", "format_map"),
    list: _all_but(list), tuple: _all_but(tuple), dict: _all_but(dict), set: _all_but(set),
    frozenset: _all_but(frozenset), bytes: _all_but(bytes), bytearray: _all_but(bytearray),
    int: _all_but(int), bool: _all_but(bool), float: _all_but(float), complex: _all_but(complex),
    range: _all_but(range), slice: _all_but(slice), memoryview: _all_but(memoryview, "obj"),
    ApsiError: ApsiError.__apsi_attrs__,
}
# NumPy arrays and scalars: all but what writes files, pickles or exposes raw memory.
NUMPY_DANGEROUS = ("tofile", "dump", "dumps", "ctypes", "data", "base", "setflags", "getfield",
                   "setfield", "view", "resize", "put", "itemset", "newbyteorder", "byteswap", "tobytes",
                   "to_device", "device", "flags")

# Attribute names dangerous on some type whatever the known types say (frames, code, file writers).
# Frames, tracebacks and code objects are reachable only through these names, so their other
# attributes need no guard of their own.
ALWAYS_GUARDED = frozenset({
    "format", "format_map", "mro", "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code",
    "ag_frame", "ag_code", "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame",
    "tb_next", "co_code", "tofile", "dump", "dumps", "ctypes", "save", "load", "system", "popen",
    "with_traceback", "args", "send", "throw", "close", "func_globals", "im_func", "base", "data",
})

_BUILTIN_TYPES = (
    str, list, tuple, int, float, bool, complex, dict, set, frozenset, bytes, bytearray, range, slice,
    type, property, staticmethod, classmethod, map, filter, zip, enumerate, reversed,
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.GeneratorType,
    types.CoroutineType, types.AsyncGeneratorType,
    types.ModuleType, BaseException, OSError, SyntaxError, StopIteration, UnicodeDecodeError,
)
_numpy_done = False

_registered = set()
_guarded_cache = None


def register(cls):
    """Make a type's public attributes known, so those it does not allow are guarded."""
    global _guarded_cache
    if cls not in _registered:
        _registered.add(cls)
        _guarded_cache = None


def register_from_module(module):
    """Register every class in a Python module that declares or inherits __apsi_attrs__, so the
    public attributes a subclass adds are guarded too."""
    for value in list(vars(module).values()):
        if isinstance(value, type) and hasattr(value, "__apsi_attrs__"):
            register(value)


def allowed_attrs(tp):
    if tp in ALLOWED:
        return ALLOWED[tp]
    return getattr(tp, "__apsi_attrs__", frozenset())


def _add_numpy():
    """NumPy's types join the allow-lists once NumPy is loaded (apsi_lang never imports it)."""
    global _numpy_done
    np = sys.modules.get("numpy")
    if np is None or _numpy_done:
        return
    _numpy_done = True
    for tp in (np.ndarray, np.generic):
        ALLOWED[tp] = _all_but(tp, *NUMPY_DANGEROUS)


def guarded_names():
    """Every name that some known type has but does not allow Apsi to read."""
    global _guarded_cache
    _add_numpy()
    known = list(_BUILTIN_TYPES) + list(_registered) + [t for t in ALLOWED if t not in _BUILTIN_TYPES]
    key = len(known)
    if _guarded_cache is None or _guarded_cache[0] != key:
        names = set(ALWAYS_GUARDED)
        for tp in known:
            names |= _public(tp) - allowed_attrs(tp)
        _guarded_cache = (key, frozenset(names))
    return _guarded_cache[1]


def needs_guard(name):
    return name in guarded_names()


def _inherited_allowed(tp):
    """numpy scalar subclasses (float64, int64, ...) use their base's list."""
    for base in tp.__mro__[1:]:
        if base in ALLOWED and base is not object:
            return ALLOWED[base]
    return frozenset()


def _python_allowed():
    return allowed("python")


def get_attr(obj, name):
    """obj.name for Apsi code: allowed by the type's allow-list, or anything with permission 'python'."""
    tp = type(obj)
    if tp is Record or name in allowed_attrs(tp) or name in _inherited_allowed(tp) or _python_allowed():
        return getattr(obj, name)
    raise ApsiError(refusal(obj, name), kind="permission")


def set_attr(obj, name, value):
    """obj.name = value: records only, or any object with permission 'python'."""
    if type(obj) is Record or _python_allowed():
        setattr(obj, name, value)
        return
    raise ApsiError(f"cannot set '.{name}' on {a_type(obj)}: only record fields can be assigned "
                    "(Python objects need permission 'python': run with --allow-python)", kind="permission")


def refusal(obj, name):
    allowed = sorted(allowed_attrs(type(obj)))
    shown = ", ".join(allowed[:12]) + (", …" if len(allowed) > 12 else "")
    options = f" (available: {shown})" if allowed else ""
    return (f"'.{name}' of {a_type(obj)} is not available to Apsi code{options}; full access to "
            "Python objects needs permission 'python': run with --allow-python "
            "(or [run] allow = [\"python\"] in apsi.toml)")
