"""Which expressions certainly hold an int, a float or a str ("plain" values), found at compile time.

Apsi shows true/false/none and containers its own way, so an f-string field or str(x) must call
values.show — unless the value is plain, whose Apsi text is Python's own: then the compiler emits
CPython's FORMAT_VALUE / str() directly and `f"item{i}"` costs what it costs in Python.

A variable is plain when every binding of it in its scope — and any assignment of that name in a
function nested inside, which may rebind it — gives a plain value: a number or text literal, an
f-string, arithmetic on plain values, str/repr/len/int/float/chr/ord of Apsi's builtins, or a `for`
over Apsi's range(). Anything else (parameters, destructuring, calls of other functions) is unknown.
"""

from . import syntax as S

ARITH = {"+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>"}
PLAIN_CALLS = {"str", "repr", "len", "int", "float", "chr", "ord"}


def plain_names(body, candidates, is_builtin):
    """The names of `candidates` (declared in this scope) that certainly hold plain values."""
    bindings = {}
    blocked = set()
    for stmt in _walk(body):
        for name, value in _bindings(stmt, is_builtin):
            if value is None:
                blocked.add(name)
            else:
                bindings.setdefault(name, []).append(value)
    plain = {n for n in candidates if n in bindings and n not in blocked}
    changed = True
    while changed:          # drop names with a binding that is not plain given the others
        changed = False
        for name in list(plain):
            if not all(v == "int" or is_plain(v, plain.__contains__, is_builtin) for v in bindings[name]):
                plain.discard(name)
                changed = True
    return frozenset(plain)


def _bindings(stmt, is_builtin):
    """(name, value expr or "int", or None for unknown) for what a statement binds."""
    if isinstance(stmt, S.Let):
        if stmt.pattern is None and len(stmt.targets) == 1:
            return [(stmt.targets[0], stmt.value)]
        return [(n, None) for n in stmt.targets]
    if isinstance(stmt, S.Assign):
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], S.Name):
            return [(stmt.targets[0].id, stmt.value)]
        return [(t.id, None) for t in stmt.targets if isinstance(t, S.Name)]
    if isinstance(stmt, S.AugAssign):
        if isinstance(stmt.target, S.Name):
            value = stmt.value if stmt.op in ARITH else None
            return [(stmt.target.id, value)]
        return []
    if isinstance(stmt, S.For):
        if stmt.pattern is None and len(stmt.targets) == 1 and _is_range(stmt.iter, is_builtin):
            return [(stmt.targets[0], "int")]
        return [(n, None) for n in stmt.targets]
    if isinstance(stmt, S.FnDef):
        return [(stmt.name, None)] + [(p.name, None) for p in stmt.params if p.name]
    if isinstance(stmt, S.Try) and stmt.name:
        return [(stmt.name, None)]
    if isinstance(stmt, S.Use) and stmt.alias:
        return [(stmt.alias, None)]
    return []


def _is_range(e, is_builtin):
    return isinstance(e, S.Call) and isinstance(e.func, S.Name) and e.func.id == "range" \
        and is_builtin("range") and not e.kwargs and all(not isinstance(a, S.Splat) for a in e.args)


def is_plain(e, name_is_plain, is_builtin):
    """`name_is_plain(name)` says whether a variable is plain (see plain_names)."""
    if isinstance(e, S.Const):
        return type(e.value) in (int, float, str)
    if isinstance(e, S.FString):
        return True
    if isinstance(e, S.Name):
        return name_is_plain(e.id)
    if isinstance(e, S.Binary):
        return e.op in ARITH and is_plain(e.left, name_is_plain, is_builtin) \
            and is_plain(e.right, name_is_plain, is_builtin)
    if isinstance(e, S.Unary):
        return e.op in ("-", "+", "~") and is_plain(e.operand, name_is_plain, is_builtin)
    if isinstance(e, S.Call):
        return isinstance(e.func, S.Name) and e.func.id in PLAIN_CALLS and is_builtin(e.func.id)
    return False


def _walk(body):
    """Every statement in a block, nested blocks and nested functions included (their assignments
    to an outer name rebind it)."""
    stack = list(body)
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in ("body", "orelse", "handler", "final"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list | tuple):
                stack.extend(x for x in inner if isinstance(x, S.Node))
