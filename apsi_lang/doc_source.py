"""The one documentation source: tables of what each builtin, layer, loss, optimizer and option does,
kept in the code beside what they document, and what `help(NAME)`, `apsi doc NAME` (and later the
language server's hover) show. docs/*.md hold the same tables; tests/test_doc_source.py checks that
each table there is, cell for cell, the one here, so the two cannot drift.

A table says which docs file holds it (`doc`), what its rows are (`kind`) and, for a table of one
function's options (fit's, serve_model's), whose they are (`options_of`). A row's first cell names
what it documents, in backticks: `dense(units, …)`, or several names (`len`, `range`).

Apsi's own tables are in builtin_docs.py; an installed module gives its own through an attribute
`docs` of its entry point's factory: the name of a Python module with TABLES, MODULE (one paragraph
about the module), EXAMPLES ({name: Apsi code}) and PARAGRAPHS ({name: the paragraph docs/ has}).
Those are plain data: reading them imports nothing else (help must stay cheap, and start-up fast).
"""

import re

from .doc_table import Source, Table  # noqa: F401  (the shapes of the source, here for its readers)
from .lazy_re import Pattern
from .records import record

_BACKTICKED = Pattern(r"`([^`]*)`")


def names_in(cell):
    """The names a first cell documents: each backticked segment's words that are called (`f(`) or
    stand alone (`len`, `sqrt exp log`), not methods (`x.reshape(`) nor arguments."""
    found = []
    for segment in _BACKTICKED.findall(cell):
        head = segment.split("(", 1)[0]
        if "(" in segment and re.fullmatch(r"[A-Za-z_]\w*", head.strip()):
            found.append(head.strip())
        elif "(" not in segment and re.fullmatch(r"[A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*", segment.strip()):
            found += segment.split()
    return found


def sources():
    """Every Source: Apsi's builtins, then each installed module that has documentation."""
    if not _SOURCES:
        from . import builtin_docs

        _SOURCES.append(builtin_docs.SOURCE)
        for name, module in _module_docs():
            _SOURCES.append(Source(name, module.MODULE, tuple(module.TABLES), dict(module.EXAMPLES),
                                   dict(getattr(module, "PARAGRAPHS", {}))))
    return _SOURCES


_SOURCES = []


def _module_docs():
    import importlib

    from .installed import entry_points
    from .modules import GROUP

    found = []
    for name, ep in sorted(entry_points(GROUP).items()):
        try:
            where = getattr(ep.load(), "docs", None)
            if isinstance(where, str):
                found.append((name, importlib.import_module(where)))
        except Exception:           # a broken plugin's missing docs must not break help for the rest
            continue
    return found


@record
class Entry:
    """What help shows for one name."""
    name: str
    module: str
    paragraph: str | None   # the paragraph docs/ has about it
    rows: list              # (table, row) where the name is documented
    options: list           # (table, row) of a table of its options
    example: str | None


def lookup(name):
    """The Entries documenting `name` (one per module that has it), or []."""
    found = []
    for src in sources():
        if name == src.module and src.module:
            continue
        rows, options = [], []
        for table in src.tables:
            if table.options_of == name:
                options += [(table, row) for row in table.rows]
            elif table.options_of is None:
                rows += [(table, row) for row in table.rows if name in names_in(row[0])]
        paragraph = (src.paragraphs or {}).get(name)
        if rows or options or paragraph:
            found.append(Entry(name, src.module, paragraph, rows, options,
                               src.examples.get(name) or _example_cell(rows)))
    return found


def documented_names():
    """Every name help can show: the modules and the names their tables document."""
    names = {src.module for src in sources() if src.module}
    for src in sources():
        for table in src.tables:
            names.update(table.options_of or n for row in table.rows for n in names_in(row[0]))
    return names


def module_source(name):
    return next((s for s in sources() if s.module == name and name), None)


def _example_cell(rows):
    for table, row in rows:
        for head, cell in zip(table.header, row, strict=False):
            if head.lower() in ("example", "one line") and cell:
                return plain(cell)
    return None


def plain(text):
    """Markdown as a terminal shows it: no backticks, no escaped bars."""
    return text.replace("`", "").replace("\\|", "|")
