"""Apsi's editor results (apsi_cli/editor) as lsprotocol types. Lines and columns: the editor modules
count from 1 in diagnostics and definitions, LSP from 0."""

from lsprotocol import types as T

SEVERITY = {"error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
            "information": T.DiagnosticSeverity.Information}
COMPLETION_KIND = {"keyword": T.CompletionItemKind.Keyword, "function": T.CompletionItemKind.Function,
                   "variable": T.CompletionItemKind.Variable, "module": T.CompletionItemKind.Module,
                   "field": T.CompletionItemKind.Field, "option": T.CompletionItemKind.Property}
SYMBOL_KIND = {"function": T.SymbolKind.Function, "variable": T.SymbolKind.Variable,
               "parameter": T.SymbolKind.Variable, "module": T.SymbolKind.Module}


def diagnostic(d):
    line = max(d.line - 1, 0)
    start = max(d.col - 1, 0)
    end = T.Position(line, max(d.end_col - 1, start + 1))
    return T.Diagnostic(range=T.Range(T.Position(line, start), end), message=d.message,
                        severity=SEVERITY[d.severity], source="apsi")


def name_range(d):
    start = T.Position(d.line - 1, d.col - 1)
    return T.Range(start, T.Position(d.line - 1, d.col - 1 + len(d.name)))


def symbol(d):
    whole = T.Range(T.Position(d.line - 1, 0), T.Position(max(d.end_line, d.line) - 1, 0))
    return T.DocumentSymbol(name=d.name, kind=SYMBOL_KIND[d.kind], range=_covering(whole, name_range(d)),
                            selection_range=name_range(d), detail=d.detail,
                            children=[symbol(c) for c in d.children if c.kind != "parameter"])


def _covering(outer, inner):
    """`outer` grown to hold `inner` (LSP requires a symbol's range to contain its selection range)."""
    end = max((outer.end.line, outer.end.character), (inner.end.line, inner.end.character))
    return T.Range(outer.start, T.Position(*end))


def completion(label, kind):
    return T.CompletionItem(label=label, kind=COMPLETION_KIND.get(kind, T.CompletionItemKind.Text))
