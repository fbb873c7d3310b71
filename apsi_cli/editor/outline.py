"""A program's outline from the real lexer and parser: the names it defines (functions, variables,
parameters, modules), where, and what the name under a cursor is. Nothing is compiled or run."""

import re
from dataclasses import dataclass, field

from apsi_lang import syntax as S
from apsi_lang.errors import ApsiSyntaxError
from apsi_lang.lexer import tokenize
from apsi_lang.parser import Parser


@dataclass
class Definition:
    name: str
    kind: str                  # "function", "variable", "parameter", "module"
    line: int                  # 1-based, of the name itself
    col: int
    end_line: int = 0          # the last line of the statement (a function's whole body)
    detail: str = ""
    top: bool = True           # at the program's top level (what `use` exports)
    children: list = field(default_factory=list)


class Definitions:
    """Lookups over `self.definitions` (a list of Definition), shared by one text's outline and a
    whole document's (incremental.py)."""

    def all_definitions(self):
        out, todo = [], list(self.definitions)
        while todo:
            d = todo.pop()
            out.append(d)
            todo += d.children
        return out

    def find(self, name, line=None):
        """The definition `name` refers to at `line`: the innermost function's own first, else the
        program's top level; None when the file does not define it."""
        everything = self.all_definitions()
        best = next((d for d in sorted(everything, key=lambda d: d.line) if d.name == name and d.top), None)
        if line is not None:
            for fn in everything:
                if fn.kind == "function" and fn.line <= line <= fn.end_line:
                    inner = [c for c in fn.children if c.name == name]
                    if inner:
                        best = inner[0]
        return best

    def top_names(self):
        return {d.name for d in self.definitions if d.top}


class Outline(Definitions):
    """Tokens, syntax tree and definitions of one source text; `error` when it does not parse."""

    def __init__(self, text, filename="<input>"):
        self.text, self.filename = text, filename
        self.lines = text.split("\n")
        self.error, self.body, self.definitions, self._referenced = None, None, [], None
        try:
            self.tokens = tokenize(text, filename)
            self.body = Parser(text, filename, self.tokens).parse_program()
        except ApsiSyntaxError as e:
            self.error = e
            return
        except RecursionError:      # the compiler says this in words (program.compile_source)
            self.error = ApsiSyntaxError("this program is nested too deeply", filename, 1, 1)
            return
        self._names = {}
        for t in self.tokens:
            if t.kind == "NAME":
                self._names.setdefault(t.value, []).append((t.line, t.col))
        self.definitions = self._collect(self.body, top=True)

    def _at(self, name, node):
        """(line, col) of `name` written at or after the statement `node`."""
        for line, col in self._names.get(name, ()):
            if (line, col) >= (node.line, node.col):
                return line, col
        return node.line, node.col

    def _collect(self, body, top):
        found = []
        for s in body:
            end = _last_line(s)
            if isinstance(s, S.FnDef):
                line, col = self._at(s.name, s)
                params = [self._param(p, s) for p in s.params if p.name]
                fn = Definition(s.name, "function", line, col, end, f"fn {s.name}({_params(s.params)})", top)
                fn.children = params + self._collect(s.body, top=False)
                found.append(fn)
                continue
            if isinstance(s, S.Let | S.For):
                found += [Definition(n, "variable", *self._at(n, s), end, _variable_detail(s, n), top)
                          for n in s.targets]
            elif isinstance(s, S.Use):
                shown = s.alias or s.name
                found.append(Definition(shown, "module", *self._at(shown, s), end,
                                        f"use {s.name}" + (f" as {s.alias}" if s.alias else ""), top))
            elif isinstance(s, S.Try) and s.name:
                found.append(Definition(s.name, "variable", *self._at(s.name, s), end, "catch " + s.name,
                                        False))
            for part in ("body", "orelse", "handler", "final"):
                inner = getattr(s, part, None)
                if isinstance(inner, list):
                    found += self._collect(inner, top)   # blocks at top level still define top names
        return found

    def _param(self, p, fn):
        return Definition(p.name, "parameter", *self._at(p.name, fn), fn.line, "parameter " + p.name, False)

    def uses(self):
        """(module name, alias or None, line) of every `use` line."""
        return [(s.name, s.alias, s.line) for s in self.body or () if isinstance(s, S.Use)]

    def referenced(self):
        """Every name the text writes (read or bound), f-strings' fields included."""
        if self.error is not None:
            return set()
        if self._referenced is None:
            from .check import walk

            self._referenced = set(self._names) | {n.id for n in walk(self.body) if isinstance(n, S.Name)}
        return self._referenced


def shifted(definition, offset):
    """A copy of `definition` (and its children) `offset` lines further down."""
    from dataclasses import replace

    return replace(definition, line=definition.line + offset, end_line=definition.end_line + offset,
                   children=[shifted(c, offset) for c in definition.children])


# the kind a `let` gives its name, read from the value's syntax (hover shows it)
_KINDS = {"ListLit": "list", "ListComp": "list", "RecordLit": "record", "MapLit": "map", "TupleLit": "tuple",
          "Lambda": "fn", "FString": "str", "Compare": "bool"}


def _variable_detail(stmt, name):
    if isinstance(stmt, S.For):
        return f"for {name} in …"
    if len(stmt.targets) != 1:
        return f"let {name}"
    value = stmt.value
    kind = _KINDS.get(type(value).__name__)
    if isinstance(value, S.Const):
        kind = "none" if value.value is None else {bool: "bool", int: "int", float: "float", str: "str"}.get(
            type(value.value))
    elif isinstance(value, S.Call) and isinstance(value.func, S.Name):
        kind = f"the result of {value.func.id}(…)"
    return f"let {name}" + (f"  # {kind}" if kind else "")


def _params(params):
    out = []
    for p in params:
        star = "**" if p.star == "**" else ("*" if p.star else "")
        out.append(star + (p.name or "") + ("=…" if p.default is not None else ""))
    return ", ".join(out)


def _last_line(node):
    """The last line a statement covers (its nested blocks included)."""
    last = node.line
    for part in ("body", "orelse", "handler", "final"):
        inner = getattr(node, part, None)
        if isinstance(inner, list) and inner:
            last = max(last, _last_line(inner[-1]))
    return last


_WORD = re.compile(r"[^\W\d]\w*$")


def word_at(lines, line, col):
    """(qualifier, word) at a 0-based (line, col): `h.f|oo` is ("h", "foo"); the qualifier is None
    without a dot before the word. The word is what stands around the cursor."""
    if not 0 <= line < len(lines):
        return None, ""
    text = lines[line]
    start = col
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = col
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    word = text[start:end]
    qualifier = None
    if start > 0 and text[start - 1] == ".":
        m = _WORD.search(text[:start - 1])
        qualifier = m.group(0) if m else ""
    return qualifier, word


def prefix_at(lines, line, col):
    """(qualifier, the part of the word before the cursor) at a 0-based (line, col)."""
    qualifier, _ = word_at(lines, line, col)
    text = lines[line][:col] if 0 <= line < len(lines) else ""
    m = re.search(r"\w*$", text)
    return qualifier, m.group(0) if m else ""
