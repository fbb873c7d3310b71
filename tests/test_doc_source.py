"""Issue 28: help where the user is. One documentation source in the code (apsi_lang/doc_source.py and
the tables it gathers) that help(NAME), `apsi doc NAME` and docs/*.md show; this file checks that the
docs hold exactly those tables and paragraphs (so they cannot drift), that the defaults the docs write
are the code's, that every example runs, and help as users meet it: in a program, in the REPL, from a
shell, and `fit` typed alone."""

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from apsi_lang import doc_source
from apsi_lang import help as apsi_help

ROOT = Path(__file__).resolve().parent.parent


def docs_tables(path):
    """[(header cells, [row cells])] of every table in a docs file."""
    from apsi_lang.doc_table import markdown_tables

    return [(h, list(rows)) for h, rows in markdown_tables((ROOT / path).read_text(encoding="utf-8"))]


def all_tables():
    return [(src, t) for src in doc_source.sources() for t in src.tables]


def test_every_module_and_the_builtins_have_a_source():
    assert [s.module for s in doc_source.sources()] == ["", "layers", "nn", "plot", "units", "web"]


def test_every_name_a_module_exports_is_documented(tmp_path):
    """help(NAME) answers for each builtin and each name `use nn`, `use layers`, … gives."""
    code = ("from apsi_lang import doc_source, modules, permissions\n"
            "from apsi_lang.builtins import BUILTINS\n"
            "permissions.mark_sandboxed()\n"
            "names = list(BUILTINS) + [n for m in ('nn', 'layers', 'plot', 'units', 'web')\n"
            "                          for n in modules.load(m, '.')]\n"
            "print(sorted(n for n in names if not doc_source.lookup(n)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert p.stdout.strip() == "[]", p.stdout + p.stderr


@pytest.mark.parametrize("doc", sorted({t.doc for _, t in all_tables()}))
def test_the_docs_tables_are_the_sources(doc):
    """Each docs table of a kind the source documents (the same header) is, row for row and cell for
    cell, the source's table; a row added to one and not the other fails here."""
    ours = [t for _, t in all_tables() if t.doc == doc]
    headers = {t.header for t in ours}
    theirs = [(h, rows) for h, rows in docs_tables(doc) if h in headers]
    assert sorted((t.header, list(t.rows)) for t in ours) == sorted(theirs), \
        "a table in the docs and its source differ: after editing the docs, python scripts/sync_doc_tables.py"


def test_the_paragraphs_are_the_docs():
    def flat(text):
        return " ".join(text.split())

    text = flat(" ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))))
    for src in doc_source.sources():
        for name, paragraph in (src.paragraphs or {}).items():
            assert flat(paragraph) in text, (src.module, name)


def _literal(text):
    """A default as the docs write it, when it is a literal (else None: `4F`, `size`, `…`)."""
    words = {"none": "none", "true": "true", "false": "false"}
    if text in words or re.fullmatch(r'-?\d+(\.\d+)?(e-?\d+)?|"[^"]*"|\[[\d, ]*\]', text):
        return words.get(text, text)
    return None


def test_the_defaults_the_docs_write_are_the_codes():
    """`dropout(rate=0.5)` in a table must be what dropout's parameters say (compared as values)."""
    import ast

    def value(text):
        return ast.literal_eval({"none": "None", "true": "True", "false": "False"}.get(text, text))

    checked, wrong = 0, []
    for src, table in all_tables():
        for row in table.rows:
            for name, params in re.findall(r"`([a-z_]\w*)\(([^`]*)\)`", row[0]):
                fn = apsi_help._value_of(doc_source.Entry(name, src.module, None, [], [], None))
                try:
                    code = inspect.signature(fn).parameters if fn is not None else {}
                except (TypeError, ValueError):
                    continue
                for p, default in re.findall(r"(\w+)=([^,)]+)", params):
                    lit = _literal(default.strip())
                    if lit is None or p not in code or code[p].default is inspect.Parameter.empty:
                        continue
                    real = code[p].default
                    checked += 1
                    if value(lit) != (list(real) if isinstance(real, tuple) else real):
                        wrong.append(f"{name}: docs {p}={lit}, code {p}={real!r}")
    assert checked > 100 and wrong == [], wrong


def test_each_option_table_is_the_functions_parameters():
    """An options table (fit's, dense's, adam's, …) names only real parameters, every one that has a
    default (a function taking **options names its own), with the code's default as help shows it."""
    import inspect

    from apsi_lang import builtins  # noqa: F401  (hands help the builtins, whose tables are here too)

    checked, wrong = 0, []
    for src, table in all_tables():
        if table.options_of is None:
            continue
        fn = apsi_help._value_of(doc_source.Entry(table.options_of, src.module, None, [], [], None))
        params = inspect.signature(fn).parameters
        named = {row[0].strip("`"): row[1] for row in table.rows}
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        with_default = [n for n, p in params.items() if p.default is not inspect.Parameter.empty]
        wrong += [f"{table.options_of}: {n} is not a parameter" for n in named if n not in params]
        wrong += [f"{table.options_of}: {n} is missing" for n in with_default if n not in named]
        for n in set(named) & set(with_default):
            checked += 1
            shown = apsi_help._default(params[n].default)
            if named[n] not in (f"`{shown}`", "none" if shown == "none" else f"`{shown}`"):
                wrong.append(f"{table.options_of}: {n} = {named[n]}, code {params[n].default!r}")
    assert checked >= 40 and wrong == [], wrong


def test_predicts_option_table_names_every_option_predict_takes():
    """predict takes **options; the ones it accepts are plan.py's list, and help must show each."""
    from apsi_layers.layers.training.plan import PREDICT_OPTIONS

    table = next(t for _, t in all_tables() if t.options_of == "predict")
    assert [row[0].strip("`") for row in table.rows] == list(PREDICT_OPTIONS)


def test_help_on_a_layer_value_uses_the_name_the_program_wrote(tmp_path):
    """`dropout` is the Python function dropout_layer: help and the REPL say dropout."""
    p = apsi(["-e", "use layers\nhelp(dropout)\ndropout"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("dropout(rate=0.5, name=none)    (use layers)\n"), p.stdout
    assert "<fn dropout(rate=0.5, name=none)>  help(dropout) tells more" in p.stdout


def apsi(args, cwd, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120, input=stdin)


def examples():
    return [(src.module, name, code) for src in doc_source.sources() for name, code in src.examples.items()]


# Run as `apsi -e` runs them (the same grants, a fresh namespace, the program compiled with echo), but
# all of one module's examples in one process: a process per example would cost a second each.
_RUN_EXAMPLES = """
import contextlib, io, json, sys
from pathlib import Path
from apsi_cli.fast import PERM_KEYS
from apsi_cli.runner import build_grants
from apsi_lang import doc_source, permissions, program
permissions.set_current(build_grants(dict.fromkeys(PERM_KEYS), Path.cwd()))
src = next(s for s in doc_source.sources() if s.module == sys.argv[1])
failed = {}
for name, code in src.examples.items():
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            program.compile_source(code, "<-e>", program.new_namespace(str(Path.cwd())), echo=True).run()
        if not out.getvalue().strip():
            failed[name] = "printed nothing"
    except SystemExit as e:                 # exit(0) in an example ends it, not the run
        if e.code not in (0, None):
            failed[name] = f"exit({e.code!r})"
    except BaseException as e:
        failed[name] = f"{type(e).__name__}: {e}"
print(json.dumps(failed))
"""


@pytest.mark.parametrize("module", ["", "nn", "layers", "plot", "units", "web"])
def test_every_example_runs_and_shows_something(tmp_path, module):
    """Every example of a module, each in a fresh namespace, in a folder of its own (examples may
    write files); each must run and print what it shows."""
    p = subprocess.run([sys.executable, "-c", _RUN_EXAMPLES, module], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "{}", p.stdout[-3000:]


@pytest.mark.parametrize("module, name, code", [e for e in examples() if e[1] in ("fit", "print", "dense")],
                         ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_an_example_runs_through_apsi_e(tmp_path, module, name, code):
    p = apsi(["-e", code], tmp_path)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr


_MISSING_EXAMPLES = """
from apsi_lang import doc_source, modules, permissions
from apsi_lang.builtins import BUILTINS
permissions.mark_sandboxed()
srcs = {s.module: s for s in doc_source.sources()}
missing = []
for module, names in [("", list(BUILTINS))] + [(m, list(modules.load(m, "."))) for m in srcs if m]:
    for n in names:
        # a module's own example, or, for a name it re-exports without documenting (nn's `asin`), the
        # builtin's
        own = n in srcs[module].examples
        inherited = not any(e.module == module for e in doc_source.lookup(n)) and n in srcs[""].examples
        if not (own or inherited):
            missing.append(f"{module or 'builtins'}.{n}")
print(" ".join(missing))
"""

_MISSING_OPTION_MEANINGS = """
import inspect
from apsi_lang import doc_source, help, modules, permissions
from apsi_lang.builtins import BUILTINS
permissions.mark_sandboxed()
srcs = {s.module: s for s in doc_source.sources()}
with_table = {(s.module, t.options_of) for s in srcs.values() for t in s.tables if t.options_of}
missing = []
for module, names in [("", BUILTINS)] + [(m, modules.load(m, ".")) for m in srcs if m]:
    for n, fn in names.items():
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        if any(p.default is not p.empty for p in params) and (module, n) not in with_table:
            missing.append(f"{module or 'builtins'}.{n}")
print(" ".join(missing))
"""

def test_every_function_with_options_has_their_meanings(tmp_path):
    """Issue 28: help gives one line per option of each builtin and each name of the modules."""
    p = subprocess.run([sys.executable, "-c", _MISSING_OPTION_MEANINGS], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    missing = p.stdout.split()
    assert missing == [], f"{len(missing)} names have options without a meaning: {missing}"


def test_every_exported_name_has_an_example(tmp_path):
    """Issue 28: help shows an example for each builtin and each name of nn, layers, plot, units, web."""
    p = subprocess.run([sys.executable, "-c", _MISSING_EXAMPLES], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    missing = p.stdout.split()
    assert missing == [], f"{len(missing)} names lack an example: {missing}"


INTERNALS = ("Traceback", "<function", "<class", "apsi_layers", "apsi_lang", "__", "self", "kwargs", "0x")


def test_help_in_a_program_shows_signature_paragraph_options_and_example(tmp_path):
    (tmp_path / "h.apsi").write_text("use layers\nhelp(fit)\nhelp(dense)\nhelp(nn)\n")
    p = apsi(["h.apsi"], tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    flat = " ".join(out.split())
    assert out.startswith("fit(model, params, inputs, targets=none, **options)    (use layers)\n"
                          "fit(model, params, inputs, targets, …) returns a record: params (the trained")
    assert "\noptions (default):\n  loss = required" in out and "\n  epochs = 1: passes over the data" in out
    assert "\nexample:\n  use layers\n" in out
    assert "dense(units, activation=none, bias=true, inputs=none, name=none)    (use layers)" in out
    assert "[..., F] → [..., units]" in flat and "\n  bias = true: whether to add b" in out
    assert "\nuse nn\nfloat64 NumPy tensors" in out and "grad" in out
    assert not [w for w in INTERNALS if w in out], [w for w in INTERNALS if w in out]


def test_apsi_doc_shows_the_same_text(tmp_path):
    program = apsi(["-e", "use layers\nhelp(dense)"], tmp_path)
    shell = apsi(["doc", "dense"], tmp_path)
    assert shell.returncode == 0 and shell.stdout == program.stdout
    missing = apsi(["doc", "no_such_thing"], tmp_path)
    assert missing.returncode == 1 and "no documentation for 'no_such_thing'" in missing.stdout


def test_the_repl_helps_and_shows_a_function_by_its_signature(tmp_path):
    p = apsi(["-i"], tmp_path, stdin="use layers\nfit\nhelp(print)\nhelp(3)\n")
    assert p.returncode == 0, p.stderr
    assert "<fn fit(model, params, inputs, targets=none, **options)>  help(fit) tells more" in p.stdout
    assert 'print(*values, sep=" ", end="\\n", file="stdout")' in p.stdout
    assert "help: no documentation for an int" in p.stdout
    assert "<fn fit>" not in p.stdout and "Traceback" not in p.stdout + p.stderr


def test_help_is_cheap_to_have():
    """Registering help (and help on a builtin) imports no NumPy: `apsi -e` starts as fast as before."""
    code = ("import sys\nfrom apsi_lang.builtins import BUILTINS\nfrom apsi_lang import help\n"
            "t = help.text('print')\nprint('numpy' in sys.modules, 'help' in BUILTINS, 'sep=' in t)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["False", "True", "True"], p.stderr


def test_a_name_that_is_not_defined_is_asked_about_by_name(tmp_path):
    """help(nn) without `use nn` (nn is not a value): the compiler passes the name."""
    p = apsi(["-e", "help(units)"], tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("use units\n"), p.stderr
    p = apsi(["-e", "help(nothing_like_it)"], tmp_path)
    assert p.returncode == 0 and "no documentation for 'nothing_like_it'" in p.stdout
