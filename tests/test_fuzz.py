"""Fuzzing the compiler: random and mutated sources give an Apsi syntax error or a code object.

Never a Python exception escaping compile (a bare SyntaxError, ValueError, RecursionError, ... from
the parser or from compile() of the generated ast), never a hang. Only compile runs (in-process, with
a deadline), so mutated programs can't loop forever or write files.
"""

import signal
import string
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apsi_lang import permissions, program
from apsi_lang.errors import ApsiSyntaxError
from apsi_lang.lexer import KEYWORDS, OPERATORS

LANG = Path(__file__).parent / "lang"
CORPUS = [p.read_text(encoding="utf-8") for p in sorted(LANG.glob("*.apsi"))
          if "syntax_deep" not in p.name]
DEADLINE_S = 20      # a hang guard, not a timing test: shared CI machines can be slow

FUZZ = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Hang(Exception):
    pass


@contextmanager
def time_limit(seconds):
    def on_alarm(_signum, _frame):
        raise Hang(f"compiling took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def compile_only(source):
    """Compile as `apsi FILE` would, beside the golden programs (so `use helpers` resolves)."""
    ns = program.new_namespace(str(LANG))
    old = permissions.current()        # other in-process tests may have left another project installed
    permissions.set_current(permissions.Grants(project_root=LANG))
    try:
        with time_limit(DEADLINE_S):
            program.compile_source(source, str(LANG / "fuzz.apsi"), ns, program_dir=str(LANG))
    except ApsiSyntaxError as e:
        text = e.render()              # rendering must work too
        assert e.filename and e.line >= 1 and e.col >= 1 and text
        return e
    finally:
        permissions.set_current(old)
    return None


# ---- mutations -----------------------------------------------------------------------------------

TOKENS = sorted(KEYWORDS) + OPERATORS + ["\n", "    ", "\t", ";", "#", '"', "'", 'f"', '"""', "\\", "{", "}",
                                        "x", "_x", "1", "1e", "0x", "1_", "9" * 30, "é", "²", "٣", "\r",
                                        "\x00", "{x}", "{:", "!r", "fn(x) => x", "use helpers", "use nn",
                                        # the newer syntax: maps, spreads, patterns, is, del, loop else
                                        "{:}", '{"k": 1}', "{(k): v}", "{...r, n: 1}", "...", "**", "**kw",
                                        "*rest", "(a, b)", " is ", " is not ", "del ", "else:", " as ",
                                        "use helpers as h", "!s", "=}", "{x=}", "{x!r:>4}", "&&", "||",
                                        "def ", "lambda ", "True", "except", '"""', "\\",
                                        # bracketed targets, and the Python forms refused with a hint
                                        "for (a, (b, c)) in ", "(x,)", " for (x, y) in ", ":=", "a = b = ",
                                        "match ", "{x for x in y}", "{k: v for k in y}", "{1, 2}"]
CHARS = string.printable + "é²٣中\x00\u200b"


@st.composite
def mutated(draw):
    src = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert_char", "insert_token", "swap", "duplicate",
                                     "truncate"]))
        n = len(src)
        i = draw(st.integers(0, n))
        if kind == "delete" and n:
            j = min(n, i + draw(st.integers(1, 8)))
            src = src[:i] + src[j:]
        elif kind == "insert_char":
            src = src[:i] + draw(st.sampled_from(CHARS)) + src[i:]
        elif kind == "insert_token":
            src = src[:i] + draw(st.sampled_from(TOKENS)) + src[i:]
        elif kind == "swap" and n > 1:
            j = draw(st.integers(0, n - 1))
            a, b = sorted((min(i, n - 1), j))
            chars = list(src)
            chars[a], chars[b] = chars[b], chars[a]
            src = "".join(chars)
        elif kind == "duplicate" and n:
            j = min(n, i + draw(st.integers(1, 40)))
            src = src[:j] + src[i:j] + src[j:]
        elif kind == "truncate":
            src = src[:i]
    return src


@st.composite
def token_soup(draw):
    words = draw(st.lists(st.sampled_from(TOKENS + ["a", "b", "print", "len", "(", ")", "[", "]", ",", "="]),
                          max_size=40))
    sep = draw(st.sampled_from(["", " "]))
    return sep.join(words)


@FUZZ
@given(mutated())
def test_mutated_golden_programs(source):
    compile_only(source)


@FUZZ
@given(token_soup())
def test_token_soup(source):
    compile_only(source)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet=st.sampled_from(CHARS), max_size=200))
def test_random_text(source):
    compile_only(source)


# ---- deep nesting: an Apsi error, not a crash -------------------------------------------------

@pytest.mark.parametrize("source", [
    "(" * 500 + "1" + ")" * 500,
    "[" * 500 + "]" * 500,
    "{a: " * 300 + "1" + "}" * 300,
    "let x = " + "-" * 5000 + "1",
    "let x = " + "not " * 5000 + "true",
    "let x = " + " + ".join(["1"] * 20000),
    "let x = " + " ** ".join(["1"] * 3000),
    "let f = " + "fn(x) => " * 1000 + "1",
    "let r = {a: 1}\nr" + ".a" * 5000,
    "print" + "()" * 5000,
    "let xs = [1]\nxs" + "[0]" * 5000,
    "let x = " + "1 if true else " * 3000 + "2",
    "".join("    " * i + f"if {i}:\n" for i in range(150)) + "    " * 150 + "pass",
    "".join("    " * i + f"while {i}:\n" for i in range(30)) + "    " * 30 + "pass",
    "".join("    " * i + "fn f():\n" for i in range(60)) + "    " * 60 + "return 1",
    "if x:\n    pass\n" + "".join(f"elif {i}:\n    pass\n" for i in range(3000)),
    'f"' + "{" * 200 + '1' + "}" * 200 + '"',
    "let s = 1" + "; s = s" * 20000,
    "let m = " + "{(1): " * 300 + "1" + "}" * 300,
    "let " + "(" * 150 + "a" + ")" * 150 + " = 1",
    "let r = {a: 1}\nlet s = {" + "...r, " * 3000 + "}",
    'f"""' + "{x\n" * 50 + '"""',
    "for " + ", ".join(f"(a{i}, *b{i})" for i in range(200)) + " in []: pass",
    "print([1 for " + "(" * 150 + "a, b" + ")" * 150 + " in []])",
    "for " + "(" * 150 + "a" + ")" * 150 + " in []: pass",
])
def test_deep_nesting_is_an_apsi_error_or_compiles(source):
    compile_only(source)


@pytest.mark.parametrize("source", [
    "let a, *rest = [1, 2]", "let (a, b), c = [[1, 2], 3]", "for i, (x, y) in []: pass",
    "for x in []:\n    pass\nelse:\n    pass", "let x = 1\nprint(x is none, x is not none)",
    "let m = {:}\nm[1] = 2\ndel m[1]", 'let m = {"a": 1, (2): [3]}', "fn f(a, *, b=1, **kw): return kw",
    "let r = {a: 1}\nlet s = {...r, b: 2}", "use helpers as h\nh.shout", 'let x = 1\nprint(f"{x!r} {x=}")',
    "for (a, (b, c)) in []: pass", "for (a,) in []: pass", "let (r,) = [1]", "print([x for (x, y) in []])",
    "print([i for i, (x, *ys) in []])", 'let t = true\nprint(f"{t:>6}")',
])
def test_new_syntax_compiles(source):
    assert compile_only(source) is None


@pytest.mark.parametrize("source, hint", [
    ("let a = 0\nwhile a := 1: pass", "Apsi has no ':='"),
    ("let a = 0\nlet b = 0\na = b = 1", "no chained assignment"),
    ("let x = 1\nmatch x:\n    pass", "no 'match' statement"),
    ("let y = []\nlet m = {x: 1 for x in y}", "no map or set comprehensions"),
    ("let s = {1, 2}", "no set literal"),
    ('let f = open("x")', "read_text(path)"),
    ('print(os.path.exists("x"))', "exists, list_dir"),
    ("print(sys.argv)", "the list 'args'"),
    ("print(json.dumps(1))", "read_json(path)"),
    ("print(random())", "with 'use nn'"),
    ('print(getattr({a: 1}, "a"))', "get(r, name, default)"),
    ("print(hex(255))", 'f"{n:x}"'),
])
def test_python_forms_are_refused_with_the_apsi_way(source, hint):
    err = compile_only(source)
    assert err is not None and hint in err.message


def test_huge_literals():
    assert compile_only("let x = " + "9" * 50000) is None
    assert compile_only("let x = 1" + "0" * 400 + ".5") is None
    assert compile_only('let s = "' + "a" * 200000 + '"') is None
