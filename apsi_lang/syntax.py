"""The Apsi syntax tree: what the parser builds and the compiler reads.

Every node carries `line` and `col` (1-based) of its first token, for error messages and the
line tables of the compiled code.
"""



class Node:
    """Base of all nodes: fields are listed in `fields` (after line and col), with `defaults` for the last."""

    __slots__ = ("line", "col")
    fields = ()
    defaults = ()

    def __init__(self, line, col, *values):
        self.line = line
        self.col = col
        names = self.fields
        if len(values) < len(names):
            values = values + self.defaults[len(values) - len(names):]
        for name, value in zip(names, values, strict=True):
            setattr(self, name, value)

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.fields)
        return f"{type(self).__name__}({inner})"


def node(name, *fields, defaults=()):
    """A node class with __slots__ (cheaper at start-up than a dataclass)."""
    return type(name, (Node,), {"__slots__": fields, "fields": fields, "defaults": defaults})



# ---- expressions -------------------------------------------------------------------------------
Const = node('Const', 'value')  # numbers, strings, true/false/none
FString = node('FString', 'parts')  # parts: str pieces and FPart
FPart = node('FPart', 'expr', 'spec', 'conv', defaults=(None,))  # conv: None, 'r' or 's'
Name = node('Name', 'id')
ListLit = node('ListLit', 'items')
ListComp = node('ListComp', 'elt', 'clauses')  # clauses: (names, source, conditions, pattern)
TupleLit = node('TupleLit', 'items')
RecordLit = node('RecordLit', 'keys', 'values')  # a key None: the value is a record spread, {...r}
MapLit = node('MapLit', 'keys', 'values')        # {"a": 1}, {(k): v}, {:}
Unary = node('Unary', 'op', 'operand')
Binary = node('Binary', 'op', 'left', 'right')
Logic = node('Logic', 'op', 'values')  # and / or
Compare = node('Compare', 'left', 'ops', 'rights')
IfExpr = node('IfExpr', 'test', 'body', 'orelse')
Call = node('Call', 'func', 'args', 'kwargs')
Splat = node('Splat', 'value')
Attr = node('Attr', 'obj', 'name')
Index = node('Index', 'obj', 'index')
Slice = node('Slice', 'lo', 'hi', 'step')
Param = node('Param', 'name', 'default', 'star', defaults=(False,))  # star: False, True (*xs, or a bare
                                                                    # * with name None) or "**" (**kw)
Lambda = node('Lambda', 'params', 'body')



# ---- statements --------------------------------------------------------------------------------
# targets: every name bound; pattern: their shape when it is more than `a, b` (`a, *rest`,
# `i, (x, y)`): a name, ("*", name) or a list of patterns
Let = node("Let", "targets", "value", "pattern", defaults=(None,))
Assign = node("Assign", "targets", "value")           # targets: Name/Attr/Index; several for `a, b = e`
AugAssign = node("AugAssign", "target", "op", "value")
ExprStmt = node("ExprStmt", "expr")
FnDef = node("FnDef", "name", "params", "body")
Return = node("Return", "value")
If = node("If", "test", "body", "orelse")
For = node("For", "targets", "iter", "body", "orelse", "pattern", defaults=((), None))
While = node("While", "test", "body", "orelse", defaults=((),))
Break = node("Break")
Continue = node("Continue")
Pass = node("Pass")
Try = node("Try", "body", "name", "handler", "final", defaults=(None,))
Assert = node("Assert", "test", "message")
Use = node("Use", "name", "alias", defaults=(None,))     # use helpers as h
Del = node("Del", "targets")                              # del xs[i], m[k]
