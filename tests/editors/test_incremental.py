"""The language server's checker (apsi_cli/editor/incremental.py): what the real compiler finds, and
only the statements an edit touched checked again."""

import pytest

from apsi_cli.editor.incremental import Checker

from .programs import program


def check(tmp_path, text):
    return Checker(str(tmp_path / "main.apsi"), str(tmp_path)).check(text)[0]


def test_findings_are_those_of_the_compiler(tmp_path):
    text = "fn f(x):\n    return y\nlet y = 1\nprint(z)\nbreak\nlen = 2\n"
    found = [(d.line, d.message.split(" (")[0]) for d in check(tmp_path, text)]
    assert (4, "undefined name 'z'") in found
    assert any(line == 5 and "break" in m for line, m in found)
    assert any(line == 6 and "cannot assign to 'len'" in m for line, m in found)
    assert not any(line == 2 for line, _ in found)          # y is declared below: fine, as in apsi run


def test_a_suggestion_names_a_name_from_elsewhere_in_the_file(tmp_path):
    found = check(tmp_path, "let distance = 1\n\nprint(distanse)\n")
    assert found[0].message == "undefined name 'distanse' (did you mean 'distance'?)"


def test_an_edit_compiles_only_the_statement_it_touched(tmp_path):
    checker = Checker(str(tmp_path / "big.apsi"), str(tmp_path))
    lines = program(2000).split("\n")
    checker.check("\n".join(lines))
    parsed, compiled = len(checker.parsed), len(checker.compiled)
    lines[1000] += "  # an edit"
    found, _ = checker.check("\n".join(lines))
    assert found == []
    assert (len(checker.parsed), len(checker.compiled)) == (parsed + 1, compiled + 1)
    lines.insert(0, "let total_9 = undefined_thing")        # a new top-level statement: 1 new chunk
    found, _ = checker.check("\n".join(lines))
    assert [(d.line, d.message) for d in found] == [(1, "undefined name 'undefined_thing'")]
    assert len(checker.parsed) == parsed + 2


@pytest.mark.parametrize("text", ["if x:\n    pass\nelse:\n    pass\n",
                                  'let s = """\nx = (\n"""\nlet t = 1\n',
                                  "let xs = [\n1,\n2]\nprint(xs)\n", "let a = 1 + \\\n2\n"])
def test_chunks_split_only_where_a_statement_starts(tmp_path, text):
    found = check(tmp_path, "let x = 1\n" + text)
    assert found == []


def test_a_stopped_check_keeps_what_it_did(tmp_path):
    from apsi_cli.editor.incremental import Stopped

    checker = Checker(str(tmp_path / "big.apsi"), str(tmp_path))
    text = program(600)
    asked = []

    def stop():
        asked.append(1)
        return len(asked) > 30          # stop in the middle of the statements

    with pytest.raises(Stopped):
        checker.check(text, stop=stop)
    kept = len(checker.parsed)
    assert 0 < kept
    found, _ = checker.check(text)
    assert found == [] and len(checker.parsed) > kept


def test_brackets_nested_as_deep_as_apsi_allows_are_no_error(tmp_path):
    deep = "(" * 95 + "1" + ")" * 95
    assert check(tmp_path, f"let x = {deep}\nprint(x)\n") == []
