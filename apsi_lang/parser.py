"""Tokens -> the Apsi syntax tree (apsi_lang.syntax), by recursive descent.

Precedence, loosest first: lambda, `a if c else b`, or, and, not, comparisons (chained, in, not in),
|, ^, &, << >>, + -, * / // % @, unary - + ~, **, then calls, indexing and attributes.
"""

from . import syntax as S
from .errors import ApsiSyntaxError
from .lexer import Lexer

# Python words a newcomer types first, and what Apsi says instead. A hint is added to a syntax error
# right after such a word (`def f`, `import x`, `lambda x:` are never valid Apsi).
PYTHON_WORDS = {
    "def": "Apsi defines functions with 'fn': fn name(a, b):",
    "class": "Apsi has no classes: keep data in a record {name: value, …} or a map and write "
             "functions that take it",
    "import": "Apsi loads modules with 'use NAME'; a Python module: pyimport(\"name\") with --allow-python",
    "from": "Apsi loads modules with 'use NAME'; a Python module: pyimport(\"name\") with --allow-python",
    "raise": "Apsi raises an error with error(\"message\")",
    "except": "Apsi catches errors with 'catch e:' after a 'try:' block",
    "lambda": "Apsi writes an unnamed function as fn(x) => x * 2",
    "with": "Apsi has no 'with' blocks: read_text and write_text open and close the file themselves",
    "global": "Apsi needs no 'global': a function may assign a variable of the program directly",
    "nonlocal": "Apsi needs no 'nonlocal': a function may assign a variable of the enclosing one directly",
    "yield": "Apsi has no generators: build a list and return it",
    "async": "Apsi has no async functions",
    "await": "Apsi has no async functions",
    "print": "print is a function in Apsi: print(x)",
    "exec": "Apsi cannot run text as code",
    "match": "Apsi has no 'match' statement: use if/elif/else",
}
# Python modules a newcomer imports first, and where Apsi has what they give
PYTHON_MODULES = {
    "math": "the math functions are builtins: sqrt(x), floor(x), pi, …, with no 'math.'",
    "os": "the file functions are builtins: exists, list_dir, make_dir, delete, getenv",
    "sys": "the command-line arguments are the list 'args'; exit(code) stops the program",
    "json": "read_json(path) and write_json(path, value) are builtins",
    "csv": "read_csv(path) is a builtin (with 'use nn', load_csv gives a tensor)",
    "random": "random numbers come with 'use nn': rand(n), randn(n), randint(lo, hi, n), permutation(n)",
    "numpy": "Apsi's tensors come with 'use nn' (array, zeros, matmul with @, grad); the Python module "
             "itself: pyimport(\"numpy\") with --allow-python",
    "np": "Apsi's tensors come with 'use nn' (array, zeros, matmul with @, grad)",
    "torch": "PyTorch is a backend of 'use layers' (fit(…, backend=\"torch\") with --allow-python); the "
             "Python module itself: pyimport(\"torch\") with --allow-python",
    "scipy": "'use nn' has SciPy's common functions (solve, expm, lu, …); the Python module itself: "
             "pyimport(\"scipy\") with --allow-python",
    "matplotlib": "plots come with 'use plot' (figure, line, scatter, hist, save)",
    "plt": "plots come with 'use plot' (figure, line, scatter, hist, save)",
}
NO_WALRUS = "Apsi has no ':=': give the value a name with 'let' on the line before"
NO_CHAINED = "Apsi has no chained assignment (a = b = 1): assign each name on its own"
NO_COMPREHENSION = ("Apsi has no map or set comprehensions: build it in a for loop "
                    "(let m = {:} … m[k] = v), or make a list [… for …] and call set(…)")
COMPARE_OPS = {"==", "!=", "<", "<=", ">", ">="}
AUG_OPS = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", "<<=", ">>="}
BINARY_LEVELS = [("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "//", "%", "@")]


class Parser:
    def __init__(self, source, filename="<input>", tokens=None):
        """`tokens`: the source's tokens when the caller has them already (the editor's outline)."""
        self.filename = filename
        self.lines = source.split("\n")
        self.toks = Lexer(source, filename).tokenize() if tokens is None else tokens
        self.i = 0

    # ---- token helpers ----
    @property
    def tok(self):
        return self.toks[self.i]

    def peek(self, k=1):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, kind, value=None):
        t = self.toks[self.i]
        return t.kind == kind and (value is None or t.value == value)

    def at_op(self, *ops):
        t = self.toks[self.i]
        return t.kind == "OP" and t.value in ops

    def at_kw(self, *words):
        t = self.toks[self.i]
        return t.kind == "KEYWORD" and t.value in words

    def advance(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect_op(self, op, context=""):
        if not self.at_op(op):
            self.fail(f"expected '{op}'{context}, found {describe(self.tok)}")
        return self.advance()

    def expect_kw(self, word, context=""):
        if not self.at_kw(word):
            self.fail(f"expected '{word}'{context}, found {describe(self.tok)}")
        return self.advance()

    def expect_name(self, what="a name"):
        t = self.tok
        if t.kind != "NAME":
            extra = f" ('{t.value}' is a keyword)" if t.kind == "KEYWORD" else ""
            self.fail(f"expected {what}, found {describe(t)}{extra}")
        self.check_name(t.value, t)
        return self.advance()

    def check_name(self, name, t):
        if name.startswith("_"):
            self.fail(f"names starting with '_' are reserved: '{name}' cannot be used in Apsi", t)

    def fail(self, message, t=None, incomplete=None):
        t = t or self.tok
        prev = self.toks[self.i - 1] if self.i > 0 and t is self.tok else None
        if prev is not None and prev.kind == "NAME" and prev.value in ("import", "from") \
                and t.kind == "NAME" and t.value in PYTHON_MODULES and prev.line == t.line:
            message += f" (Apsi has no 'import': {PYTHON_MODULES[t.value]})"
        elif prev is not None and prev.kind == "NAME" and prev.value in PYTHON_WORDS and prev.line == t.line:
            message += f" ({PYTHON_WORDS[prev.value]})"
        elif t.kind == "KEYWORD" and t.value == "if" and prev is not None and prev.value == "else":
            message += " (Apsi writes 'else if' as 'elif')"
        elif _walrus(prev, t) or _walrus(t, self.peek() if t is self.tok else None):
            message += f" ({NO_WALRUS})"
        elif prev is not None and self.i >= 2 and _glued(self.toks[self.i - 2], prev, ("++", "--")):
            message += f" (Apsi has no '{prev.value * 2}': write x {prev.value}= 1)"
        elif prev is not None and self.i >= 2 and _glued(self.toks[self.i - 2], prev, ("===", "!==")) \
                or _glued(prev, t, ("===", "!==")):
            message += " (Apsi compares with == and !=)"
        elif t.kind == "KEYWORD" and t.value == "for" and prev is not None and self._in_braces():
            message += f" ({NO_COMPREHENSION})"
        text = self.lines[t.line - 1] if 0 < t.line <= len(self.lines) else None
        err = ApsiSyntaxError(message, self.filename, t.line, t.col, text)
        err.incomplete = self.at_input_end() if incomplete is None else incomplete
        raise err

    def _in_braces(self):
        """The innermost open bracket before the current token is a '{' (a record or map literal)."""
        depth = 0
        for t in reversed(self.toks[:self.i]):
            if t.kind == "OP" and t.value in (")", "]", "}"):
                depth += 1
            elif t.kind == "OP" and t.value in ("(", "[", "{"):
                if depth == 0:
                    return t.value == "{"
                depth -= 1
        return False

    def at_input_end(self):
        """Only the end of the input is left: more lines could complete what failed (the REPL waits)."""
        rest = self.toks[self.i:]
        return rest[0].kind != "NEWLINE" and all(t.kind in ("NEWLINE", "DEDENT", "EOF") for t in rest)

    # ---- statements ----
    def parse_program(self):
        body = []
        while not self.at("EOF"):
            if self.at("NEWLINE"):
                self.advance()
                continue
            if self.at("INDENT"):
                self.fail("unexpected indent")
            body.extend(self.statement())
        return body

    def statement(self):
        t = self.tok
        if t.kind == "KEYWORD":
            compound = {"fn": self.fn_def, "if": self.if_stmt, "for": self.for_stmt,
                        "while": self.while_stmt, "try": self.try_stmt}
            if t.value in compound and not (t.value == "fn" and self.peek().value == "("):
                return [compound[t.value]()]
        stmts = [self.simple_statement()]
        while not self.at("NEWLINE") and not self.at("EOF") and not self.at("DEDENT"):
            self.fail(f"expected the end of the statement, found {describe(self.tok)}")
        if self.at("NEWLINE"):
            self.advance()
        return stmts

    def simple_statement(self):
        t = self.tok
        if t.kind == "KEYWORD":
            word = t.value
            if word == "let":
                return self.let_stmt()
            if word == "return":
                self.advance()
                value = None if self.at_end() else self.expr_or_tuple()
                return S.Return(t.line, t.col, value)
            if word in ("break", "continue", "pass"):
                self.advance()
                return {"break": S.Break, "continue": S.Continue, "pass": S.Pass}[word](t.line, t.col)
            if word == "assert":
                self.advance()
                test = self.expr()
                msg = None
                if self.at_op(","):
                    self.advance()
                    msg = self.expr()
                return S.Assert(t.line, t.col, test, msg)
            if word == "use":
                self.advance()
                name = self.expect_name("a module name after 'use'")
                alias = None
                if self.at("NAME", "as"):          # use helpers as h: the module's names as h.f
                    self.advance()
                    alias = self.expect_name("a name after 'as'").value
                return S.Use(t.line, t.col, name.value, alias)
            if word in ("elif", "else", "catch", "finally"):
                self.fail(f"'{word}' without a matching "
                          f"{'if' if word in ('elif', 'else') else 'try'} block above it")
        nxt = self.peek()
        if t.kind == "NAME" and t.value == "del" and nxt.kind == "NAME" and nxt.line == t.line:
            return self.del_stmt()
        expr = self.expr_or_tuple()
        if self.at_op("="):
            self.advance()
            targets = self.assign_targets(expr)
            value = self.expr_or_tuple()
            if self.at_op("="):
                self.fail(NO_CHAINED)
            return S.Assign(t.line, t.col, targets, value)
        if self.tok.kind == "OP" and self.tok.value in AUG_OPS:
            op = self.advance().value[:-1]
            self.assign_targets(expr, single=True)
            return S.AugAssign(t.line, t.col, expr, op, self.expr())
        return S.ExprStmt(t.line, t.col, expr)

    def at_end(self):
        return self.at("NEWLINE") or self.at("EOF") or self.at("DEDENT")

    def assign_targets(self, expr, single=False):
        items = expr.items if isinstance(expr, S.TupleLit) and not single else [expr]
        for item in items:
            if not isinstance(item, (S.Name, S.Attr, S.Index)):
                self.fail("cannot assign to this: only a name, a field (r.x) or an element (xs[i]) "
                          "can be assigned", _tok_at(item))
        return items

    def del_stmt(self):
        t = self.advance()
        targets = self.expr_or_tuple()
        items = targets.items if isinstance(targets, S.TupleLit) else [targets]
        for item in items:
            if not isinstance(item, S.Index) or isinstance(item.index, S.Slice):
                what = ("a variable stays declared: give it another value (x = none)"
                        if isinstance(item, S.Name) else
                        "record fields are fixed: make a new record, or use a map" if isinstance(item, S.Attr)
                        else "")
                self.fail("'del' removes one item of a list or map: del xs[i], del m[key]"
                          + (f"; {what}" if what else ""), _tok_at(item))
        return S.Del(t.line, t.col, items)

    def targets(self, first_what, next_what):
        """let/for targets: `a`, `a, b`, `a, *rest`, `i, (x, y)` -> (every name, pattern or None)."""
        names, pattern, flat = [], [], True
        while True:
            item = self.target_item(names, first_what if not pattern else next_what)
            flat = flat and isinstance(item, str)
            pattern.append(item)
            if not self.at_op(","):
                break
            self.advance()
            if self.at_op("=") or self.at_kw("in"):
                break
        if len(pattern) == 1 and isinstance(pattern[0], list):
            pattern, flat = pattern[0], False     # `for (a, b) in …` is `for a, b in …`
        stars = [p for p in pattern if isinstance(p, tuple)]
        if len(stars) > 1:
            self.fail("only one '*name' may take the rest in a destructuring")
        seen = set()
        for n in names:
            if n in seen:
                self.fail(f"'{n}' appears twice in this destructuring")
            seen.add(n)
        return names, (None if flat else pattern)

    def target_item(self, names, what):
        if self.at_op("*"):
            self.advance()
            name = self.expect_name("a name after '*'").value
            names.append(name)
            return ("*", name)
        if self.at_op("("):
            self.advance()
            inner, comma = [], False
            while True:
                inner.append(self.target_item(names, "a name"))
                if not self.at_op(","):
                    break
                self.advance()
                comma = True
                if self.at_op(")"):
                    break
            self.expect_op(")", " to close the nested names")
            if not comma and not isinstance(inner[0], tuple):
                return inner[0]                   # `(x)` is `x`, as in Python; `(x,)` unpacks one
            if len([p for p in inner if isinstance(p, tuple)]) > 1:
                self.fail("only one '*name' may take the rest in a destructuring")
            return inner
        name = self.expect_name(what).value
        names.append(name)
        return name

    def let_stmt(self):
        t = self.advance()
        names, pattern = self.targets("a name after 'let'", "a name")
        if not self.at_op("="):
            self.fail(f"expected '=' after 'let {', '.join(names)}': a variable needs a value "
                      "(use 'let x = none' for an empty one)")
        self.advance()
        value = self.expr_or_tuple()
        if self.at_op("="):
            self.fail(NO_CHAINED)
        return S.Let(t.line, t.col, names, value, pattern)

    def block(self, what):
        """After ':' — an indented block, or simple statements on the same line."""
        colon = self.tok
        self.expect_op(":", f" at the end of the {what} line")
        if not self.at("NEWLINE"):
            stmts = [self.simple_statement()]
            # `if x: a; b` puts both in the block, as in Python
            while self.at("NEWLINE", ";") and self.peek().line == self.tok.line \
                    and self.peek().kind not in ("NEWLINE", "EOF", "DEDENT", "INDENT"):
                self.advance()
                stmts.append(self.simple_statement())
            if self.at("NEWLINE"):
                self.advance()
            elif not self.at("EOF") and not self.at("DEDENT"):
                self.fail(f"expected the end of the statement, found {describe(self.tok)}")
            return stmts
        self.advance()
        if self.at("EOF"):
            # the file ends after the ':' line: show that line, not the empty one after it
            self.fail(f"expected an indented block after the {what} line, but the input ends there",
                      colon, incomplete=self.at_input_end())
        if not self.at("INDENT"):
            self.fail(f"expected an indented block after the {what} line")
        self.advance()
        body = []
        while not self.at("DEDENT") and not self.at("EOF"):
            body.extend(self.statement())
        if self.at("DEDENT"):
            self.advance()
        return body

    def fn_def(self):
        t = self.advance()
        name = self.expect_name("a function name after 'fn'").value
        params = self.params()
        if self.at_op("=>"):
            self.fail("'=>' is for unnamed functions: write 'fn name(a):' with a block, "
                      "or 'let name = fn(a) => …'")
        return S.FnDef(t.line, t.col, name, params, self.block(f"'fn {name}'"))

    def params(self):
        self.expect_op("(", " after the function name")
        params, seen = [], set()
        while not self.at_op(")"):
            star = False
            if params and params[-1].star == "**":
                self.fail("'**name' must be the last parameter")
            if self.at_op("**"):
                self.advance()
                star = "**"
            elif self.at_op("*"):
                st = self.advance()
                star = True
                if self.at_op(",", ")"):       # a bare *: the parameters after it are keyword-only
                    if any(p.star for p in params):
                        self.fail("only one '*' may come before keyword-only parameters", st)
                    if self.at_op(")"):
                        self.fail("a bare '*' must be followed by keyword-only parameters", st)
                    params.append(S.Param(st.line, st.col, None, None, True))
                    self.advance()
                    continue
            pt = self.expect_name("a parameter name")
            if pt.value in seen:
                self.fail(f"parameter '{pt.value}' appears twice", pt)
            seen.add(pt.value)
            default = None
            kw_only = any(p.star is True for p in params)
            if self.at_op("=") and not star:
                self.advance()
                default = self.expr()
            elif params and params[-1].default is not None and not star and not kw_only:
                self.fail(f"parameter '{pt.value}' needs a default value because the one before it has one",
                          pt)
            params.append(S.Param(pt.line, pt.col, pt.value, default, star))
            if not self.at_op(")"):
                self.expect_op(",", " between parameters")
        self.advance()
        return params

    def if_stmt(self):
        t = self.advance()
        test = self.expr()
        body = self.block("'if'")
        orelse = []
        if self.at_kw("elif"):
            orelse = [self.if_stmt()]
        elif self.at_kw("else"):
            self.advance()
            orelse = self.block("'else'")
        return S.If(t.line, t.col, test, body, orelse)

    def for_stmt(self):
        t = self.advance()
        names, pattern = self.targets("a loop variable after 'for'", "a loop variable")
        self.expect_kw("in", " after the loop variable")
        it = self.expr_or_tuple()
        body = self.block("'for'")
        return S.For(t.line, t.col, names, it, body, self.loop_else(), pattern)

    def while_stmt(self):
        t = self.advance()
        test = self.expr()
        body = self.block("'while'")
        return S.While(t.line, t.col, test, body, self.loop_else())

    def loop_else(self):
        """`else:` after a loop runs when the loop ends without 'break' (as in Python)."""
        if not self.at_kw("else"):
            return ()
        self.advance()
        return self.block("'else'")

    def try_stmt(self):
        t = self.advance()
        body = self.block("'try'")
        name = handler = final = None
        if self.at_kw("catch"):
            self.advance()
            if not self.at_op(":"):
                name = self.expect_name("a name after 'catch' (or ':' alone)").value
            handler = self.block("'catch'")
        if self.at_kw("finally"):
            self.advance()
            final = self.block("'finally'")
        if handler is None and final is None:
            if self.at("NAME", "except"):
                self.fail(f"'except' is not Apsi: {PYTHON_WORDS['except']}")
            self.fail("'try' needs a 'catch e:' or a 'finally:' block after it", t,
                      incomplete=self.at_input_end())
        return S.Try(t.line, t.col, body, name, handler, final)

    # ---- expressions ----
    def expr_or_tuple(self):
        t = self.tok
        first = self.expr()
        if not self.at_op(","):
            return first
        items = [first]
        while self.at_op(","):
            self.advance()
            if self.at_end() or self.at_op("=", ":", ")", "]", "}"):
                break
            items.append(self.expr())
        return S.TupleLit(t.line, t.col, items)

    def expr(self):
        t = self.tok
        if self.at_kw("fn") and self.peek().kind == "OP" and self.peek().value == "(":
            self.advance()
            params = self.params()
            if not self.at_op("=>"):
                self.fail("expected '=>' after the parameters of an unnamed function: fn(x) => x * 2")
            self.advance()
            return S.Lambda(t.line, t.col, params, self.expr())
        body = self.or_expr()
        if self.at_kw("if"):
            self.advance()
            test = self.or_expr()
            self.expect_kw("else", " in 'a if condition else b'")
            return S.IfExpr(t.line, t.col, test, body, self.expr())
        return body

    def or_expr(self):
        return self.logic("or", self.and_expr)

    def and_expr(self):
        return self.logic("and", self.not_expr)

    def logic(self, word, sub):
        t = self.tok
        first = sub()
        if not self.at_kw(word):
            return first
        values = [first]
        while self.at_kw(word):
            self.advance()
            values.append(sub())
        return S.Logic(t.line, t.col, word, values)

    def not_expr(self):
        if self.at_kw("not"):
            t = self.advance()
            return S.Unary(t.line, t.col, "not", self.not_expr())
        return self.comparison()

    def comparison(self):
        t = self.tok
        left = self.binary(0)
        ops, rights = [], []
        while True:
            if self.tok.kind == "OP" and self.tok.value in COMPARE_OPS:
                ops.append(self.advance().value)
            elif self.at_kw("in"):
                self.advance()
                ops.append("in")
            elif self.at_kw("not") and self.peek().kind == "KEYWORD" and self.peek().value == "in":
                self.advance()
                self.advance()
                ops.append("not in")
            elif self.at("NAME", "is"):        # `x is none`, `x is not none`
                self.advance()
                if self.at_kw("not"):
                    self.advance()
                    ops.append("is not")
                else:
                    ops.append("is")
            else:
                break
            rights.append(self.binary(0))
        return S.Compare(t.line, t.col, left, ops, rights) if ops else left

    def binary(self, level):
        if level == len(BINARY_LEVELS):
            return self.unary()
        t = self.tok
        left = self.binary(level + 1)
        ops = BINARY_LEVELS[level]
        while self.tok.kind == "OP" and self.tok.value in ops:
            t = self.advance()          # errors point at the operator, as CPython's do
            left = S.Binary(t.line, t.col, t.value, left, self.binary(level + 1))
        return left

    def unary(self):
        if self.at_op("-", "+", "~"):
            t = self.advance()
            return S.Unary(t.line, t.col, t.value, self.unary())
        return self.power()

    def power(self):
        t = self.tok
        base = self.postfix()
        if self.at_op("**"):
            t = self.advance()
            return S.Binary(t.line, t.col, "**", base, self.unary())
        return base

    def postfix(self):
        node = self.atom()
        while True:
            t = self.tok
            if self.at_op("("):
                node = self.call(node)
            elif self.at_op("["):
                self.advance()
                index = self.subscript()
                self.expect_op("]", " to close the index")
                node = S.Index(t.line, t.col, node, index)
            elif self.at_op("."):
                self.advance()
                nt = self.tok
                if nt.kind not in ("NAME", "KEYWORD"):
                    self.fail(f"expected a field name after '.', found {describe(nt)}")
                self.check_name(nt.value, nt)
                self.advance()
                node = S.Attr(nt.line, nt.col, node, nt.value)
            else:
                return node

    def call(self, func):
        t = self.advance()
        args, kwargs, names = [], [], set()
        while not self.at_op(")"):
            at = self.tok
            if self.at_op("**"):           # f(**m): a map's entries as keyword arguments
                self.advance()
                kwargs.append((None, self.expr()))
            elif self.at_op("*"):
                self.advance()
                args.append(S.Splat(at.line, at.col, self.expr()))
            elif at.kind in ("NAME", "KEYWORD") and self.peek().kind == "OP" and self.peek().value == "=":
                self.check_name(at.value, at)
                if at.value in names:
                    self.fail(f"keyword argument '{at.value}' is given twice")
                names.add(at.value)
                self.advance()
                self.advance()
                kwargs.append((at.value, self.expr()))
            else:
                if kwargs:
                    self.fail("a positional argument cannot follow a keyword argument")
                args.append(self.expr())
            if not self.at_op(")"):
                self.expect_op(",", " between arguments")
        self.advance()
        if isinstance(func, S.Name | S.Attr):     # errors in the call point at the function's name
            t = func
        return S.Call(t.line, t.col, func, args, kwargs)

    def subscript(self):
        t = self.tok
        items = [self.slice_item()]
        while self.at_op(","):
            self.advance()
            if self.at_op("]"):
                break
            items.append(self.slice_item())
        return items[0] if len(items) == 1 else S.TupleLit(t.line, t.col, items)

    def slice_item(self):
        t = self.tok
        lo = None if self.at_op(":") else self.expr()
        if not self.at_op(":"):
            return lo
        self.advance()
        hi = None if self.at_op(":", "]", ",") else self.expr()
        step = None
        if self.at_op(":"):
            self.advance()
            step = None if self.at_op("]", ",") else self.expr()
        return S.Slice(t.line, t.col, lo, hi, step)

    def atom(self):
        t = self.tok
        if t.kind == "NUMBER" or t.kind == "STRING":
            self.advance()
            if t.kind == "STRING":
                while self.at("STRING"):     # "a" "b" concatenates, as in Python
                    t2 = self.advance()
                    t = type(t)(t.kind, t.value + t2.value, t.line, t.col)
            return S.Const(t.line, t.col, t.value)
        if t.kind == "FSTRING":
            self.advance()
            return self.fstring(t)
        if t.kind == "NAME":
            self.check_name(t.value, t)
            self.advance()
            return S.Name(t.line, t.col, t.value)
        if t.kind == "KEYWORD" and t.value in ("true", "false", "none"):
            self.advance()
            return S.Const(t.line, t.col, {"true": True, "false": False, "none": None}[t.value])
        if self.at_op("("):
            self.advance()
            if self.at_op(")"):
                self.advance()
                return S.TupleLit(t.line, t.col, [])
            inner = self.expr_or_tuple()
            self.expect_op(")", " to close '('")
            return inner
        if self.at_op("["):
            self.advance()
            if self.at_op("]"):
                self.advance()
                return S.ListLit(t.line, t.col, [])
            first = self.expr()
            if self.at_kw("for"):
                return self.list_comp(t, first)
            if not self.at_op("]"):
                self.expect_op(",", " between items")
            return S.ListLit(t.line, t.col, [first] + self.items("]"))
        if self.at_op("{"):
            return self.record()
        if t.kind == "KEYWORD":
            self.fail(f"'{t.value}' cannot start an expression")
        self.fail(f"expected an expression, found {describe(t)}")

    def list_comp(self, t, elt):
        """[elt for a in xs if cond for b in ys] — clauses as in Python."""
        clauses = []
        while self.at_kw("for"):
            self.advance()
            names, pattern = self.targets("a loop variable after 'for'", "a loop variable")
            self.expect_kw("in", " after the loop variable")
            source = self.or_expr()
            conditions = []
            while self.at_kw("if"):
                self.advance()
                conditions.append(self.or_expr())
            clauses.append((names, source, conditions, pattern))
        self.expect_op("]", " to close the list")
        return S.ListComp(t.line, t.col, elt, clauses)

    def items(self, close):
        items = []
        while not self.at_op(close):
            items.append(self.expr())
            if not self.at_op(close):
                self.expect_op(",", " between items")
        self.advance()
        return items

    def is_map(self):
        """After '{': a map when the first key is not a field name (`{"a": 1}`, `{(k): v}`, `{:}`)."""
        t = self.tok
        after = self.peek()
        if t.kind in ("NAME", "KEYWORD") and after.kind == "OP" and after.value in (":", ",", "}"):
            return False
        return not self.at_op("}", "...")

    def map_literal(self, t):
        keys, values = [], []
        if self.at_op(":"):               # {:} is the empty map
            self.advance()
            self.expect_op("}", " after '{:' (the empty map)")
            return S.MapLit(t.line, t.col, keys, values)
        while not self.at_op("}"):
            kt = self.tok
            if kt.kind in ("NAME", "KEYWORD") and self.peek().kind == "OP" and self.peek().value == ":":
                self.fail(f"in a map the keys are values: write \"{kt.value}\" for the text, or ({kt.value}) "
                          "for the variable (a {name: …} with field names is a record)")
            keys.append(self.expr())
            if len(keys) == 1 and self.at_op(",", "}"):
                self.fail("expected ':' after the key in a map {key: value}: Apsi has no set literal, "
                          "write set([a, b]) for a set")
            self.expect_op(":", " after the key in a map {key: value}")
            values.append(self.expr())
            if not self.at_op("}"):
                self.expect_op(",", " between map entries")
        self.advance()
        return S.MapLit(t.line, t.col, keys, values)

    def record(self):
        t = self.advance()
        if self.is_map():
            return self.map_literal(t)
        keys, values = [], []
        while not self.at_op("}"):
            kt = self.tok
            if self.at_op("..."):              # {...r, n: 2}: r's fields, then the changes
                self.advance()
                keys.append(None)
                values.append(self.expr())
                if not self.at_op("}"):
                    self.expect_op(",", " between record fields")
                continue
            if kt.kind in ("NAME", "KEYWORD"):
                key = kt.value
            else:
                self.fail(f"expected a field name in the record, found {describe(kt)}")
            self.check_name(key, kt)
            if key in keys:
                self.fail(f"field '{key}' appears twice in this record", kt)
            self.advance()
            if self.at_op(":"):
                self.advance()
                value = self.expr()
            elif kt.kind == "NAME" and self.at_op(",", "}"):
                value = S.Name(kt.line, kt.col, key)     # {x, y} is {x: x, y: y}
            else:
                self.fail(f"expected ':' after the field name '{key}'")
            keys.append(key)
            values.append(value)
            if not self.at_op("}"):
                self.expect_op(",", " between record fields")
        self.advance()
        return S.RecordLit(t.line, t.col, keys, values)

    def fstring(self, t):
        from .fstrings import parse_fstring

        return parse_fstring(t, self.filename, self.lines)


def _glued(a, b, spellings):
    """Tokens `a` and `b` written with no space between them spell one of `spellings` (`x++`)."""
    return (a is not None and b is not None and a.kind == b.kind == "OP" and a.line == b.line
            and b.col == a.col + len(str(a.value)) and str(a.value) + str(b.value) in spellings)


def _walrus(a, b):
    """`a`, `b` are the ':' and '=' of a Python `:=` (the lexer has no such operator)."""
    return (a is not None and b is not None and a.kind == b.kind == "OP" and a.value == ":"
            and b.value == "=" and a.line == b.line and b.col == a.col + 1)


def _tok_at(node):
    from .lexer import Token

    return Token("NODE", None, node.line, node.col)


def describe(t):
    if t.kind == "EOF":
        return "the end of the input"
    if t.kind == "NEWLINE":
        return "';'" if t.value == ";" else "the end of the line"
    if t.kind == "INDENT":
        return "an indented block"
    if t.kind == "DEDENT":
        return "the end of the block"
    if t.kind in ("STRING", "FSTRING"):
        return "a string"
    if t.kind == "NUMBER":
        return f"the number {t.value!r}"
    return f"'{t.value}'"


def parse(source, filename="<input>"):
    return Parser(source, filename).parse_program()
