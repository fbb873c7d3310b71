"""The shapes of the documentation source (doc_source.py): a table as docs/*.md shows it, and one
module's documentation. Plain data, importable by the tables themselves without the machinery."""

from .records import record


@record(frozen=True)
class Table:
    doc: str                # the docs file that shows it, e.g. "docs/layers.md"
    kind: str               # what a row documents: "builtin", "layer", "option", …
    options_of: str | None  # for a table of one function's options: that function
    header: tuple
    rows: tuple


@record(frozen=True)
class Source:
    """One module's documentation: its tables, a paragraph about it, and examples by name."""
    module: str             # "nn", "layers", … ("" for Apsi's builtins)
    paragraph: str
    tables: tuple
    examples: dict
    paragraphs: dict = None     # {name: the paragraph docs/ has about it}, for what a table row cannot say


def markdown_tables(text):
    """[(header cells, row cells)] of every table in a Markdown text, as docs/*.md writes them: what the
    docs are held against (tests/test_doc_source.py) and copied from (scripts/sync_doc_tables.py)."""
    import re

    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|[-| ]+\|", lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            found.append((_cells(lines[i]), tuple(_cells(ln) for ln in lines[i + 2:j])))
            i = j
        else:
            i += 1
    return found


def _cells(line):
    import re

    parts = re.split(r"(?<!\\)\|", line.strip())
    return tuple(p.strip() for p in (parts[1:-1] if line.strip().endswith("|") else parts[1:]))
