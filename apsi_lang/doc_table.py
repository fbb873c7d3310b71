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
