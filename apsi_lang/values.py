"""Apsi's own value types and how values print.

Apsi values are plain Python objects: int, float, str, bool, None, list, tuple, and Record (the type of
`{name: "a", n: 3}`). Printing follows Apsi's spelling: true/false/none, records in braces.
"""

from types import SimpleNamespace

from .py_text import no_address, type_word  # noqa: F401  (no_address: values' name, as before)


class _Absent:
    """A class-level data descriptor that always misses, so an instance field of the same name is
    never seen. Records carry one for each protocol NumPy, DLPack or torch read from an *instance*
    (__array_interface__ hands NumPy a raw memory address): a record never speaks them, whatever
    Python code put in its fields."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        raise AttributeError(self.name)

    def __set__(self, obj, value):
        raise AttributeError(f"a record cannot have a field named {self.name!r}")


_PROTOCOLS = ("__array__", "__array_interface__", "__array_struct__", "__array_priority__",
              "__array_function__", "__array_ufunc__", "__array_wrap__", "__array_finalize__",
              "__array_namespace__", "__dlpack__", "__dlpack_device__", "__cuda_array_interface__",
              "__torch_function__", "__torch_dispatch__", "__jax_array__", "__buffer__")


class Record(SimpleNamespace):
    """A record: fields read and written as attributes (`r.name`). C-level storage keeps access fast.
    Field names never start with '_': literals are checked by the parser, names from data by
    `record_from`, stores by the sandbox."""

    for _name in _PROTOCOLS:
        locals()[_name] = _Absent()
    del _name

    def __repr__(self):
        return show(self, quoted=True)

    __str__ = __repr__

    def __iter__(self):
        """`for name in r` walks the field names (in the order they were written)."""
        return iter(list(vars(self)))

    # SimpleNamespace would compare the field dicts and say "'<' not supported between 'dict' and
    # 'dict'"; records are equal field by field (==) but have no order
    def __lt__(self, other):
        raise _no_order("<")

    def __le__(self, other):
        raise _no_order("<=")

    def __gt__(self, other):
        raise _no_order(">")

    def __ge__(self, other):
        raise _no_order(">=")


def _no_order(op):
    from .errors import ApsiError

    return ApsiError(f"records cannot be compared with '{op}' (they have no order): sort them by a "
                     "field, like sorted(xs, key=fn(r) => r.name)")


def field_name_problem(name):
    """Why `name` cannot be a record field, or None when it can."""
    if type(name) is not str:
        return f"a field name must be a string, not {a_type(name)}"
    if not name.isidentifier():
        return f"{_quote(name)} is not a name (letters, digits and '_', not starting with a digit)"
    if name.startswith("_"):
        return f"{_quote(name)} starts with '_' (such names belong to Python's internals)"
    return None


def record_from(fields, where):
    """A Record from a mapping whose names come from data (unflatten, load_params, …): every name is
    checked, so no field is named like a Python or NumPy protocol."""
    from .errors import ApsiError

    for name in fields:
        problem = field_name_problem(name)
        if problem:
            raise ApsiError(f"{where}: cannot make a record field: {problem}")
    return Record(**fields)


def record_fields(r):
    return list(vars(r))


def show(value, quoted=False):
    """The text `print` writes for a value; strings are quoted when inside a container."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "none"
    t = type(value)
    if t is str:
        return _quote(value) if quoted else value
    if t is int or t is float:
        return repr(value)
    if t is list:
        return "[" + ", ".join(show(v, True) for v in value) + "]"
    if t is tuple:
        inner = ", ".join(show(v, True) for v in value)
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    if t is Record:
        return "{" + ", ".join(f"{k}: {show(v, True)}" for k, v in vars(value).items()) + "}"
    if t is dict:           # a map: keys are values (quoted strings), so it never reads as a record
        if not value:
            return "{:}"
        return "{" + ", ".join(f"{show(k, True)}: {show(v, True)}" for k, v in value.items()) + "}"
    if t in _VIEWS:         # m.keys(), m.values(), m.items() show as the lists they hold
        return show(list(value), quoted)
    if t is zip or t is enumerate:      # lazy pairs: say how to see them, not Python's <zip object>
        return f"<{t.__name__}: list(…) gives its items>"
    if t is bytes:          # s.encode(): no bytes literal in Apsi, so the numbers (b.decode() is the text)
        return "bytes([" + ", ".join([str(b) for b in value]) + "])"
    if t is set or t is frozenset:
        return "set([" + ", ".join(sorted(show(v, True) for v in value)) + "])"
    if callable(value) and not hasattr(type(value), "__apsi_type__") and (
            isinstance(value, type) or _is_function(value)):
        # functions, builtins, classes, bound methods: a name, never Python's `<… at 0x…>`
        # (a callable object with its own text, such as a torch module, prints that text)
        name = getattr(value, "__name__", None)
        return f"<fn {name}>" if type(name) is str else "<fn>"
    return no_address(str(value))


def _is_function(value):
    import types

    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                              types.BuiltinMethodType, types.MethodWrapperType, types.WrapperDescriptorType,
                              types.MethodDescriptorType))




_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def _quote(s):
    """A string as an Apsi literal. Control characters are written as escapes: a quoted string is how
    messages show values, and those may come from outside (a client's request, a file), where an
    escape sequence would drive the terminal or a line break would forge a line of the log."""
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    if not s.isprintable():
        s = "".join(c if c.isprintable() else _ESCAPES.get(c) or
                    (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c)
                    for c in s)
    return '"' + s + '"'


_ESCAPES = {"\r": "\\r"}


def type_name(value):
    """The Apsi name of a value's type, as `type(x)` returns it."""
    if value is None:
        return "none"
    t = type(value)
    names = {bool: "bool", int: "int", float: "float", str: "str", list: "list", tuple: "tuple",
             Record: "record", dict: "map", set: "set", frozenset: "set"}
    if t in names:
        return names[t]
    if t in _VIEWS:
        return _VIEWS[t]
    if callable(value):
        return "function"
    return getattr(t, "__apsi_type__", t.__name__)


def a_type(value):
    """'an int', 'a list', 'none': a value's type with its article, for messages."""
    if value is None:
        return "none"
    name = type_name(value)
    return ("an " if name[:1] in "aeiou" else "a ") + name
