"""f"…{expr:spec}…" -> an FString node: literal pieces and parsed expressions.

The format spec is static text applied with Python's format(value, spec); it can't reach attributes,
so it is safe in the sandbox (unlike str.format, which Apsi code cannot call). `{x!r}` shows the value
as repr does, `{x!s}` as str does, and `{x=}` writes the expression's text before its value.

Every error inside the braces points at its real place in the source (line and column of the
f-string's file, also in triple-quoted f-strings that span lines).
"""

from . import syntax as S
from .errors import ApsiSyntaxError

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "\n": ""}
CONVERSIONS = {"r": "repr", "s": "str"}


class _Place:
    """Maps an index in the f-string's raw text to the source (line, col)."""

    def __init__(self, tok, lines):
        self.tok = tok
        self.lines = lines
        line = lines[tok.line - 1] if 0 < tok.line <= len(lines) else ""
        rest = line[tok.col:]                     # after the f
        self.prefix = 1 + (3 if rest[:3] in ('"""', "'''") else 1)
        self.raw = tok.value

    def at(self, i):
        before = self.raw[:i]
        newlines = before.count("\n")
        if not newlines:
            return self.tok.line, self.tok.col + self.prefix + i
        return self.tok.line + newlines, i - before.rfind("\n")

    def fail(self, message, i, filename, incomplete=False):
        line, col = self.at(i)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        err = ApsiSyntaxError(message, filename, line, col, text)
        err.incomplete = incomplete
        raise err


def parse_fstring(tok, filename, lines):
    raw = tok.value
    place = _Place(tok, lines)
    parts, buf, i = [], [], 0

    def fail(msg, offset=0):
        place.fail(msg, offset, filename)

    while i < len(raw):
        c = raw[i]
        if c == "\\":
            nxt = raw[i + 1] if i + 1 < len(raw) else ""
            if nxt not in _ESCAPES:
                fail(f"unknown escape \\{nxt} in f-string", i)
            buf.append(_ESCAPES[nxt])
            i += 2
        elif raw.startswith("{{", i) or raw.startswith("}}", i):
            buf.append(c)
            i += 2
        elif c == "}":
            fail("single '}' in f-string: write '}}' for a brace", i)
        elif c == "{":
            end, colon = _field_end(raw, i + 1)
            if end is None:
                fail("'{' in f-string is never closed: write '{{' for a brace (a string inside the braces "
                     "takes the other quote: f\"{m['k']}\")", i)
            expr_text = raw[i + 1:colon if colon is not None else end]
            spec = raw[colon + 1:end] if colon is not None else ""
            expr_text, conv = _conversion(expr_text, place, i + 1, filename)
            expr_text, echo = _self_documenting(expr_text)
            if not expr_text.strip():
                fail("empty expression in f-string braces", i)
            if echo is not None:
                buf.append(echo)           # {x=}: the text "x=" and then the value
                if conv is None and not spec:
                    conv = "r"             # as in Python: repr unless a spec or conversion is given
            if buf:
                parts.append("".join(buf))
                buf = []
            expr = _parse_expr(expr_text, place, i + 1, filename)
            if "{" in spec:          # f"{x:>{width}}": fields inside the spec
                spec = _spec_parts(spec, place, colon + 1, filename, fail)
            parts.append(S.FPart(tok.line, tok.col, expr, spec, conv))
            i = end + 1
        else:
            buf.append(c)
            i += 1
    if buf:
        parts.append("".join(buf))
    return S.FString(tok.line, tok.col, parts)


def _conversion(text, place, offset, filename):
    """`x!r` -> ("x", "r"); `a != b` is left alone."""
    body = text.rstrip()
    if len(body) >= 2 and body[-2] == "!" and body[-1].isalpha():
        letter = body[-1]
        if letter not in CONVERSIONS:
            place.fail(f"'!{letter}' is not an f-string conversion in Apsi: use !r (as repr shows it) "
                       "or !s (as str shows it)", offset + len(body) - 2, filename)
        return body[:-2], letter
    if body.endswith("!"):
        place.fail("'!' must be followed by r or s in an f-string: {x!r}", offset + len(body) - 1, filename)
    return text, None


def _self_documenting(text):
    """`x + 1 =` (from {x + 1=}) -> ("x + 1 ", "x + 1 ="): the text to show before the value."""
    body = text.rstrip()
    if body.endswith("=") and not body.endswith(("==", "!=", "<=", ">=")):
        return body[:-1], text
    return text, None


def _spec_parts(spec, place, offset, filename, fail):
    """A format spec with {expr} fields -> a list of str pieces and FParts (without specs)."""
    parts, i, start = [], 0, 0
    while i < len(spec):
        if spec[i] == "{":
            end, colon = _field_end(spec, i + 1)
            if end is None or colon is not None:
                fail("a field inside a format spec must be a plain {expression}", offset + i)
            if start < i:
                parts.append(spec[start:i])
            text = spec[i + 1:end]
            if not text.strip():
                fail("empty expression in f-string braces", offset + i)
            expr = _parse_expr(text, place, offset + i + 1, filename)
            parts.append(S.FPart(place.tok.line, place.tok.col, expr, "", None))
            i = start = end + 1
        elif spec[i] == "}":
            fail("single '}' in a format spec", offset + i)
        else:
            i += 1
    if start < len(spec):
        parts.append(spec[start:])
    return parts


def _field_end(raw, start):
    """Index of the '}' closing a field and of its top-level ':' (or None), skipping nested brackets."""
    depth, colon, i, quote = 0, None, start, None
    while i < len(raw):
        c = raw[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "}":
            if depth == 0:
                return i, colon
            depth -= 1
        elif c == ":" and depth == 0 and colon is None:
            colon = i
        i += 1
    return None, None


def _parse_expr(text, place, offset, filename):
    from .parser import Parser

    stripped = text.lstrip()          # f"{ x }": spaces inside the braces are fine
    offset += len(text) - len(stripped)
    # Inside the braces of a triple-quoted f-string, lines continue as inside brackets: lex it as one
    # line (same length, so an index in it is an index in the raw text; place.at finds the real line).
    stripped = stripped.replace("\n", " ")

    def raw_index(line, col):
        return offset + col - 1

    try:
        p = Parser(stripped, filename)
    except ApsiSyntaxError as e:          # from the lexer: move it to the real place
        place.fail(e.message, raw_index(e.line, e.col), filename)
    for t in p.toks:                      # point positions at the f-string's place in the source
        t.line, t.col = place.at(raw_index(t.line, t.col))
    p.lines = place.lines
    expr = p.expr()
    if not p.at("NEWLINE") and not p.at("EOF"):
        p.fail(f"unexpected {p.tok.value!r} in f-string expression")
    return expr
