"""The Apsi syntax tree: what the parser builds and the compiler reads.

Every node carries `line` and `col` (1-based) of its first token, for error messages and the
line tables of the compiled code.
"""

from dataclasses import dataclass, field


@dataclass(slots=True)
class Node:
    line: int
    col: int


# ---- expressions -------------------------------------------------------------------------------

@dataclass(slots=True)
class Const(Node):          # numbers, strings, true/false/none
    value: object


@dataclass(slots=True)
class FString(Node):        # parts: str pieces and FPart
    parts: list


@dataclass(slots=True)
class FPart(Node):
    expr: Node
    spec: str


@dataclass(slots=True)
class Name(Node):
    id: str


@dataclass(slots=True)
class ListLit(Node):
    items: list


@dataclass(slots=True)
class TupleLit(Node):
    items: list


@dataclass(slots=True)
class RecordLit(Node):
    keys: list
    values: list


@dataclass(slots=True)
class Unary(Node):
    op: str
    operand: Node


@dataclass(slots=True)
class Binary(Node):
    op: str
    left: Node
    right: Node


@dataclass(slots=True)
class Logic(Node):          # and / or
    op: str
    values: list


@dataclass(slots=True)
class Compare(Node):
    left: Node
    ops: list
    rights: list


@dataclass(slots=True)
class IfExpr(Node):
    test: Node
    body: Node
    orelse: Node


@dataclass(slots=True)
class Call(Node):
    func: Node
    args: list                  # Node, or Splat for *xs
    kwargs: list                # (name, Node)


@dataclass(slots=True)
class Splat(Node):
    value: Node


@dataclass(slots=True)
class Attr(Node):
    obj: Node
    name: str


@dataclass(slots=True)
class Index(Node):
    obj: Node
    index: Node


@dataclass(slots=True)
class Slice(Node):
    lo: Node | None
    hi: Node | None
    step: Node | None


@dataclass(slots=True)
class Param(Node):
    name: str
    default: Node | None
    star: bool = False


@dataclass(slots=True)
class Lambda(Node):
    params: list
    body: Node


# ---- statements --------------------------------------------------------------------------------

@dataclass(slots=True)
class Let(Node):
    targets: list               # names; several for `let a, b = e`
    value: Node


@dataclass(slots=True)
class Assign(Node):
    targets: list               # Name / Attr / Index nodes; several for `a, b = e`
    value: Node


@dataclass(slots=True)
class AugAssign(Node):
    target: Node
    op: str
    value: Node


@dataclass(slots=True)
class ExprStmt(Node):
    expr: Node


@dataclass(slots=True)
class FnDef(Node):
    name: str
    params: list
    body: list


@dataclass(slots=True)
class Return(Node):
    value: Node | None


@dataclass(slots=True)
class If(Node):
    test: Node
    body: list
    orelse: list


@dataclass(slots=True)
class For(Node):
    targets: list               # names
    iter: Node
    body: list


@dataclass(slots=True)
class While(Node):
    test: Node
    body: list


@dataclass(slots=True)
class Break(Node):
    pass


@dataclass(slots=True)
class Continue(Node):
    pass


@dataclass(slots=True)
class Pass(Node):
    pass


@dataclass(slots=True)
class Try(Node):
    body: list
    name: str | None
    handler: list | None
    final: list | None = field(default=None)


@dataclass(slots=True)
class Assert(Node):
    test: Node
    message: Node | None


@dataclass(slots=True)
class Use(Node):
    name: str
