"""Class 1: no Python builtin is reachable by name; a declared name read before it is bound is the
Apsi error "'x' is used before it is assigned"."""

import builtins

import pytest

from apsi_lang import permissions, program
from apsi_lang.builtins import BUILTINS

from .helpers import cli, refused, run

UNBOUND = "is used before it is assigned"
PY_NAMES = sorted(n for n in dir(builtins) if not n.startswith("_") and n.isidentifier()
                  and n not in ("True", "False", "None"))


def test_frames_hold_only_apsi_names_and_unspellable_ones():
    for name in program._RUNTIME_BUILTINS:
        assert name in BUILTINS or name.startswith("_"), name


@pytest.mark.parametrize("name", PY_NAMES)
def test_declared_later_never_falls_through_to_python(project, name):
    code = f"{name}\nif false:\n    let {name} = 0"
    refused(code, match=f"'{name}' {UNBOUND}")
    refused(code, None, *permissions.PERMISSIONS, match=f"'{name}' {UNBOUND}")


@pytest.mark.parametrize("code", [
    'open("/etc/passwd")\nif false:\n    let open = 0',
    "if false:\n    fn license():\n        pass\nlicense()",
    "if false:\n    let breakpoint = 1\nbreakpoint()",
    "fn f():\n    return getattr\nlet g = f()\nlet getattr = 1",
    "try:\n    pass\ncatch vars:\n    pass\nvars()",
    "for globals in []:\n    pass\nglobals()",
    'if false:\n    let eval = 0\neval("1")',
    'let f = fn() => compile("1", "x", "eval")\nf()\nlet compile = 0',
    "let xs = [exec for k in [1]]\nlet exec = 0",
    "fn f():\n    if false:\n        let open = 0\n    return open\nf()",
    'while false:\n    let hash = 0\nhash("x")',
    "fn f():\n    try:\n        pass\n    catch setattr:\n        pass\n    return setattr\nf()",
    "fn f():\n    let g = fn() => id\n    let v = g()\n    let id = 0\n    return v\nf()",
    "let print = print\n",
])
def test_issue_reproducers(project, code):
    refused(code, match=UNBOUND)


def test_shadowing_an_apsi_builtin_is_also_unbound_until_assigned(project, capsys):
    refused("print(1)\nlet print = 0", match=f"'print' {UNBOUND}")
    run("fn print(x):\n    return x\nlet len = fn(x) => 7\nlet r = print(len([]))")
    run("let r = 1\nlet len = 2\nfn f():\n    return len\nlet s = f()")


def test_through_e_and_use_helpers(project):
    code, out, err = cli(["-e", 'open("/etc/hostname")\nif false:\n    let open = 0'], project)
    assert code == 1 and UNBOUND in err and "File \"" not in err
    (project / "helpers.apsi").write_text("fn leak():\n    return eval\nif false:\n    let eval = 0\n")
    (project / "main.apsi").write_text('use helpers\nprint(leak()("1+1"))\n')
    code, out, err = cli(["main.apsi"], project)
    assert code == 1 and f"'eval' {UNBOUND}" in err and out == ""
    code, out, err = cli(["--allow-all", "main.apsi"], project)
    assert code == 1 and f"'eval' {UNBOUND}" in err and out == ""


def test_through_the_repl(project):
    code, out, err = cli(["-i"], project, stdin="if false:\n    let exec = 0\n\nexec\n"
                                           "fn f():\n    return open\n    let open = 1\n\nf()\nprint(2)\n")
    assert "undefined name 'exec'" in err and f"'open' {UNBOUND}" in err and "2" in out


def test_python_builtins_stay_reachable_with_python_only_through_pyimport(project, capsys):
    run('print(pyimport("builtins").len([1, 2]))', "python")
    assert capsys.readouterr().out == "2\n"


def test_a_modules_unbound_name_never_falls_through_even_with_python(project):
    (project / "helpers.apsi").write_text("if false:\n    let eval = 0\n    let open = 1\n")
    (project / "main.apsi").write_text('use helpers\nprint(eval("1 + 1"))\n')
    for flags in ([], ["--allow-python"], ["--allow-all"]):
        code, out, err = cli([*flags, "main.apsi"], project)
        assert code == 1 and f"'eval' {UNBOUND}" in err and out == "", (flags, err)


@pytest.mark.parametrize("name", ["print", "len", "str", "range", "enumerate", "zip", "set", "type"])
def test_apsis_own_builtins_are_unbound_too_before_their_let(project, name):
    refused(f"{name}\nif false:\n    let {name} = 0", match=f"'{name}' {UNBOUND}")
    refused(f"fn f():\n    return {name}\nlet g = f()\nlet {name} = 1", match=f"'{name}' {UNBOUND}")


@pytest.mark.parametrize("code", [
    "fn f(x=open):\n    return x\nif false:\n    let open = 0",           # a default value
    "let g = fn(x=exec) => x\nif false:\n    let exec = 0",
    "let xs = [1 for k in [vars]]\nlet vars = 0",                         # a comprehension's source
    "let r = {a: locals}\nlet locals = 0",                                # a record literal
    "let m = {(memoryview): 1}\nlet memoryview = 0",                      # a map key
    'print(f"{dir}")\nlet dir = 0',                                      # an f-string field
    "let a, b = delattr, 1\nlet delattr = 0",
    "if false:\n    let __import__ = 0",
])
def test_more_places_a_name_is_read(project, code):
    message = refused(code) if "__import__" not in code else None
    if message is not None:
        assert UNBOUND in message, message
    else:
        from apsi_lang.errors import ApsiSyntaxError

        with pytest.raises(ApsiSyntaxError):
            run(code)
