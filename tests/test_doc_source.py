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
    lines = (ROOT / path).read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|[-| ]+\|", lines[i + 1]):
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(cells(lines[j]))
                j += 1
            found.append((cells(lines[i]), rows))
            i = j
        else:
            i += 1
    return found


def cells(line):
    parts = re.split(r"(?<!\\)\|", line.strip())
    return tuple(p.strip() for p in (parts[1:-1] if line.strip().endswith("|") else parts[1:]))


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


def apsi(args, cwd, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120, input=stdin)


def examples():
    return [(src.module, name, code) for src in doc_source.sources() for name, code in src.examples.items()]


@pytest.mark.parametrize("module, name, code", examples(),
                         ids=[f"{m or 'builtins'}.{n}" for m, n, _ in examples()])
def test_every_example_runs(tmp_path, module, name, code):
    p = apsi(["-e", code], tmp_path)
    assert p.returncode == 0, p.stderr


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
    assert "[..., F] → [..., units]" in flat and "\n  bias = true\n" in out
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
