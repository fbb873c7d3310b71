"""The Apsi syntax tree -> a Python `ast.Module`, then a code object.

Apsi runs as compiled Python bytecode: loops run at CPython speed and Python's line tables point
runtime errors at Apsi lines (the code object's filename is the Apsi file). Helpers the generated
code calls live in the program's globals under names starting with '_', which Apsi source can't write.
"""

import ast
import builtins

from . import sandbox
from . import syntax as S
from .builtins import BUILTINS
from .errors import ApsiSyntaxError
from .names import apsi_name, py_name  # noqa: F401  (apsi_name: compiler's name, as before)
from .numpy_names import NUMPY_SPELLINGS
from .parser import PYTHON_MODULES
from .plain import is_plain, plain_names
from .scopes import Scope, assigned_in_nested, binds, bound_anywhere, declarations, field_reads, loop_targets

BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv, "%": ast.Mod,
          "**": ast.Pow, "@": ast.MatMult, "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor,
          "<<": ast.LShift, ">>": ast.RShift}
UNOPS = {"-": ast.USub, "+": ast.UAdd, "~": ast.Invert, "not": ast.Not}
PY_BUILTINS = frozenset(dir(builtins))      # what frames see underneath with permission 'python'
MAX_DEPTH = 200      # nested expressions/statements; deeper ASTs overflow CPython's compiler
CMPOPS = {"==": ast.Eq, "!=": ast.NotEq, "<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE,
          "in": ast.In, "not in": ast.NotIn, "is": ast.Is, "is not": ast.IsNot}


# Names from Python (and other languages) that Apsi spells differently
PYTHON_SPELLINGS = {
    "True": "Apsi writes 'true'", "False": "Apsi writes 'false'", "None": "Apsi writes 'none'",
    "null": "Apsi writes 'none'", "nil": "Apsi writes 'none'", "self": "Apsi has no classes or self: "
    "pass the record to the function", "dict": "a map is written {:} or {\"key\": value}",
    "isinstance": "compare type(x) with a name, like type(x) == \"int\"",
    # Python modules and builtins a newcomer reaches for, and the Apsi builtin that does the job
    **PYTHON_MODULES,
    **NUMPY_SPELLINGS,          # NumPy/PyTorch names and Apsi's spelling (issue 19)
    "open": "files are read and written whole: read_text(path), write_text(path, text), append_text",
    "getattr": "a record's field by a computed name: get(r, name, default)",
    "hasattr": "has(r, name) asks whether a record has a field",
    "setattr": "records have fixed fields: make a new one with {...r, name: value}, or use a map",
    "frozenset": "a set is made with set(xs)",
    "bin": "an f-string formats an int in binary: f\"{n:b}\"",
    "hex": "an f-string formats an int in hex: f\"{n:x}\"",
    "oct": "an f-string formats an int in octal: f\"{n:o}\"",
}


def _module_with(name):
    """The installed module whose documentation has `name` (`fit` -> layers, `figure` -> plot), for a
    program that calls it before its `use` line; read from the docs' tables, so no module loads."""
    from .doc_source import lookup

    return next((entry.module for entry in lookup(name) if entry.module), None)


class Compiler:
    def __init__(self, filename, lines, fixed_names, user_names, load_module, echo=False,
                 full_access=False):
        self.filename = filename
        self.lines = lines
        self.known = set(fixed_names)      # builtins and module exports: readable, not assignable
        self.user = set(user_names)        # globals from earlier REPL inputs: assignable
        self.load_module = load_module     # name -> iterable of exported names
        self.echo = echo
        self.full_access = full_access
        self.scope = None
        self.fast = frozenset()     # names whose field reads compile plain (the root's test holds)
        self.hoisted = False        # inside a loop whose type tests were made once, before it
        self.in_comp = 0            # inside a comprehension: no `:=` temporaries there
        self.attr_sets = set()      # global names of the type sets the code tests (sandbox.set_name)
        self.module_names = set()          # names `use` brought in (they may shadow builtins)
        self.tmp = 0
        self.depth = 0

    def fail(self, message, node):
        text = self.lines[node.line - 1] if 0 < node.line <= len(self.lines) else None
        raise ApsiSyntaxError(message, self.filename, node.line, node.col, text)

    def at(self, py, node):
        py.lineno = py.end_lineno = node.line
        py.col_offset = node.col - 1
        py.end_col_offset = node.col
        return py

    # ---- program ----
    def module(self, body):
        for stmt in body:       # `use` first: its names count as declared everywhere below
            if isinstance(stmt, S.Use):
                exports = set(self.load_module(stmt.name, stmt))
                if stmt.alias is None:       # `use m as h` brings in only h (declared by scopes)
                    self.known |= exports
                    self.module_names |= exports
        self.own = declarations(body) | self.user
        # REPL and -e inputs share globals with later inputs: their top-level names are never plain,
        # and never on the record fast path (a later input may rebind them)
        candidates = set() if self.echo else (self.own - self.user - self.known)
        untracked = assigned_in_nested(body) | (self.own - candidates)
        while True:
            self.scope = Scope(None, self.own | self.known, is_module=True, rebound_inside=untracked)
            self.scope.plain = plain_names(body, candidates, self.apsi_builtin)
            if self.echo:
                out = [self.at(ast.Expr(self.helper("_echo", [self.expr(stmt.expr)], stmt)), stmt)
                       if isinstance(stmt, S.ExprStmt) else py for stmt in body for py in self.stmt(stmt)]
                break
            self.add_flags(body, body[0] if body else None)
            out = self.block(body)
            missed = _untracked_bindings(out, self.scope)     # the same safety net as in functions
            if not missed:
                break
            untracked |= missed
        return ast.fix_missing_locations(ast.Module(body=out, type_ignores=[]))

    def add_flags(self, body, node):
        """Give each variable of this scope whose fields the code reads a flag (see flag_updates)."""
        if self.full_access:
            return
        # a loop variable is rebound on every iteration: a flag update there costs more than the type
        # test at the read (`root`) that it would save
        per_iteration = loop_targets(body)
        for name, fields in field_reads(body)[0].items():
            if (name in self.scope.declared and name not in self.scope.rebound_inside
                    and name not in per_iteration):
                self.scope.flags[name] = (f"_ok_{py_name(name)}", self.attr_set(fields, node).id)

    def block(self, body, bound=()):
        """A block's statements; `bound`: names bound on entry (loop targets, a catch name)."""
        saved = set(self.scope.bound)
        self.scope.bound |= set(bound)
        out = self.flag_updates(bound, body[0]) if body else []
        try:
            for stmt in body:
                out.extend(self.stmt(stmt))
                self.scope.bound |= binds(stmt)
                if isinstance(stmt, S.AugAssign) and isinstance(stmt.target, S.Name):
                    out.extend(self.flag_updates([stmt.target.id], stmt))
                else:
                    out.extend(self.flag_updates(binds(stmt), stmt))
        finally:
            self.scope.bound = saved     # what a block binds may not have run after it
        return out or [ast.Pass()]

    def flag_updates(self, names, node, count=True):
        """After a variable x of this scope is bound, `_ok_x = x if type(x) in TYPES else _NO` (the
        types allowing every field the code reads on x): the flag holds the very value it checked.
        A field read then tests `_ok_x is x` (see `root`), which a failed, partial or interrupted
        binding can never make wrong: a flag left from an earlier value is simply not that value."""
        out = []
        for name in names:
            if name in self.scope.flags:
                flag, types = self.scope.flags[name]
                load = lambda n: self.at(ast.Name(n, ast.Load()), node)  # noqa: E731
                # type(x) is Record or type(x) in TYPES: records, the common case, skip the set
                kind = self.at(ast.NamedExpr(self.at(ast.Name(flag, ast.Store()), node),
                                             self.helper("_type", [load(py_name(name))], node)), node)
                is_record = self.at(ast.Compare(kind, [ast.Is()], [load("_R")]), node)
                in_types = self.at(ast.Compare(load(flag), [ast.In()], [load(types)]), node)
                test = self.at(ast.BoolOp(ast.Or(), [is_record, in_types]), node)
                value = self.at(ast.IfExp(test, load(py_name(name)), load("_NO")), node)
                out.append(self.at(ast.Assign([self.at(ast.Name(flag, ast.Store()), node)], value), node))
                self.scope.flag_sites[name] = self.scope.flag_sites.get(name, 0) + count
        return out

    def helper(self, name, args, node, keywords=()):
        return self.at(ast.Call(self.at(ast.Name(name, ast.Load()), node), list(args), list(keywords)), node)

    # ---- statements ----
    def stmt(self, s):
        method = getattr(self, "s_" + type(s).__name__)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                self.fail(f"this program is nested too deeply (more than {MAX_DEPTH} levels of blocks "
                          "and 'elif's): move the inner part into a function", s)
            result = method(s)
        finally:
            self.depth -= 1
        result = result if isinstance(result, list) else [result]
        for py in result:
            if not hasattr(py, "lineno"):
                self.at(py, s)
        return result

    def s_Use(self, s):
        if not self.scope.is_module:
            self.fail(f"'use {s.name}' must be at the top level of the program, not inside a function", s)
        if s.alias is not None:
            target = self.at(ast.Name(py_name(s.alias), ast.Store()), s)
            return ast.Assign([target], self.helper("_use_as", [ast.Constant(s.name)], s))
        return ast.Expr(self.helper("_use", [ast.Constant(s.name)], s))

    def s_Del(self, s):
        for t in s.targets:
            self.note_index(t)
        return ast.Delete([self.at(ast.Subscript(self.expr(t.obj), self.index(t.index), ast.Del()), t)
                           for t in s.targets])

    def pattern(self, p, node):
        """A destructuring pattern (see syntax.Let) -> a Python store target."""
        if isinstance(p, str):
            return self.at(ast.Name(py_name(p), ast.Store()), node)
        if isinstance(p, tuple):
            return self.at(ast.Starred(self.pattern(p[1], node), ast.Store()), node)
        return self.at(ast.Tuple([self.pattern(x, node) for x in p], ast.Store()), node)

    def s_Let(self, s):
        if s.pattern is not None:
            return ast.Assign([self.pattern(s.pattern, s)], self.expr(s.value))
        target = self.store_names(s.targets, s)
        return ast.Assign([target], self.root(s.value))

    def store_names(self, names, node):
        if len(names) == 1:
            return self.at(ast.Name(py_name(names[0]), ast.Store()), node)
        elts = [self.at(ast.Name(py_name(n), ast.Store()), node) for n in names]
        return self.at(ast.Tuple(elts, ast.Store()), node)

    def s_Assign(self, s):
        value = self.root(s.value)
        # stores on anything but a record need 'python': without it, a field store is checked at run time
        if len(s.targets) == 1 and isinstance(s.targets[0], S.Attr) and not self.full_access:
            t = s.targets[0]
            return ast.Expr(self.helper("_sa", [self.expr(t.obj), ast.Constant(t.name), value], s))
        targets = [self.target(t) for t in s.targets]
        target = targets[0] if len(targets) == 1 else self.at(ast.Tuple(targets, ast.Store()), s)
        return ast.Assign([target], value)

    def target(self, t):
        if isinstance(t, S.Name):
            self.resolve_store(t)
            return self.at(ast.Name(py_name(t.id), ast.Store()), t)
        if isinstance(t, S.Index):
            self.note_index(t)
            return self.at(ast.Subscript(self.expr(t.obj), self.index(t.index), ast.Store()), t)
        if isinstance(t, S.Attr):
            if not self.full_access:
                self.fail("assigning a field inside a multiple assignment is not supported: "
                          "assign it on its own line", t)
            return self.at(ast.Attribute(self.expr(t.obj), t.name, ast.Store()), t)
        self.fail("cannot assign to this", t)

    def resolve_store(self, name_node):
        name, scope = name_node.id, self.scope
        owner = scope.owner_of(name)
        if owner is None or (owner.is_module and name not in self.own):
            if name in self.known:
                self.fail(f"cannot assign to '{name}': it is a builtin or comes from a module; "
                          f"declare your own with 'let {name} = …'", name_node)
            self.fail(f"cannot assign to '{name}': it was never declared; declare it first with "
                      f"'let {name} = …'{self.suggest(name)}", name_node)
        if owner is scope:
            return
        if owner.is_module:
            scope.globals.add(py_name(name))
        else:
            scope.nonlocals.add(py_name(name))

    def s_AugAssign(self, s):
        op = BINOPS[s.op]()
        t = s.target
        if isinstance(t, S.Attr) and not self.full_access:
            return ast.Expr(self.helper("_augattr", [self.expr(t.obj), ast.Constant(t.name),
                                                     ast.Constant(s.op), self.root(s.value)], s))
        if s.op == "%":     # see e_Binary
            if not isinstance(t, S.Name):
                self.fail("'%=' works on a variable; write the target out: x[i] = x[i] % y", s)
            load = self.expr(t)
            return ast.Assign([self.target(t)], self.helper("_mod", [load, self.root(s.value)], s))
        return ast.AugAssign(self.target(t), op, self.root(s.value))

    def s_ExprStmt(self, s):
        return ast.Expr(self.root(s.expr))

    def s_FnDef(self, s):
        args = self.arguments(s.params)
        saved = self.fast, self.hoisted
        self.fast, self.hoisted = frozenset(), False        # a function's names are its own
        try:
            body = self.function_body(s.params, s.body, s)
        finally:
            self.fast, self.hoisted = saved
        return ast.FunctionDef(py_name(s.name), args, body, [], None, None)

    def function_body(self, params, body, node):
        outer = self.scope
        names = {p.name for p in params if p.name}
        untracked = set()
        while True:
            self.scope = Scope(outer, declarations(body) | names, bound=names,
                               rebound_inside=assigned_in_nested(body) | untracked)
            self.scope.plain = plain_names(body, declarations(body) - names, self.apsi_builtin)
            self.add_flags(body, node)
            try:
                out = self.flag_updates(names, node, count=False) + self.block(body)
                # safety net for the fast path: a flagged variable bound somewhere without its flag
                # update (a binding form the compiler does not track) loses its flag; compile again
                missed = _untracked_bindings(out, self.scope)
                if not missed:
                    break
                untracked |= missed
            except BaseException:
                self.scope = outer
                raise
        try:
            head = []
            if self.scope.nonlocals:
                head.append(self.at(ast.Nonlocal(sorted(self.scope.nonlocals)), node))
            if self.scope.globals:
                head.append(self.at(ast.Global(sorted(self.scope.globals)), node))
            return head + out
        finally:
            self.scope = outer

    def arguments(self, params):
        args, kwonly, kw_defaults, defaults, vararg, kwarg, bare = [], [], [], [], None, None, False
        for p in params:
            if p.name is None:          # a bare '*': keyword-only parameters follow
                bare = True
                continue
            a = self.at(ast.arg(py_name(p.name)), p)
            if p.star == "**":
                kwarg = a
            elif p.star:
                if vararg is not None:
                    self.fail("only one '*' parameter is allowed", p)
                vararg = a
            elif vararg is not None or bare:
                kwonly.append(a)
                kw_defaults.append(self.expr(p.default) if p.default else None)
            else:
                args.append(a)
                if p.default is not None:
                    defaults.append(self.expr(p.default))
        return ast.arguments([], args, vararg, kwonly, kw_defaults, kwarg, defaults)

    def s_Return(self, s):
        if self.scope.is_module:
            self.fail("'return' outside a function", s)
        return ast.Return(self.root(s.value) if s.value is not None else None)

    def s_If(self, s):
        return ast.If(self.root(s.test), self.block(s.body), self.block(s.orelse) if s.orelse else [])

    def loop_body(self, body, bound=()):
        self.scope.loop_depth += 1
        try:
            return self.block(body, bound)
        finally:
            self.scope.loop_depth -= 1

    def s_For(self, s):
        def compile_loop():
            target = self.pattern(s.pattern, s) if s.pattern is not None else self.store_names(s.targets, s)
            return ast.For(target, self.root(s.iter), self.loop_body(s.body, s.targets),
                           self.block(s.orelse) if s.orelse else [], None)
        return self.hoisted_loop(s, compile_loop)

    def s_While(self, s):
        return self.hoisted_loop(s, lambda: ast.While(self.root(s.test), self.loop_body(s.body),
                                                      self.block(s.orelse) if s.orelse else []))

    def hoisted_loop(self, s, compile_loop):
        """An outermost loop reading fields of variables that nothing in it can rebind is compiled
        twice: `if <their type tests>: <loop with plain reads> else: <loop as usual>`. The tests are
        made once, before the loop: no statement of the loop binds those names (checked here), no
        nested function may (scopes.stable_local), so the values tested are the values read for
        the whole loop. Nested scopes inside never see these names as plain (they reset `fast`).
        Only outermost loops are hoisted, so the code grows at most twice."""
        if self.full_access or self.hoisted:
            return compile_loop()
        reads, _ = field_reads(s)
        rebound = bound_anywhere(s)
        names = {n: f for n, f in reads.items()
                 if self.scope.stable_local(n) and n not in rebound and n not in self.fast}
        if not names:
            return compile_loop()
        test = self.plain_test(names, s)
        saved = self.fast, self.hoisted
        self.hoisted = True
        try:
            self.fast = saved[0] | frozenset(names)
            fast = compile_loop()
            self.fast = saved[0]
            slow = compile_loop()
        finally:
            self.fast, self.hoisted = saved
        return ast.If(test, [self.at(fast, s)], [self.at(slow, s)])

    def s_Break(self, s):
        if not self.scope.loop_depth:
            self.fail("'break' outside a loop", s)
        return ast.Break()

    def s_Continue(self, s):
        if not self.scope.loop_depth:
            self.fail("'continue' outside a loop", s)
        return ast.Continue()

    def s_Pass(self, s):
        return ast.Pass()

    def s_Try(self, s):
        handlers = []
        if s.handler is not None:
            self.tmp += 1
            exc = f"_exc{self.tmp}"
            body = self.block(s.handler, [s.name] if s.name else [])
            if s.name:
                wrap = self.helper("_catch", [self.at(ast.Name(exc, ast.Load()), s)], s)
                body = [self.at(ast.Assign([self.at(ast.Name(py_name(s.name), ast.Store()), s)], wrap), s)]\
                    + body
            catchable = self.at(ast.Name("_Catchable", ast.Load()), s)
            handlers.append(self.at(ast.ExceptHandler(catchable, exc, body), s))
        final = self.block(s.final) if s.final is not None else []
        return ast.Try(self.block(s.body), handlers, [], final)

    def s_Assert(self, s):
        msg = [self.root(s.message)] if s.message is not None else []
        fail = self.at(ast.Raise(self.helper("_assert_fail", msg, s), None), s)
        test = self.at(ast.UnaryOp(ast.Not(), self.root(s.test)), s)
        return ast.If(test, [fail], [])

    # ---- expressions ----
    def root(self, e):
        """A whole expression (a statement's, a lambda's body, a comprehension's element). In a function,
        when it reads fields of local variables that are certainly bound and rebound by nothing else,
        it is compiled twice: `plain if type(p) in TYPES and … else guarded`, so record fields are
        read at CPython speed after one type test. Nested scopes are roots of their own, so an
        expression holding one is compiled once (the code never grows more than twice)."""
        if self.full_access:
            return self.expr(e)
        bases, nested = field_reads(e)
        stable = {n: fields for n, fields in bases.items()
                  if self.scope.stable_local(n) and n not in self.fast}
        if nested or not stable:
            return self.expr(e)
        test = self.plain_test(stable, e)
        saved, self.fast = self.fast, frozenset(stable)
        try:
            fast = self.expr(e)
        finally:
            self.fast = saved
        return self.at(ast.IfExp(test, fast, self.expr(e)), e)

    def plain_test(self, names, node):
        """The test under which fields of `names` ({name: fields read}) may be read plain: `_ok_x is x`
        for a flagged variable (see flag_updates), `type(x) in TYPES` for another."""
        def one(n, fields):
            load = self.at(ast.Name(py_name(n), ast.Load()), node)
            if n in self.scope.flags:
                flag = self.at(ast.Name(self.scope.flags[n][0], ast.Load()), node)
                return self.at(ast.Compare(flag, [ast.Is()], [load]), node)
            return self.at(ast.Compare(self.helper("_type", [load], node), [ast.In()],
                                       [self.attr_set(fields, node)]), node)
        tests = [one(n, fields) for n, fields in sorted(names.items())]
        return tests[0] if len(tests) == 1 else self.at(ast.BoolOp(ast.And(), tests), node)

    def attr_set(self, names, node):
        """A load of the global holding sandbox.types_allowing(names)."""
        name = sandbox.set_name(names)
        self.attr_sets.add(name)
        return self.at(ast.Name(name, ast.Load()), node)

    def expr(self, e):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                self.fail(f"this expression is nested too deeply (more than {MAX_DEPTH} levels): "
                          "split it into several statements with 'let'", e)
            return self.at(getattr(self, "e_" + type(e).__name__)(e), e)
        finally:
            self.depth -= 1

    def e_Const(self, e):
        return ast.Constant(e.value)

    def e_Name(self, e):
        owner = self.scope.owner_of(e.id)
        if owner is None:
            self.fail(f"undefined name '{e.id}'{self.suggest(e.id)}", e)
        if owner.is_module and (e.id in self.own and (e.id in self.known or e.id in PY_BUILTINS)
                                or self.full_access and e.id in self.module_names and e.id in PY_BUILTINS):
            # the program's own top-level name shadowing a builtin: before its `let` runs, a plain
            # read would find the builtin; this one says the name is not assigned yet. (The same for
            # a module's name that its file declares but never bound, where frames hold Python's
            # builtins underneath: with permission 'python'.)
            return self.helper("_gv", [ast.Constant(py_name(e.id))], e)
        return ast.Name(py_name(e.id), ast.Load())

    def suggest(self, name):
        import difflib

        if name in PYTHON_SPELLINGS:
            return f" ({PYTHON_SPELLINGS[name]})"
        module = _module_with(name)
        if module:
            return f" ('{name}' comes with 'use {module}': add it at the top)"
        close = difflib.get_close_matches(name, sorted(self.scope.all_names()), n=1)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def e_ListLit(self, e):
        return ast.List([self.expr(i) for i in e.items], ast.Load())

    def e_ListComp(self, e):
        # Python's rules: the first source is evaluated outside, the loop variables live inside.
        outer = self.scope
        self.in_comp += 1
        saved_fast = self.fast
        try:
            first_source = self.expr(e.clauses[0][1])
            self.fast = frozenset()             # the comprehension's names are its own
            self.scope = Scope(outer, set())
            generators = []
            for i, (names, source, conditions, pattern) in enumerate(e.clauses):
                source_py = first_source if i == 0 else self.expr(source)
                self.scope.declared |= set(names)
                self.scope.bound |= set(names)
                target = self.pattern(pattern, e) if pattern is not None else self.store_names(names, e)
                ifs = [self.root(c) for c in conditions]
                generators.append(ast.comprehension(target, source_py, ifs, 0))
            elt = self.root(e.elt)
        finally:
            self.scope = outer
            self.in_comp -= 1
            self.fast = saved_fast
        return ast.ListComp(elt, generators)

    def e_TupleLit(self, e):
        return ast.Tuple([self.expr(i) for i in e.items], ast.Load())

    def e_RecordLit(self, e):
        if None in e.keys:          # {...r, n: 2}: later fields win, as in JavaScript
            # a written field travels as (_FIELD, name, value): _FIELD is a marker Apsi cannot name,
            # so a spread value can never pass for a field (and smuggle in a name like __class__)
            marker = self.at(ast.Name("_FIELD", ast.Load()), e)
            parts = [self.expr(v) if k is None else
                     self.at(ast.Tuple([marker, ast.Constant(k), self.expr(v)], ast.Load()), v)
                     for k, v in zip(e.keys, e.values)]
            return self.helper("_Rspread", parts, e)
        kws = [ast.keyword(k, self.expr(v)) for k, v in zip(e.keys, e.values)]
        return ast.Call(self.at(ast.Name("_R", ast.Load()), e), [], kws)

    def e_MapLit(self, e):
        return ast.Dict([self.expr(k) for k in e.keys], [self.expr(v) for v in e.values])

    def e_FString(self, e):
        values = []
        for part in e.parts:
            if isinstance(part, str):
                values.append(ast.Constant(part))
            elif part.conv is not None:          # {x!r} / {x!s}: Apsi's repr or str text, then the spec
                shown = self.helper("_repr" if part.conv == "r" else "_show", [self.expr(part.expr)], e)
                spec = self.format_spec(part.spec) if part.spec else None
                values.append(ast.FormattedValue(shown, -1, spec))
            elif part.spec:                      # {true:>6} is '  true': see program._fmtv
                shown = self.shown(part.expr, plain=lambda x: x, helper="_fmtv")
                values.append(ast.FormattedValue(shown, -1, self.format_spec(part.spec)))
            else:
                shown = self.shown(part.expr, plain=lambda x: x)
                values.append(ast.FormattedValue(shown, -1, None))
        return ast.JoinedStr(values)

    def format_spec(self, spec):
        pieces = [spec] if isinstance(spec, str) else spec
        # a field inside the spec (`{x:>{w}}`) shows its value the Apsi way too: Python's text of
        # a function would land in the spec and in its error message ("<function f at 0x…>")
        return ast.JoinedStr([ast.Constant(x) if isinstance(x, str) else
                              ast.FormattedValue(self.shown(x.expr, plain=lambda v: v), -1, None)
                              for x in pieces])

    def e_Unary(self, e):
        return ast.UnaryOp(UNOPS[e.op](), self.expr(e.operand))

    def e_Binary(self, e):
        if e.op == "%" and not _numeric_const(e.right) and not _numeric_const(e.left):
            # `text % x` is Python's string formatting, whose %s/%r would show Python's text (and
            # memory addresses) for functions and other objects: a helper formats them Apsi's way
            return self.helper("_mod", [self.expr(e.left), self.expr(e.right)], e)
        return ast.BinOp(self.expr(e.left), BINOPS[e.op](), self.expr(e.right))

    def e_Logic(self, e):
        op = ast.And() if e.op == "and" else ast.Or()
        return ast.BoolOp(op, [self.expr(v) for v in e.values])

    def e_Compare(self, e):
        for op, right in zip(e.ops, e.rights):
            literal = isinstance(right, S.Const) and type(right.value) in (bool, type(None))
            if op in ("is", "is not") and not literal:
                self.fail(f"'{op}' compares with none, true or false only: use "
                          f"{'==' if op == 'is' else '!='} to compare values", e)
        return ast.Compare(self.expr(e.left), [CMPOPS[o]() for o in e.ops], [self.expr(r) for r in e.rights])

    def e_IfExpr(self, e):
        return ast.IfExp(self.expr(e.test), self.expr(e.body), self.expr(e.orelse))

    def shown(self, e, plain, helper="_show"):
        """Apsi's text for a value. A value known to be an int, float or str (apsi_lang.plain) is
        formatted by CPython directly; for another plain name, ints/floats/strs take CPython's own
        path after a type test (their Apsi text is Python's); only other types pay for `show`."""
        if self.plain(e):
            return plain(self.expr(e))
        if not isinstance(e, S.Name):
            return self.helper(helper, [self.expr(e)], e)
        test = self.at(ast.Compare(self.helper("_type", [self.expr(e)], e), [ast.In()],
                                   [self.at(ast.Name("_PLAIN", ast.Load()), e)]), e)
        return self.at(ast.IfExp(test, plain(self.expr(e)), self.helper(helper, [self.expr(e)], e)), e)

    def plain(self, e):
        return is_plain(e, self.name_is_plain, self.apsi_builtin)

    def name_is_plain(self, name):
        owner = self.scope.owner_of(name)
        return owner is not None and name in getattr(owner, "plain", ())

    def apsi_builtin(self, name):
        """True when `name` here is Apsi's own builtin (not the program's, not a module's)."""
        owner = self.scope.owner_of(name)
        return owner is not None and owner.is_module and name in BUILTINS and name not in self.own \
            and name not in self.module_names

    def is_builtin(self, e, name):
        if not (isinstance(e, S.Name) and e.id == name):
            return False
        owner = self.scope.owner_of(name)
        return owner is not None and owner.is_module and name not in self.own

    def e_Call(self, e):
        if self.is_builtin(e.func, "help") and len(e.args) == 1 and not e.kwargs \
                and isinstance(e.args[0], S.Name) and self.scope.owner_of(e.args[0].id) is None:
            return ast.Call(self.expr(e.func), [ast.Constant(e.args[0].id)], [])   # help(nn): the name
        if self.is_builtin(e.func, "str") and len(e.args) == 1 and not e.kwargs \
                and (isinstance(e.args[0], S.Name) or self.plain(e.args[0])):
            return self.shown(e.args[0], plain=lambda x: self.helper("_pystr", [x], e))
        args = [self.at(ast.Starred(self.expr(a.value), ast.Load()), a) if isinstance(a, S.Splat)
                else self.expr(a) for a in e.args]
        # an Apsi parameter named like a Python keyword (`from`) is compiled as py_name's spelling
        # f(**m): the map's keys are checked as the parser checks written keyword names
        kws = [ast.keyword(py_name(k), self.expr(v)) if k is not None else
               ast.keyword(None, self.helper("_kwargs", [self.expr(v)], v)) for k, v in e.kwargs]
        return ast.Call(self.expr(e.func), args, kws)

    def e_Attr(self, e):
        if self.full_access or (isinstance(e.obj, S.Name) and e.obj.id in self.fast):
            return ast.Attribute(self.expr(e.obj), e.name, ast.Load())
        # (obj if type(obj) in TYPES else _chk(obj, name, TYPES)).name: see apsi_lang.sandbox
        types = self.attr_set({e.name}, e)
        if isinstance(e.obj, S.Name):
            first = self.expr(e.obj)
            again = lambda: self.expr(e.obj)  # noqa: E731
        elif not self.in_comp:
            tmp = self.at(ast.Name("_t", ast.Store()), e)
            first = self.at(ast.NamedExpr(tmp, self.expr(e.obj)), e)
            again = lambda: self.at(ast.Name("_t", ast.Load()), e)  # noqa: E731
        else:   # `:=` is not allowed in a comprehension's iterables: check with a call
            obj = self.helper("_chk", [self.expr(e.obj), ast.Constant(e.name), types], e)
            return ast.Attribute(obj, e.name, ast.Load())
        test = self.at(ast.Compare(self.helper("_type", [first], e), [ast.In()], [types]), e)
        slow = self.helper("_chk", [again(), ast.Constant(e.name), types], e)
        obj = self.at(ast.IfExp(test, again(), slow), e)
        return ast.Attribute(obj, e.name, ast.Load())

    def note_index(self, e):
        spec = _operand(e.obj), _operand(e.index)
        if None not in spec:        # an IndexError here can name the index and the length
            from .report import INDEXES

            INDEXES[(self.filename, e.line, e.col)] = spec

    def e_Index(self, e):
        self.note_index(e)
        return ast.Subscript(self.expr(e.obj), self.index(e.index), ast.Load())

    def index(self, i):
        if isinstance(i, S.TupleLit):
            return self.at(ast.Tuple([self.index(x) for x in i.items], ast.Load()), i)
        return self.expr(i)

    def e_Slice(self, e):
        part = lambda x: self.expr(x) if x is not None else None
        return ast.Slice(part(e.lo), part(e.hi), part(e.step))

    def e_Lambda(self, e):
        args = self.arguments(e.params)
        outer = self.scope
        names = {p.name for p in e.params if p.name}
        self.scope = Scope(outer, names, bound=names)
        saved_comp, self.in_comp = self.in_comp, 0     # a lambda's `:=` binds in the lambda
        saved_fast, self.fast = self.fast, frozenset()   # its names are its own (see hoisted_loop)
        try:
            body = self.root(e.body)
        finally:
            self.scope = outer
            self.in_comp = saved_comp
            self.fast = saved_fast
        return ast.Lambda(args, body)

    def e_Splat(self, e):
        self.fail("'*' spreads a list only inside a call's arguments: f(*xs)", e)


def _operand(e, depth=0):
    """How to read an operand again after an error, when reading it has no side effect:
    ("name", python name), ("const", value), ("index", obj, index), ("field", obj, name),
    ("len", x), ("binary", op, left, right) for + - * // %, ("neg", x); None for anything else
    (report.index_message evaluates these on plain values only)."""
    if depth > 8:
        return None
    sub = lambda x: _operand(x, depth + 1)
    if isinstance(e, S.Name):
        return ("name", py_name(e.id))
    if isinstance(e, S.Const) and type(e.value) in (int, str):
        return ("const", e.value)
    parts = None
    if isinstance(e, S.Unary) and e.op == "-":
        parts = ("neg", sub(e.operand))
    elif isinstance(e, S.Index) and not isinstance(e.index, S.Slice | S.TupleLit):
        parts = ("index", sub(e.obj), sub(e.index))
    elif isinstance(e, S.Attr):
        parts = ("field", sub(e.obj), e.name)
    elif isinstance(e, S.Binary) and e.op in ("+", "-", "*", "//", "%"):
        parts = ("binary", e.op, sub(e.left), sub(e.right))
    elif isinstance(e, S.Call) and isinstance(e.func, S.Name) and e.func.id == "len" \
            and len(e.args) == 1 and not e.kwargs and not isinstance(e.args[0], S.Splat):
        parts = ("len", sub(e.args[0]))
    return None if parts is None or None in parts else parts


_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _numeric_const(e):
    return isinstance(e, S.Const) and type(e.value) in (int, float)


def _untracked_bindings(statements, scope):
    """Flagged variables of `scope` whose bindings in the generated code outnumber their flag updates,
    or that a nested function declares nonlocal (it may rebind them)."""
    stores = {}
    stack = list(statements)
    while stack:
        x = stack.pop()
        if isinstance(x, ast.FunctionDef):
            stores[x.name] = stores.get(x.name, 0) + 1
            for inner in ast.walk(x):
                if isinstance(inner, ast.Nonlocal):
                    for n in inner.names:
                        stores[n] = stores.get(n, 0) + 1000
            continue
        if isinstance(x, _SCOPES):
            continue
        if isinstance(x, ast.Name) and not isinstance(x.ctx, ast.Load):
            stores[x.id] = stores.get(x.id, 0) + 1
        stack.extend(ast.iter_child_nodes(x))
    return {name for name in scope.flags
            if stores.get(py_name(name), 0) != scope.flag_sites.get(name, 0)}


def compile_tree(body, filename, lines, fixed_names, user_names, load_module, echo=False,
                 full_access=False):
    """(code object, names of the attribute type sets the code reads from its globals)."""
    compiler = Compiler(filename, lines, fixed_names, user_names, load_module, echo, full_access)
    module = compiler.module(body)
    try:
        import warnings

        with warnings.catch_warnings():     # CPython's SyntaxWarnings ("is" with a literal) are not Apsi's
            warnings.simplefilter("ignore", SyntaxWarning)
            code = compile(module, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise _cpython_limit(e, filename, lines) from None
    return code, compiler.attr_sets


def _cpython_limit(e, filename, lines):
    """CPython's own limits (e.g. more than 20 nested loops/try blocks) as an Apsi syntax error."""
    line = getattr(e, "lineno", None) or 1
    text = lines[line - 1] if 0 < line <= len(lines) else None
    reason = getattr(e, "msg", None) or str(e) or type(e).__name__
    if "statically nested blocks" in reason:
        reason = "more than 20 loops and 'try' blocks are nested here"
    hint = ": move the inner part into a function" if "nested" in reason else ""
    return ApsiSyntaxError(f"cannot compile this program: {reason}{hint}", filename, line,
                           (getattr(e, "offset", None) or 1), text)
