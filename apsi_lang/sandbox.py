"""Attribute access from Apsi code: default-deny, decided by the value's actual type at run time.

The rule. `a.b` in Apsi reads `b` only when `type(a)` allows it:
  - a record (`{x: 1}`) allows every field;
  - the plain data types in ALLOWED (str, list, numbers, ...) allow what that table lists;
  - NumPy arrays and scalars allow their public names minus NUMPY_DANGEROUS;
  - any other class allows exactly the names in its `__apsi_attrs__` (its own or inherited);
  - everything else (functions, types, modules, frames, generators, ...) allows nothing.
Names starting with '_' never get this far (the parser refuses them). With permission 'python' every
public attribute is readable. The decision never depends on what was imported when a file was
compiled: it is made for the value in hand, and cached per type.

For package authors (`layers`, the torch backend, ...): to let Apsi read attributes of your objects,
give the class a frozenset of names, e.g.

    class Model:
        __apsi_attrs__ = frozenset({"init", "apply", "name"})
        __apsi_type__ = "model"        # what Apsi's type(x) says (optional)
        __apsi_refusal__ = staticmethod(fn)  # fn(name) -> the message for a refused name (optional)

Only list names whose values are safe to hand to Apsi code (no raw ndarrays, files, frames, modules
or Python containers Apsi cannot make); the values returned are subject to the same rule. A plain
record (apsi_lang.values.Record) needs nothing: all its fields are readable.

How it is compiled (apsi_lang.compiler): every read `a.b` becomes
    (a if type(a) in TYPES_b else check(a, "b", TYPES_b)).b
where TYPES_b (from `types_allowing`) is a set of types already known to allow `b` (records always);
`check` decides for a type not yet in the set and adds it when its allow-list says yes. In a function,
where a base is a local variable the compiler can prove bound and not rebound by any other code, an
expression with record field reads is compiled twice, guarded once: `fast if type(p) in TYPES else slow`,
so a loop over record fields runs plain attribute reads at CPython speed.
"""

import sys

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


# Plain data types. String formatting walks attributes ("{0.__class__}"); maketrans returns a dict
# (a raw Python container Apsi cannot otherwise make, and one NumPy reads protocols from).
TEXT_DANGEROUS = ("format", "format_map", "maketrans")
ALLOWED = {
    str: _all_but(str, *TEXT_DANGEROUS),
    list: _all_but(list), tuple: _all_but(tuple), dict: _all_but(dict, "fromkeys"),
    set: _all_but(set), frozenset: _all_but(frozenset),
    bytes: _all_but(bytes, "maketrans", "fromhex"), bytearray: _all_but(bytearray, "maketrans", "fromhex"),
    int: _all_but(int, "from_bytes"), bool: _all_but(bool, "from_bytes"),
    float: _all_but(float, "fromhex"), complex: _all_but(complex),
    range: _all_but(range), slice: _all_but(slice), type(None): frozenset(),
}
# NumPy arrays and scalars: all but what writes files, pickles, reinterprets or exposes raw memory,
# and what the plain types above refuse (numpy.str_ is a str: its format() walks attributes too).
NUMPY_DANGEROUS = ("tofile", "dump", "dumps", "ctypes", "data", "base", "setflags", "getfield",
                   "setfield", "view", "resize", "put", "itemset", "newbyteorder", "byteswap", "tobytes",
                   "tostring", "to_device", "device", "flags", "flat",
                   *TEXT_DANGEROUS, "fromhex", "from_bytes", "fromkeys")

_cache = {}          # type -> frozenset of allowed names (None for records: every field)
_sets = {}           # frozenset of names -> set of types allowing all of them
_set_names = {}      # frozenset of names -> the global name compiled code uses for its set


def allowed_attrs(tp):
    """The names Apsi may read on instances of `tp` (a frozenset), or None for records (all)."""
    try:
        return _cache[tp]
    except KeyError:
        pass
    result = _compute(tp)
    _cache[tp] = result
    return result


def _compute(tp):
    if tp is Record:
        return None
    if tp in ALLOWED:
        return ALLOWED[tp]
    declared = getattr(tp, "__apsi_attrs__", None)
    if isinstance(declared, frozenset | set | tuple | list):
        return frozenset(n for n in declared if type(n) is str and not n.startswith("_"))
    np = sys.modules.get("numpy")           # a NumPy type exists only once NumPy is loaded
    if np is not None:
        if issubclass(tp, np.ndarray):
            return _all_but(np.ndarray, *NUMPY_DANGEROUS)
        if issubclass(tp, np.generic):
            return _all_but(tp, *NUMPY_DANGEROUS)
    return frozenset()


def register(cls):
    """Decide `cls`'s allow-list now (it would be decided at its first attribute read anyway: the
    rule depends only on the class, never on when it was registered)."""
    allowed_attrs(cls)


def may_read(tp, name):
    names = allowed_attrs(tp)
    return names is None or name in names


def types_allowing(names):
    """The shared, growing set of types known to allow every name in `names` (records always)."""
    names = frozenset(names)
    found = _sets.get(names)
    if found is None:
        found = {Record} | {tp for tp in list(_cache) + list(ALLOWED)
                            if all(may_read(tp, n) for n in names)}
        _sets[names] = found
    return found


def set_name(names):
    """The global name under which compiled code finds `types_allowing(names)` (one per name set)."""
    names = frozenset(names)
    found = _set_names.get(names)
    if found is None:
        found = _set_names[names] = f"_A{len(_set_names)}"
    return found


def sets_for(global_names):
    """{global name: its set} for installing into a program's namespace."""
    by_name = {v: k for k, v in _set_names.items()}
    return {g: types_allowing(by_name[g]) for g in global_names}


def check(obj, name, known=None):
    """`obj` itself when Apsi code may read `obj.name`; else an ApsiError. A type allowed by its list
    joins `known` (the call site's set) so the next read takes the fast path."""
    tp = type(obj)
    if may_read(tp, name):
        if known is not None:
            known.add(tp)
        return obj
    if allowed("python") or (tp in ALLOWED and not _exists_on_type(tp, name)):
        return obj      # (a plain data type without the name: the read raises "has no field")
    raise ApsiError(refusal(obj, name), kind="permission")


def get_attr(obj, name):
    """obj.name for Apsi code: allowed by the type's allow-list, or anything with permission 'python'."""
    return getattr(check(obj, name), name)


def set_attr(obj, name, value):
    """obj.name = value: records only, or any object with permission 'python'."""
    if name.startswith("_"):
        raise ApsiError(f"cannot set '.{name}': names starting with '_' belong to Python's internals",
                        kind="permission")
    if type(obj) is Record:
        if name not in vars(obj):       # a record's fields are fixed: a typo must not add one
            raise ApsiError(f"record has no field '{name}' (its fields: {', '.join(vars(obj)) or 'none'}): "
                            f"a record's fields are fixed; make a new record with {{...r, {name}: …}}, "
                            "or use a map for keys added as you go")
        setattr(obj, name, value)
        return
    if allowed("python"):
        setattr(obj, name, value)
        return
    raise ApsiError(f"cannot set '.{name}' on {a_type(obj)}: only record fields can be assigned "
                    "(Python objects need permission 'python': run with --allow-python)", kind="permission")


def _exists_on_type(tp, name):
    try:
        return any(name in vars(k) for k in tp.__mro__)
    except Exception:
        return True


# What to write instead, for the refusals a Python user meets first (no access is widened by these).
_INSTEAD = {(str, "format"): "use an f-string: f\"{x} and {y:.2f}\"",
            (str, "format_map"): "use an f-string: f\"{m['k']}\""}


def refusal(obj, name):
    explain = getattr(type(obj), "__apsi_refusal__", None)     # a type that knows why (units' `u`)
    if explain is not None:
        return explain(name)
    instead = _INSTEAD.get((type(obj), name))
    if instead:
        return (f"'.{name}' of {a_type(obj)} is not available to Apsi code: {instead} (full access to "
                "Python objects needs permission 'python': --allow-python)")
    names = sorted(allowed_attrs(type(obj)) or ())
    shown = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
    options = f" (available: {shown})" if names else ""
    return (f"'.{name}' of {a_type(obj)} is not available to Apsi code{options}; full access to "
            "Python objects needs permission 'python': run with --allow-python "
            "(or [run] allow = [\"python\"] in apsi.toml)")
