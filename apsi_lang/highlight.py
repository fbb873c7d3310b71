"""A Pygments lexer for Apsi, registered through the `pygments.lexers` entry point (pyproject.toml):
```apsi code blocks in the docs, the Jupyter kernel's language_info and `pygmentize -l apsi` use it.

Imported only by Pygments (never when a program runs). Keywords and builtins come from the language's
own tables, so a new builtin is highlighted without a change here."""

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from .builtins import BUILTINS
from .lexer import KEYWORDS, OPERATORS

CONSTANTS = ("true", "false", "none")
_OPERATOR_CHARS = [op for op in OPERATORS if op not in "()[]{},:.;"]


def _string_states(prefix, quote, token):
    """The rules inside one kind of string: escapes, f-string fields, the closing quote."""
    rules = [(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[ntr0\\\"'\n])", String.Escape),
             (r"\\.", String.Escape)]
    if prefix == "f":
        rules += [(r"\{\{|\}\}", String.Escape), (r"\{[^{}\n]*\}", String.Interpol)]
    multi = len(quote) == 3
    body = r"[^\\{}" + quote[0] + "]+" if prefix == "f" else r"[^\\" + quote[0] + "]+"
    rules += [(quote, token, "#pop"), (body, token), (quote[0], token) if multi else (r"\n", Error)]
    if prefix == "f":
        rules.append((r"[{}]", token))
    return rules


class ApsiLexer(RegexLexer):
    name = "Apsi"
    aliases = ["apsi"]
    filenames = ["*.apsi"]
    mimetypes = ["text/x-apsi"]

    tokens = {
        "root": [
            (r"[ \t\r]+", Whitespace),
            (r"\n", Whitespace),
            (r"\\\n", Text),
            (r"#.*$", Comment.Single),
            (r"(fn)([ \t]+)([^\W\d]\w*)", bygroups(Keyword, Whitespace, Name.Function)),
            (r"(use)([ \t]+)([^\W\d]\w*)", bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (r"(as)([ \t]+)([^\W\d]\w*)", bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            include("strings"),
            include("numbers"),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(sorted(KEYWORDS - set(CONSTANTS)), suffix=r"\b"), Keyword),
            (words(sorted(BUILTINS), prefix=r"(?<!\.)", suffix=r"\b"), Name.Builtin),
            (r"[^\W\d]\w*", Name),
            (words(_OPERATOR_CHARS), Operator),
            (r"[()\[\]{},:.;]", Punctuation),
        ],
        "numbers": [
            (r"0[xX][0-9a-fA-F_]+", Number.Hex),
            (r"0[bB][01_]+", Number.Bin),
            (r"0[oO][0-7_]+", Number.Oct),
            (r"(\d[\d_]*)?\.\d[\d_]*([eE][+-]?\d+)?|\d[\d_]*\.(?![\w.])([eE][+-]?\d+)?|\d[\d_]*[eE][+-]?\d+",
             Number.Float),
            (r"\d[\d_]*", Number.Integer),
        ],
        "strings": [
            (r'[fF]"""', String.Double, "fdq3"), (r"[fF]'''", String.Single, "fsq3"),
            (r'[fF]"', String.Double, "fdq"), (r"[fF]'", String.Single, "fsq"),
            (r'"""', String.Double, "dq3"), (r"'''", String.Single, "sq3"),
            (r'"', String.Double, "dq"), (r"'", String.Single, "sq"),
        ],
        "fdq3": _string_states("f", '"""', String.Double),
        "fsq3": _string_states("f", "'''", String.Single),
        "fdq": _string_states("f", '"', String.Double),
        "fsq": _string_states("f", "'", String.Single),
        "dq3": _string_states("", '"""', String.Double),
        "sq3": _string_states("", "'''", String.Single),
        "dq": _string_states("", '"', String.Double),
        "sq": _string_states("", "'", String.Single),
    }
