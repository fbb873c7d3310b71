"""Which names each function declares, and how an assignment reaches an outer variable.

Apsi scopes are Python's: one per function (and the top level). `let`, `fn NAME`, `for` variables,
parameters and `catch e` declare. Assigning a name that no enclosing scope declares is a compile-time
error; assigning an outer one becomes Python's `nonlocal`/`global`.
"""

from . import syntax as S


class Scope:
    def __init__(self, parent, declared, is_module=False, bound=(), rebound_inside=()):
        self.parent = parent
        self.declared = set(declared)
        self.is_module = is_module
        self.nonlocals = set()
        self.globals = set()
        self.loop_depth = 0
        # for the record fast path: names certainly bound at the statement being compiled, and
        # names a nested function may rebind (never treated as stable)
        self.bound = set(bound)
        self.rebound_inside = frozenset(rebound_inside)
        self.flags = {}     # variable -> (flag local, type set global): see Compiler.function_body
        self.flag_sites = {}    # variable -> how many bindings got a flag update

    def stable_local(self, name):
        """True when `name` is this scope's own variable, bound here, and nothing but this frame's
        code can rebind it (no nested function assigns it)."""
        return name in self.declared and name in self.bound and name not in self.rebound_inside

    def owner_of(self, name):
        """The nearest scope declaring `name`, or None."""
        scope = self
        while scope is not None:
            if name in scope.declared:
                return scope
            scope = scope.parent
        return None

    def all_names(self):
        names, scope = set(), self
        while scope is not None:
            names |= scope.declared
            scope = scope.parent
        return names


def declarations(body):
    """Names declared directly in a block list (not inside nested functions)."""
    names = set()
    for stmt in body:
        _collect(stmt, names)
    return names


def _collect(stmt, names):
    if isinstance(stmt, S.Let):
        names.update(stmt.targets)
    elif isinstance(stmt, S.FnDef):
        names.add(stmt.name)
    elif isinstance(stmt, S.For):
        names.update(stmt.targets)
        names.update(declarations(stmt.body))
        names.update(declarations(stmt.orelse))
    elif isinstance(stmt, S.While):
        names.update(declarations(stmt.body))
        names.update(declarations(stmt.orelse))
    elif isinstance(stmt, S.Use) and stmt.alias:
        names.add(stmt.alias)
    elif isinstance(stmt, S.If):
        names.update(declarations(stmt.body))
        names.update(declarations(stmt.orelse))
    elif isinstance(stmt, S.Try):
        names.update(declarations(stmt.body))
        if stmt.name:
            names.add(stmt.name)
        names.update(declarations(stmt.handler or []))
        names.update(declarations(stmt.final or []))


# ---- what the compiler's record fast path needs to know (see apsi_lang.sandbox) ----------------

def binds(stmt):
    """Names a simple statement certainly binds once it has run (compound statements: none, since
    their blocks may not run)."""
    if isinstance(stmt, S.Let):
        return set(stmt.targets)
    if isinstance(stmt, S.FnDef):
        return {stmt.name}
    if isinstance(stmt, S.Assign):
        return {t.id for t in stmt.targets if isinstance(t, S.Name)}
    return set()


def assigned_in_nested(body):
    """Names that a function nested (at any depth) in `body` assigns with `x = …` / `x += …`:
    such a function may rebind a variable of this scope while an expression here runs.
    (A new statement that rebinds an outer name must be added here and in `binds`.)"""
    out = set()
    for fn in _nodes(body, S.FnDef, enter=False):
        for stmt in _nodes(fn.body, S.Assign | S.AugAssign, enter=True):
            targets = stmt.targets if isinstance(stmt, S.Assign) else [stmt.target]
            out.update(t.id for t in targets if isinstance(t, S.Name))
    return out


def bound_anywhere(tree):
    """Every name a statement in `tree` may bind (let, assignment, augmented assignment, a `for`
    target, a `catch` name, a fn), in its blocks too, but not inside nested scopes."""
    out = set()
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, S.Lambda | S.ListComp):
            continue
        if isinstance(x, S.Let | S.For):
            out.update(x.targets)
        elif isinstance(x, S.Assign):
            out.update(t.id for t in x.targets if isinstance(t, S.Name))
        elif isinstance(x, S.AugAssign) and isinstance(x.target, S.Name):
            out.add(x.target.id)
        elif isinstance(x, S.FnDef):
            out.add(x.name)
            continue
        elif isinstance(x, S.Try) and x.name:
            out.add(x.name)
        if isinstance(x, S.Node):
            stack.extend(getattr(x, f) for f in x.fields)
        elif isinstance(x, list | tuple):
            stack.extend(x)
    return out


def loop_targets(body):
    """Names that a `for` of this scope (not of a nested function) binds on every iteration."""
    out = set()
    stack = list(body)
    while stack:
        x = stack.pop()
        if isinstance(x, S.FnDef | S.Lambda | S.ListComp):
            continue
        if isinstance(x, S.For):
            out.update(x.targets)
        if isinstance(x, S.Node):
            stack.extend(getattr(x, f) for f in x.fields)
        elif isinstance(x, list | tuple):
            stack.extend(x)
    return out


def _nodes(tree, kind, enter):
    """Every node of `kind` in a tree of nodes and lists; `enter`: look inside the ones found too."""
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, kind):
            yield x
            if not enter:
                continue
        if isinstance(x, S.Node):
            stack.extend(getattr(x, f) for f in x.fields)
        elif isinstance(x, list | tuple):
            stack.extend(x)


def field_reads(tree):
    """({name: {field, …}} for the reads `name.field` in a function body or an expression, whether it
    holds a nested scope (a fn, a lambda, a comprehension)); nested scopes are not entered."""
    out, nested = {}, False
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, S.FnDef | S.Lambda | S.ListComp):
            nested = True
            continue
        if isinstance(x, S.Attr) and isinstance(x.obj, S.Name):
            out.setdefault(x.obj.id, set()).add(x.name)
        if isinstance(x, S.Node):
            stack.extend(getattr(x, f) for f in x.fields)
        elif isinstance(x, list | tuple):
            stack.extend(x)
    return out, nested
