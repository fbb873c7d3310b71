"""Apsi's own value types and how values print.

Apsi values are plain Python objects: int, float, str, bool, None, list, tuple, and Record (the type of
`{name: "a", n: 3}`). Printing follows Apsi's spelling: true/false/none, records in braces.
"""

from types import SimpleNamespace


class Record(SimpleNamespace):
    """A record: fields read and written as attributes (`r.name`). C-level storage keeps access fast."""

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
    if t is set or t is frozenset:
        return "set([" + ", ".join(sorted(show(v, True) for v in value)) + "])"
    if callable(value) and getattr(value, "__module__", None) == "apsi_program":
        return f"<fn {getattr(value, '__name__', '?')}>"
    return str(value)


_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


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
