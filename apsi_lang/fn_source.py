"""An Apsi function as source text, and that text compiled again inside the sandbox.

A model file stores the Apsi functions inside it (a lambda_layer's, activation(fn)'s) as their source,
never as Python bytecode or a pickle. `function_source(fn)` finds a compiled function's text exactly:
every program compiled to run is kept with its own lines (report.COMPILED: a REPL's inputs and modules
shown under one name each have theirs), the instruction that makes the function carries the line and
column of its Apsi `fn` (the compiler places it there), and the program parsed again gives the span of
the function starting there: no guess by line or parameters. `compile_function` turns the text back
into a function: parsed, checked to be exactly one function, compiled without full access whatever the
program that loads it may do, and run only under no permissions at all (permissions.confined), so a
function read from a file can do nothing a program run without any permission could not.
"""

import textwrap
import types

from . import syntax as S
from .builtins import BUILTINS
from .compiler import apsi_name, py_name
from .errors import ApsiError, ApsiSyntaxError
from .parser import Parser
from .report import COMPILED, SOURCES

# The builtins a stored function may name: computation and printing. Every other builtin reads or
# writes files, the environment, the network, processes or the terminal (`input`, `exit`): a function
# from a file that names one is refused when the file is loaded.
PURE_BUILTINS = frozenset({
    "abs", "acos", "all", "any", "asin", "atan", "atan2", "bool", "ceil", "chr", "clock", "divmod",
    "enumerate", "eprint", "error", "exp", "fields", "filter", "float", "floor", "gcd", "get", "has",
    "hypot", "inf", "int", "isfinite", "isinf", "isnan", "len", "list", "log", "log10", "log2", "map",
    "max", "min", "nan", "ord", "pi", "pow", "print", "range", "repr", "reversed", "round", "set", "sin",
    "sorted", "sqrt", "str", "sum", "tan", "trunc", "tuple", "type", "zip"})


class StoredFunction:
    """A function compiled from a model file: calls run under no permissions; `entry` is its source."""

    __apsi_attrs__ = frozenset()
    __apsi_type__ = "fn"

    def __init__(self, fn, entry):
        self.fn = fn
        self.entry = entry

    def __call__(self, *args, **kwargs):
        from . import permissions

        with permissions.confined():
            return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"<fn {self.entry.get('name') or ''}>".replace(" >", ">")


def is_apsi_function(fn):
    if isinstance(fn, StoredFunction):
        return True
    return (type(fn) is types.FunctionType and fn.__code__.co_filename in SOURCES
            and "_chk" in fn.__globals__)


class _SpanParser(Parser):
    """The parser, noting where each function (fn … block, fn(…) => …) starts and ends."""

    def __init__(self, source, filename):
        super().__init__(source, filename)
        self.spans = []          # (node, first token index, index after its last token)

    def expr(self):
        start = self.i
        node = super().expr()
        if isinstance(node, S.Lambda):
            self.spans.append((node, start, self.i))
        return node

    def fn_def(self):
        start = self.i
        node = super().fn_def()
        self.spans.append((node, start, self.i))
        return node


def function_source(fn, where):
    """{"kind": "fn"|"lambda", "name", "text"} of an Apsi function; `where` names it in messages."""
    if isinstance(fn, StoredFunction):
        return dict(fn.entry)
    if not is_apsi_function(fn):
        raise ApsiError(f"{where}: the function is not an Apsi function (a Python function has no Apsi "
                        "source to store); write it in Apsi, e.g. fn(x) => x * 2")
    code = fn.__code__
    site = defining_site(code)
    spans = _spans_at(*site) if site is not None else []
    if len(spans) != 1:
        raise ApsiError(f"{where}: cannot find the source of the function defined at {code.co_filename}:"
                        f"{code.co_firstlineno} (it was not compiled here as a program, a module or an "
                        "input); save the model from the program that defines it")
    lines = site[0]
    node, first, after = spans[0]
    text = _between(lines, (first.line, first.col), (after.line, after.col))
    if isinstance(node, S.FnDef):
        text = textwrap.dedent(" " * (first.col - 1) + text)
    return {"kind": "fn" if isinstance(node, S.FnDef) else "lambda",
            "name": node.name if isinstance(node, S.FnDef) else None, "text": text.rstrip()}


def _spans_at(lines, at):
    """The functions whose `fn` is at `at` (line, column) in `lines`: one, for lines that compiled."""
    parser = _SpanParser("\n".join(lines), "<source>")
    parser.parse_program()
    return [(n, parser.toks[a], parser.toks[b]) for n, a, b in parser.spans if (n.line, n.col) == at]


def defining_site(code):
    """(source lines, (line, column)) of the `fn` that compiled into `code`, exactly: the position of
    the instruction that loads `code` in the code that makes the function (the compiler places it at
    the Apsi node), searched in the programs compiled under code's file name, newest first."""
    for top, lines in reversed(COMPILED.get(code.co_filename, ())):
        found = _site_in(top, code)
        if found is not None:
            return lines, found
    return None


def _site_in(parent, target):
    import dis

    if any(c is target for c in parent.co_consts):
        for ins in dis.get_instructions(parent):
            if ins.argval is target and ins.positions is not None and ins.positions.lineno:
                return ins.positions.lineno, (ins.positions.col_offset or 0) + 1
        return None
    for c in parent.co_consts:
        if isinstance(c, types.CodeType):
            found = _site_in(c, target)
            if found is not None:
                return found
    return None


def _between(lines, start, end):
    (l1, c1), (l2, c2) = start, end
    if l1 == l2:
        return lines[l1 - 1][c1 - 1:c2 - 1]
    part = [lines[l1 - 1][c1 - 1:]] + lines[l1:l2 - 1] + [lines[l2 - 1][:c2 - 1] if l2 <= len(lines) else ""]
    return "\n".join(part)


def free_names(fn):
    """{name: value} the function reads from outside itself (its program's globals and closures),
    leaving out what it binds itself and what the builtins give."""
    if isinstance(fn, StoredFunction):
        return {}
    code = fn.__code__
    bound, reads = set(), set()
    _walk_code(code, bound, reads)
    cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=True))
    out = {}
    for py in sorted(reads - bound):
        if py in cells:
            try:
                out[apsi_name(py)] = cells[py].cell_contents
            except ValueError:          # a cell not filled yet
                continue
        elif py in fn.__globals__ and (not py.startswith("_") or py.startswith("_kw_")):
            out[apsi_name(py)] = fn.__globals__[py]
    return out


def _walk_code(code, bound, reads):
    bound.update(code.co_varnames)
    bound.update(code.co_cellvars)
    reads.update(code.co_names)
    reads.update(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, str) and c.isidentifier():
            reads.add(c)        # a name read through _gv("name")
        if isinstance(c, types.CodeType):
            _walk_code(c, bound, reads)
            bound.difference_update(set(c.co_freevars) - set(code.co_varnames) - set(code.co_cellvars))


def compile_function(entry, filename, values, program_dir):
    """A StoredFunction from a stored entry, compiled in the sandbox with `values` ({name: value}: its
    captured names) bound first. Raises ApsiError naming `filename` when the text is not one function
    of the kind stored, names what it may not, or does not compile."""
    from . import program, sandbox
    from .compiler import compile_tree
    from .scopes import declarations

    kind, name, text = entry.get("kind"), entry.get("name"), entry.get("text")
    if kind not in ("fn", "lambda") or not isinstance(text, str) or (kind == "fn") != isinstance(name, str):
        raise ApsiError(f"{filename}: a stored function is damaged (kind, name or text missing)")
    target = name if kind == "fn" else "model_fn"
    source = "use nn\nuse layers\n" + (text if kind == "fn" else f"let {target} = (\n{text}\n)")
    lines = source.split("\n")
    try:
        body = Parser(source, filename).parse_program()
    except ApsiSyntaxError as e:
        raise ApsiError(f"{filename}: a stored function does not compile: {e.message} "
                        f"(in: {_short(text)})") from None
    _check_shape(body, kind, target, filename, text)
    _check_names(body[2], filename, text, set(values))
    SOURCES[filename] = lines
    ns = program.new_namespace(program_dir)
    ns.update({py_name(k): v for k, v in values.items()})
    from . import modules

    fixed = set(BUILTINS) | {"args"}
    user = {apsi_name(k) for k in ns if not k.startswith("_") or k.startswith("_kw_")} - fixed

    def load_module(mod, node):
        exports = modules.names(mod, program_dir)
        return exports

    try:
        code, attr_sets = compile_tree(body, filename, lines, fixed, user, load_module, full_access=False)
    except ApsiSyntaxError as e:
        raise ApsiError(f"{filename}: a stored function does not compile: {e.message} "
                        f"(in: {_short(text)})") from None
    COMPILED.setdefault(filename, []).append((code, lines))    # a function it returns can be saved
    ns.update(sandbox.sets_for(attr_sets))
    ns["__builtins__"] = program._RUNTIME_BUILTINS      # never Python's, whatever the program may do
    prog = program.Program(code, ns)
    prog.exports = declarations(body)
    from . import permissions

    with permissions.confined():
        prog.run()
    return StoredFunction(ns[py_name(target)], dict(entry))


def _check_shape(body, kind, target, filename, text):
    """The text must be one function and nothing else (no statement smuggled around it)."""
    ok = (len(body) == 3 and isinstance(body[0], S.Use) and isinstance(body[1], S.Use))
    last = body[2] if ok else None
    if kind == "fn":
        ok = ok and isinstance(last, S.FnDef) and last.name == target
    else:
        ok = ok and isinstance(last, S.Let) and list(last.targets) == [target] \
            and isinstance(last.value, S.Lambda)
    if not ok:
        raise ApsiError(f"{filename}: a stored function is not one function (in: {_short(text)}); "
                        "the file was changed by hand or is not a model file")


def _check_names(node, filename, text, captured):
    for name in _names_read(node):
        if name in BUILTINS and name not in PURE_BUILTINS and name not in captured:
            raise ApsiError(f"{filename}: a stored function calls {name}, which reads or writes outside "
                            f"the model (files, the environment, the network or processes) (in: "
                            f"{_short(text)}); a model file's functions may only compute")


def _names_read(tree):
    stack, out = [tree], set()
    while stack:
        x = stack.pop()
        if isinstance(x, S.Name):
            out.add(x.id)
        if isinstance(x, S.Node):
            stack.extend(getattr(x, f, None) for f in x.fields)
        elif isinstance(x, list | tuple):
            stack.extend(x)
    return out


def _short(text):
    one = " ".join(text.split())
    return one if len(one) <= 60 else one[:57] + "..."
