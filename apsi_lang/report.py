"""What a user reads when a program fails: Apsi tracebacks and Apsi-level error texts.

Only frames of Apsi code appear (their code objects carry the Apsi file name); Python's own errors
are reworded in Apsi's terms (none, record, "an int is not a function").
"""

import re
import sys

from .errors import ApsiError, ApsiSyntaxError
from .lazy_re import Pattern
from .names import apsi_name
from .values import Record, a_type, no_address, show

SOURCES = {}          # filename -> source lines, filled by the compiler's caller, for tracebacks
# filename -> [(code object, its source lines)], one per program compiled to run under that name (a
# REPL's or kernel's inputs, modules shown under one name): where a function's source is found exactly
COMPILED: dict = {}


def apsi_frames(tb):
    """(filename, line, function) for the traceback frames that run Apsi code."""
    return [(f, line, func) for f, line, _, func, _ in _frames(tb)]


def _frames(tb):
    """(filename, line, col or None, function, frame) of the Apsi frames, and after the last of them
    the Python function it called (for messages that name it)."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in SOURCES:
            line, col = _position(code, tb.tb_lasti, tb.tb_lineno)
            frames.append((code.co_filename, line, col, code.co_name, tb.tb_frame))
        tb = tb.tb_next
    return frames


def unbound_message(name):
    return (f"'{name}' is used before it is assigned: give it a value (with 'let {name} = …' or "
            f"'fn {name}') on every path before this line")


def _position(code, lasti, line):
    """(line, col) of the instruction that failed, from the code's position table (CPython ≥ 3.11)."""
    try:
        for i, pos in enumerate(code.co_positions()):
            if i == lasti // 2:
                if pos[0] is not None and pos[2] is not None:
                    return pos[0], pos[2] + 1
                break
    except (AttributeError, ValueError):
        pass
    return line, None


def _called(tb):
    """The name of the Python function (of a module like nn) that the innermost Apsi frame called
    when the error came from inside it, or None."""
    last, after = None, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in SOURCES:
            last, after = tb, None
        elif last is not None and after is None:
            after = tb.tb_frame
        tb = tb.tb_next
    if after is None:
        return None
    module = after.f_globals.get("__name__", "")
    if module.startswith(("apsi_lang", "apsi_cli")):
        return None
    return after.f_code.co_name


def describe(exc):
    """The Apsi-level text for an exception raised while a program runs (never a memory address)."""
    return no_address(_describe(exc))


def _describe(exc):
    """The Apsi-level text for an exception raised while a program runs."""
    if isinstance(exc, ApsiError):
        return exc.message
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, NameError):      # UnboundLocalError too: a declared name not bound yet
        name = getattr(exc, "name", None) or (str(exc).split("'") + ["?", "?"])[1]
        return unbound_message(apsi_name(name))
    if isinstance(exc, RecursionError):
        return (f"too many nested calls (more than {sys.getrecursionlimit()}): "
                "check that the recursion reaches its base case")
    if isinstance(exc, AttributeError):
        obj, name = getattr(exc, "obj", None), getattr(exc, "name", None)
        if type(obj) is Record:
            return f"record has no field '{name}' (its fields: {', '.join(vars(obj)) or 'none'})"
        if name is not None:
            hint = ""
            if name in ("length", "len", "size"):
                hint = " (len(x) gives the length)"
            elif type(obj) is dict:
                hint = f" (a map's entries are read as m[\"{name}\"]; read_json gives maps)"
            return f"{a_type(obj)} has no field or method '{name}'{hint}"
    if isinstance(exc, IndexError):
        text = str(exc)
        m = re.fullmatch(r"(\w+) index out of range", text)
        if m:
            return f"index out of range for this {'str' if m.group(1) == 'string' else m.group(1)}"
        return f"index out of range ({_apsi_words(text)})"
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else "?"
        if type(key) is str and key in _EMPTY_POPS:      # never hash a key of the program here (deep tuples)
            return _EMPTY_POPS[key]
        return f"no key {_brief(key)} in the map (m.get(key, default) gives a default instead)"
    if isinstance(exc, TypeError):
        m = _NOT_CALLABLE.fullmatch(str(exc))
        if m:
            return f"{a_type_named(m.group(1))} is not a function: it cannot be called"
        m = _NO_ORDER.fullmatch(str(exc))
        if m:
            a, b = a_type_named(m.group(2)), a_type_named(m.group(3))
            hint = (": records have no order; sort them by a field with sorted(xs, key=fn(r) => r.name)"
                    if "record" in (a + b) else "")
            return f"cannot compare {a} with {b} using '{m.group(1)}'{hint}"
    if isinstance(exc, (TypeError, ValueError, OverflowError)):
        text = _LOCALS.sub("", str(exc))              # outer.<locals>.inner() is inner()
        text = _TYPE_METHOD.sub(r"\1", text)         # list.append() is append()
        for pattern, words in _REWORDS:
            m = pattern.fullmatch(text)
            if m:
                return words(m)
        return _apsi_words(text)
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"{type(exc).__name__}: {exc}"


def _brief(value, limit=200):
    """A value's text for a message: cut short, and never an error of its own (this runs on the main
    thread, whose stack is small: a key nested a million deep is not shown)."""
    try:
        text = show(value, True) if _depth_below(value, 100) else "(a value nested too deeply to show)"
    except RecursionError:
        text = "(a value nested too deeply to show)"
    return text if len(text) <= limit else text[:limit] + "…"


def _depth_below(value, limit):
    """Whether `value`'s containers nest less than `limit` deep (looked at without recursion)."""
    level = [value]
    for _ in range(limit):
        level = [x for v in level if type(v) in (list, tuple) for x in v][:10000]
        if not level:
            return True
    return False


_LOCALS = Pattern(r"(?:[\w<>]+\.<locals>\.)+")
_TYPE_METHOD = Pattern(r"\b(?:list|str|dict|set|tuple|frozenset|int|float)\.(\w+\(\))")


def _fn(name):
    name = name.rsplit(".", 1)[-1]      # (CPython names a function by its module too: mod.fn())
    return "fn(…) => …" if name == "<lambda>" else f"{name}()"


def _plural(n, word):
    return f"{n} {word}" + ("" if n == "1" else "s")


_EMPTY_POPS = {"pop from an empty set": "pop() of an empty set: check len(s) first",
               "popitem(): dictionary is empty": "popitem() of an empty map: check len(m) first"}
_NOT_CALLABLE = Pattern(r"'(\w+)' object is not callable")
_REWORDS = [   # CPython's messages that name Python types or syntax, in Apsi's words
    (Pattern(r"(\S+)\(\) takes (\d+) positional arguments? but (\d+) (?:was|were) given"),
     lambda m: f"{_fn(m.group(1))} takes {_plural(m.group(2), 'positional argument')} but was given "
               f"{m.group(3)}"),
    (Pattern(r"(\S+)\(\) takes from (\d+) to (\d+) positional arguments but (\d+) were given"),
     lambda m: f"{_fn(m.group(1))} takes {m.group(2)} to {m.group(3)} arguments but was given {m.group(4)}"),
    (Pattern(r"(\S+)\(\) missing (\d+) required positional arguments?: (.*)"),
     lambda m: f"{_fn(m.group(1))} needs {_plural(m.group(2), 'more argument')}: {m.group(3)}"),
    (Pattern(r"(\S+)\(\) missing (\d+) required keyword-only arguments?: (.*)"),
     lambda m: f"{_fn(m.group(1))} needs the keyword {'argument' if m.group(2) == '1' else 'arguments'} "
               f"{m.group(3)} (name=value, after a bare '*' in its parameters)"),
    (Pattern(r"(\S+)\(\) got an unexpected keyword argument '(\w+)'"),
     lambda m: f"{_fn(m.group(1))} has no parameter named '{m.group(2)}'"),
    (Pattern(r"(\S+)\(\) got multiple values for argument '(\w+)'"),
     lambda m: f"{_fn(m.group(1))} was given '{m.group(2)}' twice (by position and by name)"),
    (Pattern(r"(\S+)\(\) got multiple values for keyword argument '(\w+)'"),
     lambda m: f"{_fn(m.group(1))} was given '{m.group(2)}' twice (by name and in a ** map)"),
    (Pattern(r"unsupported operand type\(s\) for ([^:]+): '(\w+)' and '(\w+)'"),
     lambda m: f"'{m.group(1).strip()}' does not work on {a_type_named(m.group(2))} and "
               f"{a_type_named(m.group(3))}"),
    (Pattern(r'can only concatenate str \(not "(\w+)"\) to str'),
     lambda m: f"cannot add {a_type_named(m.group(1))} to a str: convert it with str(x), or use an "
               "f-string: f\"…{x}\""),
    (Pattern(r"can only concatenate list \(not \"(\w+)\"\) to list"),
     lambda m: f"cannot add {a_type_named(m.group(1))} to a list: only a list (append adds one item)"),
    (Pattern(r"invalid literal for int\(\) with base 10: (.*)", re.S),
     lambda m: f"int({_text(m.group(1))}): the text is not a whole number"),
    (Pattern(r"could not convert string to float: (.*)", re.S),
     lambda m: f"float({_text(m.group(1))}): the text is not a number"),
    (Pattern(r"unsupported format string passed to (\w+)\.__format__"),
     lambda m: f"a format spec (the part after ':' in f\"{{x:>8}}\") works on numbers and text, not on "
               f"{a_type_named(m.group(1))}: format its text instead, f\"{{str(x):>8}}\""),
    (Pattern(r"bad operand type for unary (.): '(\w+)'"),
     lambda m: f"'{m.group(1)}' does not work on {a_type_named(m.group(2))}"),
    (Pattern(r"bad operand type for (\w+)\(\): '(\w+)'"),
     lambda m: f"{m.group(1)}() does not work on {a_type_named(m.group(2))}"),
    (Pattern(r"object of type '(\w+)' has no len\(\)"),
     lambda m: f"len() of {a_type_named(m.group(1))}: only a list, str, tuple, map, set or tensor has a "
               "length"),
    (Pattern(r"unhashable type: '(\w+)'"),
     lambda m: f"{a_type_named(m.group(1))} cannot be a map key or a set item (it can change): keys are "
               "text, numbers, tuples, …" + (" — use tuple(xs)" if m.group(1) == "list" else "")),
    (Pattern(r"can't multiply sequence by non-int of type '(\w+)'"),
     lambda m: f"'*' repeats a list or str by an int only, not by {a_type_named(m.group(1))}"),
    (Pattern(r"'(\w+)' object cannot be interpreted as an integer"),
     lambda m: f"expected an int here, not {a_type_named(m.group(1))}"
               + (": convert it with int(x)" if m.group(1) in ("float", "str") else "")),
    (Pattern(r"'(\w+)' object is not iterable"),
     lambda m: f"{a_type_named(m.group(1))} cannot be looped over or spread: only a list, str, tuple, "
               "map, set or range can"),
    (Pattern(r"cannot unpack non-iterable (\w+) object"),
     lambda m: f"cannot destructure {a_type_named(m.group(1))}: only a list, tuple or other sequence "
               "can be split into names"),
    (Pattern(r"(list|tuple|string) indices must be integers(?: or slices)?, not (\w+)"),
     lambda m: f"a {'str' if m.group(1) == 'string' else m.group(1)} index must be an int, not "
               f"{a_type_named(m.group(2))}" + (": convert it with int(i)" if m.group(2) == "float" else "")),
    (Pattern(r"'(\w+)' object is not subscriptable"),
     lambda m: "a record's fields are read as r.name, not r[\"name\"] (get(r, name) takes a computed name)"
               if m.group(1) in ("Record", "record") else
               f"{a_type_named(m.group(1))} cannot be indexed with [ ]"),
    (Pattern(r"'(\w+)' object does not support item assignment"),
     lambda m: "a record's fields are set as r.name = value, not r[\"name\"]"
               if m.group(1) in ("Record", "record") else
               f"{a_type_named(m.group(1))} cannot be changed with [ ] = (a str or tuple is fixed: make a "
               "new one)"),
    (Pattern(r"sequence item (\d+): expected str instance, (\w+) found"),
     lambda m: f"join: item {m.group(1)} is {a_type_named(m.group(2))}, not a str: convert the items "
               "first, like \", \".join([str(x) for x in xs])"),
    (Pattern(r"int too large to convert to float"),
     lambda m: "an int too large for a float was given where a number is needed (floats end near "
               "1.8e308): give a smaller number"),
    (Pattern(r"(max|min)\(\) (?:arg is an empty sequence|iterable argument is empty)"),
     lambda m: f"{m.group(1)}() of an empty list: check len(xs) first, or give default=…"),
    (Pattern(r"(.*) is not in list", re.S),
     lambda m: f"{_text(m.group(1))} is not in the list (check with x in xs first)"),
    (Pattern(r"Unknown format code '(.)' for object of type '(\w+)'"),
     lambda m: f"the format code '{m.group(1)}' does not work on {a_type_named(m.group(2))}"
               + (" (true/false/none and lists format as text: use :>6, :<6, :^6)"
                  if m.group(2) == "str" else "")),
    (Pattern(r"Invalid format specifier '(.*)' for object of type '(\w+)'", re.S),
     lambda m: f"the format specifier {_text(repr(m.group(1)))} does not work on {a_type_named(m.group(2))}"),
    (Pattern(r"substring not found"),
     lambda m: "the text is not in the str (s.find(t) gives -1 instead of an error)"),
    (Pattern(r"ord\(\) expected a character, but string of length (\d+) found"),
     lambda m: f"ord() needs a str of one character, not of length {m.group(1)}"),
]


def _text(py_repr):
    """A string as Python's message quoted it ('abc'), quoted the Apsi way ("abc")."""
    import ast

    try:
        value = ast.literal_eval(py_repr)
    except (ValueError, SyntaxError):
        return py_repr
    return show(value, quoted=True)


_NO_ORDER = Pattern(r"'(\S+)' not supported between instances of '(\w+)' and '(\w+)'")


def a_type_named(name):
    name = {"NoneType": "none", "Record": "record", "builtin_function_or_method": "function",
            "dict": "map", "SimpleNamespace": "record", "Tensor": "tensor", "bool_": "bool",
            "float64": "float", "int64": "int", "frozenset": "set", "ApsiError": "error"}.get(name, name)
    return "none" if name == "none" else ("an " if name[:1] in "aeiou" else "a ") + name


def _apsi_words(text):
    for py, apsi in (("'NoneType'", "none"), ("NoneType", "none"), ("'Record'", "record"),
                     ("builtin_function_or_method", "builtin function"), ("'function'", "function"),
                     ("None", "none"), ("True", "true"), ("False", "false")):
        text = text.replace(py, apsi)
    return text


FRAME_NAMES = {"<module>": "at top level", "<lambda>": "in fn <lambda>",
               "<listcomp>": "in a list comprehension"}


def frame_name(func):
    return FRAME_NAMES.get(func) or f"in fn {apsi_name(func)}"


def render_runtime_error(exc):
    """An Apsi traceback: Apsi frames only, each with file:line:col, its source line and a caret."""
    frames = _frames(exc.__traceback__)
    out = ["Traceback (most recent call last):"] if frames else []
    repeated = 0
    keys = [f[:4] for f in frames]
    for i, (filename, line, col, func, _) in enumerate(frames):
        if i >= 3 and keys[i] == keys[i - 1] == keys[i - 2] == keys[i - 3]:
            repeated += 1           # deep recursion: show a frame three times, then count the rest
            continue
        if repeated:
            out.append(f"  [the frame above repeated {repeated} more times]")
            repeated = 0
        out.append(f"  {filename}:{line}{f':{col}' if col else ''}, {frame_name(func)}")
        out.extend(_source_lines(filename, line, col))
    if repeated:
        out.append(f"  [the frame above repeated {repeated} more times]")
    message = describe_at(exc, frames)
    if frames:
        filename, line, col, _, frame = frames[-1]
        called = _called(exc.__traceback__)
        if called and not isinstance(exc, ApsiError) and not message.startswith(called + ":"):
            message = f"{called}: {message}"   # a Python library's message: name the function called
        loc = f"{filename}:{line}{f':{col}' if col else ''}: "
    else:
        loc = ""
    out.append(f"{loc}error: {message}")
    return "\n".join(out)


def describe_at(exc, frames=None):
    """describe(exc), made exact by the Apsi frame where it happened: an index out of range names
    the index and the length, `s.remove(x)` of a set says set (what `catch e` and tracebacks show)."""
    message = describe(exc)
    if not isinstance(exc, IndexError | KeyError):
        return message
    frames = _frames(exc.__traceback__) if frames is None else frames
    if not frames:
        return message
    filename, line, col, _, frame = frames[-1]
    if isinstance(exc, IndexError):
        return index_message(filename, line, col, frame) or message
    if exc.args and _word_at(filename, line, col) == "remove":
        return f"{_brief(exc.args[0])} is not in the set (s.discard(x) removes it only if it is there)"
    return message


def _word_at(filename, line, col):
    """The name that starts at (line, col) of an Apsi file (a method's name in `s.remove(x)`), or ''."""
    text = SOURCES.get(filename, [])
    if not col or not 0 < line <= len(text):
        return ""
    m = re.match(r"\w+", text[line - 1][col - 1:])
    return m.group(0) if m else ""


def _source_lines(filename, line, col):
    text = SOURCES.get(filename, [])
    if not (0 < line <= len(text) and text[line - 1].strip()):
        return []
    from .excerpt import caret_lines

    src = text[line - 1].rstrip()
    stripped = src.lstrip()
    indent = len(src) - len(stripped)
    shown, pad = caret_lines(stripped, col - 1 - indent if col else 0)
    if col and col - 1 >= indent:
        return [f"    {shown}", f"    {pad}^"]
    return [f"    {shown}"]


# (filename, line, col) of an index expression -> how to find its container and index again when it
# fails: ("name", python name) or ("const", value) each. Filled by the compiler for simple operands
# only, so reading them again has no side effect.
INDEXES = {}


def index_message(filename, line, col, frame):
    """'index 10 is out of range for a list of length 3' when the operands can be looked up again."""
    spec = INDEXES.get((filename, line, col))
    if spec is None:
        return None
    try:
        obj, index = (_reread(part, frame) for part in spec)
    except _Unknown:
        return None
    if type(index) is not int or type(obj) not in (list, tuple, str):
        return None
    return f"index {index} is out of range for {a_type(obj)} of length {len(obj)}" + \
        (" (the last is at -1, the first at 0)" if len(obj) else " (it is empty)")


class _Unknown(Exception):
    """An operand cannot be read again safely (not a plain value, or not there any more)."""


_SEQUENCES = (list, tuple, str)


def _reread(spec, frame):
    """The value of an operand the compiler described (compiler._operand), read from the frame.
    Only plain Apsi values are touched (ints, lists, tuples, strings, records, maps), so reading
    runs no user code and has no side effect."""
    kind = spec[0]
    if kind == "const":
        return spec[1]
    if kind == "name":
        for scope in (frame.f_locals, frame.f_globals):
            if spec[1] in scope:
                return scope[spec[1]]
        raise _Unknown
    if kind == "neg":
        x = _reread(spec[1], frame)
        if type(x) is not int:
            raise _Unknown
        return -x
    if kind == "len":
        x = _reread(spec[1], frame)
        if frame.f_globals.get("len", frame.f_builtins.get("len")) is not len or \
                type(x) not in (*_SEQUENCES, dict):
            raise _Unknown
        return len(x)
    if kind == "field":
        x = _reread(spec[1], frame)
        if type(x) is not Record or spec[2] not in vars(x):
            raise _Unknown
        return vars(x)[spec[2]]
    if kind == "index":
        x, i = _reread(spec[1], frame), _reread(spec[2], frame)
        if type(x) in _SEQUENCES and type(i) is int and -len(x) <= i < len(x):
            return x[i]
        if type(x) is dict and type(i) in (int, str) and i in x:
            return x[i]
        raise _Unknown
    if kind == "binary":
        a, b = _reread(spec[2], frame), _reread(spec[3], frame)
        if type(a) is not int or type(b) is not int or max(abs(a), abs(b)) > 1 << 64 \
                or (spec[1] in ("//", "%") and b == 0):
            raise _Unknown
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0}[spec[1]]
    raise _Unknown


def render_syntax_error(exc: ApsiSyntaxError):
    return exc.render()
