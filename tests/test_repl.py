"""The REPL driven through `python -m apsi` with piped stdin, and the APSI_DEBUG switch."""

import os
import subprocess
import sys
from pathlib import Path

from apsi_cli.repl import needs_more

ROOT = Path(__file__).parent.parent


def apsi(args, cwd, stdin="", env=None):
    """`apsi -i` when args is empty: piped input would otherwise run as a program."""
    args = args or ["-i"]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    full_env.update(PYTHONPATH=str(ROOT), APSI_HISTORY=str(Path(cwd) / ".history"), **(env or {}))
    p = subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, input=stdin, capture_output=True,
                       text=True, env=full_env, timeout=60)
    return p.returncode, p.stdout, p.stderr


SESSION = """\
fn add(a, b=1):
    let s = a + b
    return s

add(2)
1 / 0
let xs = [1,
  2]
xs
add(40, b=2)
none
print("printed")
undefined_name
let x = 5
x = x + 1
x
if x > 1:
    print("big")

"done"
let r = {a: [1, "s"], b: none}
r
try: error("caught")
catch e: print(e.message)

fn counter():
    let n = 0
    fn next():
        n += 1
        return n
    return next

let c = counter()
c()
c()
"""


def test_repl_session(tmp_path):
    code, out, err = apsi([], tmp_path, SESSION)
    assert code == 0
    values = [line.split(">>> ")[-1].split("... ")[-1] for line in out.splitlines()]
    values = [v for v in values if v]
    assert values[0].startswith("Apsi ")
    assert values[1:] == ["3", "[1, 2]", "42", "printed", "6", "big", '"done"', '{a: [1, "s"], b: none}',
                          "caught", "1", "2"]
    # errors are shown (the Apsi way) and the session goes on
    assert "<repl:3>:1:3: error: division by zero" in err
    assert "undefined name 'undefined_name'" in err
    assert "Traceback (most recent call last):\n  File" not in err


def test_repl_ends_at_end_of_input_even_inside_a_block(tmp_path):
    code, out, _ = apsi([], tmp_path, "for i in range(2):\n    print(i)")
    assert code == 0 and "0\n" in out and "1\n" in out


def test_repl_syntax_error_then_more_input(tmp_path):
    code, out, err = apsi([], tmp_path, "let = 3\nlet ok = 1\nok + 1\n")
    assert code == 0
    assert "<repl:1>:1:5: expected a name after 'let'" in err
    assert ">>> 2\n" in out


def test_needs_more():
    assert needs_more("fn f():")
    assert needs_more("fn f():\n    return 1")
    assert not needs_more("fn f():\n    return 1\n")
    assert needs_more("let xs = [1,")
    assert not needs_more("let xs = [1,\n 2]")
    assert needs_more('let s = """abc')
    assert not needs_more("1 + 2")
    assert not needs_more("let = 3")       # a plain error: shown at once, not waited on
    assert not needs_more('let s = "abc')   # an unclosed one-line string: more lines cannot close it
    assert not needs_more("if x:\n    let = 3")   # an error inside a block ends the entry at once
    assert needs_more("let x = 1 + \\")
    assert needs_more("try: x")             # catch/finally may follow
    assert needs_more("if x: y")            # elif/else may follow


def test_repl_ends_an_entry_with_an_error_at_once(tmp_path):
    code, out, err = apsi([], tmp_path, 'let s = "abc\nif true:\n    let = 3\nprint(2)\n')
    assert code == 0
    assert "<repl:1>:1:9: this string is never closed" in err
    assert "<repl:2>:2:9: expected a name after 'let'" in err
    assert ">>> 2\n" in out


def test_repl_words_help_exit_quit(tmp_path):
    code, out, _ = apsi([], tmp_path, "help\nprint(1)\nexit\nprint(2)\n")
    assert code == 0
    assert "exit or quit" in out and "1\n" in out and "2\n" not in out
    code, out, _ = apsi([], tmp_path, "quit\nprint(2)\n")
    assert code == 0 and "2\n" not in out
    # a variable of that name is the user's own
    code, out, _ = apsi([], tmp_path, "let help = 5\nhelp\n")
    assert ">>> 5\n" in out


def test_piped_input_runs_as_a_program(tmp_path):
    code, out, err = apsi(["-"], tmp_path, "print(1)\n1/0\nprint(2)\n")
    assert (code, out) == (1, "1\n") and "<stdin>:2:2: error: division by zero" in err
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    full_env["PYTHONPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "-m", "apsi"], cwd=tmp_path, input="print(1)\n1/0\n",
                       capture_output=True, text=True, env=full_env, timeout=60)
    assert (p.returncode, p.stdout) == (1, "1\n") and "division by zero" in p.stderr
    assert ">>>" not in p.stdout
    code, out, _ = apsi(["-", "a", "b"], tmp_path, "print(args)\nprint(input())\n")
    assert (code, out) == (0, '["a", "b"]\nnone\n')      # input() at end of input is none


def test_debug_adds_the_python_traceback(tmp_path):
    (tmp_path / "t.apsi").write_text("fn f(x):\n    return x / 0\nf(1)\n")
    code, _, err = apsi(["t.apsi"], tmp_path)
    assert code == 1 and "File \"" not in err and err.endswith("t.apsi:2:14: error: division by zero\n")
    code, _, err = apsi(["t.apsi"], tmp_path, env={"APSI_DEBUG": "1"})
    assert code == 1
    assert "Traceback (most recent call last):\n  File" in err and "ZeroDivisionError" in err
    assert err.endswith("t.apsi:2:14: error: division by zero\n")
    code, _, err = apsi(["-e", "print(1"], tmp_path, env={"APSI_DEBUG": "1"})
    assert code == 2 and "'(' was never closed" in err


def test_python_m_apsi_is_apsi(tmp_path):
    code, out, _ = apsi(["--version"], tmp_path)
    assert code == 0 and out.startswith("apsi ")
    code, out, _ = apsi(["-e", "1 + 1"], tmp_path)
    assert (code, out) == (0, "2\n")


def test_tab_completes_program_names_builtins_and_keywords():
    from apsi_cli.repl import Repl

    r = Repl.__new__(Repl)          # no readline set-up: only the completer is under test
    from apsi_lang import program

    r.ns = program.new_namespace(".")
    r.ns["learning_rate"] = 0.1
    assert [r.complete("lea", i) for i in range(2)] == ["learning_rate", None]
    assert r.complete("pri", 0) == "print"
    assert r.complete("whi", 0) == "while"
    assert r.complete("zzz", 0) is None


def test_exit_call_leaves_the_repl_with_its_code(tmp_path):
    code, out, err = apsi([], tmp_path, 'print(1)\nexit(4)\nprint(2)\n')
    assert code == 4 and "1\n" in out and "2\n" not in out
    code, out, err = apsi([], tmp_path, 'exit("bye")\nprint(2)\n')
    assert code == 1 and err.endswith("bye\n") and "2\n" not in out
