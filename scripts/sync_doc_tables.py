"""Copy edited docs tables into the documentation source (apsi_lang/builtin_docs.py, apsi_layers/docs/*).

help(NAME) and `apsi doc` read the tables in the code; tests/test_doc_source.py checks that docs/*.md
show the same tables cell for cell. After editing a table in docs/*.md (a new fit option, a new
function), run this to rewrite the matching TABLES in the code, then review the diff:

    python scripts/sync_doc_tables.py            # rewrite
    python scripts/sync_doc_tables.py --check    # exit 1 when they differ (what the test says)

A table is matched by its docs file and header; a new kind of table is added to the source by hand.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCES = ["apsi_lang/builtin_docs.py"] + [f"apsi_layers/docs/{m}.py"
                                           for m in ("nn", "layers", "plot", "units", "web")]


def docs_tables(path):
    from apsi_lang.doc_table import markdown_tables

    return markdown_tables((ROOT / path).read_text(encoding="utf-8"))


def render(tables):
    out = []
    for t, rows in tables:
        out.append(f"    Table({t.doc!r}, {t.kind!r}, {t.options_of!r},\n"
                   f"          {t.header!r},\n          (\n")
        out += [f"              {r!r},\n" for r in rows]
        out.append("          )),\n")
    return "".join(out)


def main(check):
    import importlib

    differ = []
    for rel in SOURCES:
        module = importlib.import_module(rel[:-3].replace("/", "."))
        tables = []
        for k, t in enumerate(module.TABLES):
            in_docs = [rows for header, rows in docs_tables(t.doc) if header == t.header]
            mine = sum(1 for u in module.TABLES[:k] if (u.doc, u.header) == (t.doc, t.header))
            tables.append((t, in_docs[mine] if mine < len(in_docs) else t.rows))
        if any(rows != t.rows for t, rows in tables):
            differ.append(rel)
            if not check:
                text = (ROOT / rel).read_text(encoding="utf-8")
                a = text.index("TABLES = (\n") + len("TABLES = (\n")
                b = text.index("\n)\n", a)
                (ROOT / rel).write_text(text[:a] + render(tables).rstrip("\n") + text[b:], encoding="utf-8")
    print(("differ: " if check else "rewritten: ") + (", ".join(differ) or "none"))
    return 1 if check and differ else 0


if __name__ == "__main__":
    raise SystemExit(main("--check" in sys.argv))
