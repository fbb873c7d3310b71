"""Highlighting: the Pygments lexer (found through its entry point, as Pygments finds it) and the
TextMate grammar of editors/vscode/ over every example and golden program."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apsi_lang.builtins import BUILTINS
from apsi_lang.errors import ApsiSyntaxError
from apsi_lang.parser import Parser

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted([*ROOT.glob("examples/*.apsi"), *ROOT.glob("tests/lang/*.apsi")])
VSCODE = ROOT / "editors" / "vscode"
GRAMMAR = json.loads((VSCODE / "syntaxes" / "apsi.tmLanguage.json").read_text())


def rejected_line(path):
    """The line Apsi's own parser stops at, or None when the program parses."""
    try:
        Parser(path.read_text(encoding="utf-8"), str(path)).parse_program()
    except ApsiSyntaxError as e:
        return e.line
    return None


def test_pygments_finds_the_lexer_through_its_entry_point():
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    assert type(get_lexer_by_name("apsi")).__name__ == "ApsiLexer"
    assert type(get_lexer_for_filename("train.apsi")).__name__ == "ApsiLexer"


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_the_pygments_lexer_marks_errors_only_where_apsi_does(path):
    from pygments.lexers import get_lexer_by_name
    from pygments.token import Error

    text = path.read_text(encoding="utf-8")
    errors, line = [], 1
    for token, value in get_lexer_by_name("apsi").get_tokens(text):
        if token in Error:
            errors.append(line)
        line += value.count("\n")
    assert set(errors) <= {rejected_line(path)}


def test_pygments_tokens_of_a_sample():
    from pygments.lexers import get_lexer_by_name
    from pygments.token import Keyword, Name, Number, String

    text = 'use nn\nfn area(w):\n    let s = f"{w}!"\n    return len([w, 0x1F, 2.5e3])\n'
    tokens = [(t, v) for t, v in get_lexer_by_name("apsi").get_tokens(text) if v.strip()]
    assert (Name.Namespace, "nn") in tokens and (Name.Function, "area") in tokens
    assert (Keyword, "let") in tokens and (Name.Builtin, "len") in tokens
    assert (String.Interpol, "{w}") in tokens
    assert (Number.Hex, "0x1F") in tokens and (Number.Float, "2.5e3") in tokens


def test_the_grammar_highlights_every_builtin():
    pattern = next(r["match"] for r in GRAMMAR["repository"]["expression"]["patterns"]
                   if r.get("name") == "support.function.builtin.apsi")
    listed = set(re.search(r"\\b\((.*?)\)\\b", pattern).group(1).split("|"))
    assert listed == set(BUILTINS)


def _tmgrammar(name):
    """An installed vscode-tmgrammar-test binary: `npm install` in editors/vscode, or on PATH."""
    local = VSCODE / "node_modules" / ".bin" / name
    return str(local) if local.exists() else shutil.which(name)


@pytest.mark.skipif(not _tmgrammar("vscode-tmgrammar-test"), reason="vscode-tmgrammar-test is not installed "
                    "(cd editors/vscode && npm install)")
def test_vscode_tmgrammar_test_passes_the_grammars_assertions():
    result = subprocess.run([_tmgrammar("vscode-tmgrammar-test"), "-g", "syntaxes/apsi.tmLanguage.json",
                             "tests/*.apsi"], cwd=VSCODE, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(not (VSCODE / "node_modules" / "vscode-textmate").exists() or not shutil.which("node"),
                    reason="vscode-textmate is not installed (cd editors/vscode && npm install)")
def test_vscode_textmate_marks_illegal_only_where_apsi_does():
    env = {**os.environ, "NODE_PATH": str(VSCODE / "node_modules")}
    result = subprocess.run(["node", "tests/scan.js", *map(str, PROGRAMS)], cwd=VSCODE, capture_output=True,
                            text=True, timeout=300, env=env)
    found = json.loads(result.stdout)
    assert len(found) == len(PROGRAMS)
    for path in PROGRAMS:
        lines = {line for line, _, _ in found[str(path)]}
        assert lines <= {rejected_line(path)}, (path.name, found[str(path)])
    assert found[str(ROOT / "tests/lang/syntax_char.apsi")]          # `!` is marked


def test_the_grammars_regexes_compile_in_python():
    """Without node: each pattern is a valid regex (written in the subset Oniguruma and Python share)."""
    def patterns(node):
        if isinstance(node, dict):
            for key in ("match", "begin", "end"):
                if key in node:
                    yield node[key]
            for value in node.values():
                yield from patterns(value)
        elif isinstance(node, list):
            for value in node:
                yield from patterns(value)

    found = list(patterns(GRAMMAR))
    assert len(found) > 20
    for pattern in found:
        re.compile(pattern)


def test_the_extension_folder_is_complete():
    package = json.loads((VSCODE / "package.json").read_text())
    assert package["contributes"]["grammars"][0]["path"] == "./syntaxes/apsi.tmLanguage.json"
    assert (VSCODE / package["main"]).exists() and (VSCODE / "language-configuration.json").exists()
    assert '["apsi", "lsp"]' in (VSCODE / "extension.js").read_text()


def test_apsi_e_imports_none_of_the_editor_packages(tmp_path):
    code = ("import sys\nfrom apsi_cli.main import main\ntry:\n    main(['-e', 'print(1)'])\n"
            "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pygments', 'ipykernel', 'jupyter_client', 'zmq', 'pygls', 'lsprotocol')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                            timeout=60)
    assert result.stdout.split() == ["1", "[]"]
