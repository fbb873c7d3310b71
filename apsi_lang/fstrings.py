"""f"…{expr:spec}…" -> an FString node: literal pieces and parsed expressions.

The format spec is static text applied with Python's format(value, spec); it can't reach attributes,
so it is safe in the sandbox (unlike str.format, which Apsi code cannot call).
"""

from . import syntax as S
from .errors import ApsiSyntaxError

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "\n": ""}


def parse_fstring(tok, filename, lines):
    raw = tok.value
    parts, buf, i = [], [], 0

    def fail(msg, offset=0):
        text = lines[tok.line - 1] if 0 < tok.line <= len(lines) else None
        raise ApsiSyntaxError(msg, filename, tok.line, tok.col + 2 + offset, text)

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
                fail("'{' in f-string is never closed: write '{{' for a brace", i)
            expr_text = raw[i + 1:colon if colon is not None else end]
            spec = raw[colon + 1:end] if colon is not None else ""
            if not expr_text.strip():
                fail("empty expression in f-string braces", i)
            if buf:
                parts.append("".join(buf))
                buf = []
            expr = _parse_expr(expr_text, tok, i + 1, filename, lines)
            if "{" in spec:          # f"{x:>{width}}": fields inside the spec
                spec = _spec_parts(spec, tok, colon + 1, filename, lines, fail)
            parts.append(S.FPart(tok.line, tok.col, expr, spec))
            i = end + 1
        else:
            buf.append(c)
            i += 1
    if buf:
        parts.append("".join(buf))
    return S.FString(tok.line, tok.col, parts)


def _spec_parts(spec, tok, offset, filename, lines, fail):
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
            expr = _parse_expr(text, tok, offset + i + 1, filename, lines)
            parts.append(S.FPart(tok.line, tok.col, expr, ""))
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


def _parse_expr(text, tok, offset, filename, lines):
    from .parser import Parser

    stripped = text.lstrip()          # f"{ x }": spaces inside the braces are fine
    offset += len(text) - len(stripped)
    p = Parser(stripped, filename)
    # point positions at the f-string's place in the real source line
    for t in p.toks:
        t.line = tok.line
        t.col = tok.col + 2 + offset + t.col - 1
    p.lines = lines
    expr = p.expr()
    if not p.at("NEWLINE") and not p.at("EOF"):
        p.fail(f"unexpected {p.tok.value!r} in f-string expression")
    return expr
