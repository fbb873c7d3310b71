"""Which names each function declares, and how an assignment reaches an outer variable.

Apsi scopes are Python's: one per function (and the top level). `let`, `fn NAME`, `for` variables,
parameters and `catch e` declare. Assigning a name that no enclosing scope declares is a compile-time
error; assigning an outer one becomes Python's `nonlocal`/`global`.
"""

from . import syntax as S


class Scope:
    def __init__(self, parent, declared, is_module=False):
        self.parent = parent
        self.declared = set(declared)
        self.is_module = is_module
        self.nonlocals = set()
        self.globals = set()
        self.loop_depth = 0

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
