"""Source text -> tokens, with Python-style INDENT/DEDENT and `;` as a statement end.

Newlines inside (), [] and {} continue the line. A token keeps its 1-based line and column so every
syntax error can point at the exact place.
"""

from .errors import ApsiSyntaxError

KEYWORDS = {
    "let", "fn", "return", "if", "elif", "else", "for", "in", "while", "break", "continue",
    "true", "false", "none", "and", "or", "not", "try", "catch", "finally", "use", "assert", "pass",
}

# Longest first, so `**=` wins over `**` and `*`.
OPERATORS = sorted("""
    ... **= //= >>= <<= => == != <= >= += -= *= /= %= @= &= |= ^= ** // << >>
    + - * / % @ < > = ( ) [ ] { } , : . ; & | ^ ~
""".split(), key=len, reverse=True)

OPENERS = {"(": ")", "[": "]", "{": "}"}
DIGITS = frozenset("0123456789")
MAX_INDENT_LEVELS = 100
MAX_BRACKET_DEPTH = 100
BLOCK_WORDS = {"if", "elif", "else", "for", "while", "fn", "try", "catch", "finally"}
CLOSERS = {")", "]", "}"}


class Token:
    """kind: NAME KEYWORD NUMBER STRING FSTRING OP NEWLINE INDENT DEDENT EOF"""

    __slots__ = ("kind", "value", "line", "col")

    def __init__(self, kind, value, line, col):
        self.kind, self.value, self.line, self.col = kind, value, line, col

    def __repr__(self):
        return f"Token({self.kind}, {self.value!r}, {self.line}:{self.col})"


class Lexer:
    def __init__(self, source, filename="<input>"):
        self.src = source
        self.filename = filename
        self.lines = source.split("\n")
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.tokens = []
        self.indents = [0]
        self.chars = [0]     # each indent's length in characters, a tab counted as one (see indentation)
        self.brackets = []   # (char, line, col) of open brackets

    def error(self, message, line=None, col=None, incomplete=False):
        line = line or self.line
        col = col or (self.pos - self.line_start + 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        err = ApsiSyntaxError(message, self.filename, line, col, text)
        err.incomplete = incomplete
        raise err

    def add(self, kind, value, start):
        self.tokens.append(Token(kind, value, self.line, start - self.line_start + 1))

    def tokenize(self):
        at_line_start = True
        src = self.src
        while self.pos < len(src):
            if at_line_start and not self.brackets:
                if self.indentation():
                    continue
                at_line_start = False
            c = src[self.pos]
            if c == "\n":
                if not self.brackets:      # inside (), [] and {} the line continues
                    self.newline_token()
                self.pos += 1
                self.line += 1
                self.line_start = self.pos
                at_line_start = not self.brackets
            elif c in " \t\r":
                self.pos += 1
            elif c == "#":
                while self.pos < len(src) and src[self.pos] != "\n":
                    self.pos += 1
            elif c == "\\" and src.startswith("\n", self.pos + 1):
                self.pos += 2
                self.line += 1
                self.line_start = self.pos
            elif c == "\\" and self.pos + 1 == len(src):
                self.error("'\\' at the end of the input: the line it continues is missing",
                           incomplete=True)
            elif c in DIGITS or (c == "." and self.pos + 1 < len(src) and src[self.pos + 1] in DIGITS):
                self.number()
            elif c.isidentifier():
                self.name()
            elif c in "\"'":
                self.string(self.pos, fmt=False)
            else:
                self.operator()
        if self.brackets:
            ch, line, col = self.brackets[-1]
            self.error(f"'{ch}' was never closed", line, col, incomplete=True)
        self.newline_token()
        while len(self.indents) > 1:
            self.indents.pop()
            self.add("DEDENT", None, self.pos)
        self.add("EOF", None, self.pos)
        return self.tokens

    def newline_token(self, value=None):
        if self.tokens and self.tokens[-1].kind not in ("NEWLINE", "INDENT", "DEDENT"):
            self.add("NEWLINE", value, self.pos)

    def indentation(self):
        """Measure a new line's indent; returns True if the line is blank (skipped)."""
        src, p = self.src, self.pos
        width = 0
        start = p
        while p < len(src) and src[p] in " \t":
            width += 8 - width % 8 if src[p] == "\t" else 1
            p += 1
        chars = p - start
        if p >= len(src) or src[p] in "\n#\r":
            if p < len(src) and src[p] == "#":
                while p < len(src) and src[p] != "\n":
                    p += 1
            self.pos = p
            if p < len(src):
                self.pos += 1
                self.line += 1
                self.line_start = self.pos
            return True
        self.pos = p
        if width > self.indents[-1]:
            self.same_either_way(chars > self.chars[-1])
            if self.tokens and self.tokens[-1].kind == "NEWLINE" and self.tokens[-2].value == ":":
                if len(self.indents) > MAX_INDENT_LEVELS:
                    self.error(f"blocks are nested too deeply (more than {MAX_INDENT_LEVELS} levels): "
                               "move the inner part into a function")
                self.indents.append(width)
                self.chars.append(chars)
                self.add("INDENT", None, p)
            else:
                self.missing_colon()
                self.error("unexpected indent: only a block after a line ending in ':' is indented")
        while width < self.indents[-1]:
            self.indents.pop()
            self.chars.pop()
            self.add("DEDENT", None, p)
        if width != self.indents[-1]:
            self.error("this line's indentation does not match any enclosing block")
        self.same_either_way(chars == self.chars[-1])
        return False

    def same_either_way(self, agrees):
        """Tabs and spaces mixed so that the block structure depends on a tab's width (8 here, 4 in
        many editors: what looks like one block is two) is refused, as Python does (TabError)."""
        if not agrees:
            self.error("this line's indentation mixes tabs and spaces unlike the lines above it, so "
                       "where its block is depends on a tab's width: indent with spaces only (or tabs "
                       "only)", col=1)

    def missing_colon(self):
        """An indented line after `if x` (no ':'): point at the end of the line above."""
        if not self.tokens or self.tokens[-1].kind != "NEWLINE" or self.tokens[-1].value == ";":
            return
        line = self.tokens[-2].line
        first = next((t for t in self.tokens if t.line == line and t.kind not in ("INDENT", "DEDENT")),
                     None)
        if first is not None and first.kind == "KEYWORD" and first.value in BLOCK_WORDS:
            end = len(self.lines[line - 1].split("#")[0].rstrip()) + 1
            self.error(f"expected ':' at the end of the '{first.value}' line", line, end)

    def number(self):
        src, start = self.src, self.pos
        p = start
        if src.startswith(("0x", "0X", "0b", "0B", "0o", "0O"), p):
            base = {"x": 16, "b": 2, "o": 8}[src[p + 1].lower()]
            p += 2
            while p < len(src) and (src[p].isalnum() or src[p] == "_"):
                p += 1
            text = src[start:p]
            try:
                value = int(text.replace("_", ""), base)
            except ValueError:
                self.error(f"bad number {text!r}")
        else:
            while p < len(src) and (src[p] in DIGITS or src[p] == "_"):
                p += 1
            is_float = False
            if p < len(src) and src[p] == "." and not src.startswith("..", p):
                if not (p + 1 < len(src) and (src[p + 1].isalpha() or src[p + 1] == "_")):
                    is_float = True
                    p += 1
                    while p < len(src) and (src[p] in DIGITS or src[p] == "_"):
                        p += 1
            if p < len(src) and src[p] in "eE":
                q = p + 1
                if q < len(src) and src[q] in "+-":
                    q += 1
                if q < len(src) and src[q] in DIGITS:
                    is_float = True
                    p = q
                    while p < len(src) and src[p] in DIGITS:
                        p += 1
            text = src[start:p]
            if p < len(src) and (src[p].isalnum() or src[p] == "_"):
                q = p
                while q < len(src) and (src[q].isalnum() or src[q] == "_"):
                    q += 1
                self.pos = p
                self.error(f"bad number {src[start:q]!r}: a name cannot start with a digit")
            if "__" in text or text.endswith("_") or "_." in text or "._" in text or "_e" in text.lower():
                self.error(f"bad number {text!r}: '_' may only separate digits")
            try:
                value = float(text.replace("_", "")) if is_float else _big_int(text.replace("_", ""))
            except ValueError:
                self.error(f"bad number {text!r}")
        self.pos = p
        self.add("NUMBER", value, start)

    def name(self):
        src, start = self.src, self.pos
        p = start
        while p < len(src) and ("a" + src[p]).isidentifier():
            p += 1
        word = src[start:p]
        if word in ("f", "F") and p < len(src) and src[p] in "\"'":
            self.pos = p
            self.string(start, fmt=True)
            return
        self.pos = p
        self.add("KEYWORD" if word in KEYWORDS else "NAME", word, start)

    def string(self, start, fmt):
        src = self.src
        quote = src[self.pos]
        triple = src.startswith(quote * 3, self.pos)
        delim = quote * 3 if triple else quote
        self.pos += len(delim)
        start_line, start_col = self.line, start - self.line_start + 1
        parts = []
        while True:
            if self.pos >= len(src):
                self.error("this string is never closed", start_line, start_col, incomplete=triple)
            c = src[self.pos]
            if src.startswith(delim, self.pos):
                self.pos += len(delim)
                break
            if c == "\n":
                if not triple:
                    self.error("this string is never closed (use \\n or a \"\"\"triple-quoted\"\"\" string "
                               "for several lines)", start_line, start_col)
                self.line += 1
                self.line_start = self.pos + 1
            if c == "\\" and not fmt:
                parts.append(self.escape())
                continue
            if c == "\\" and fmt:
                # keep escapes raw in f-strings; the parser decodes literal parts
                parts.append(src[self.pos:self.pos + 2])
                if src.startswith("\\\n", self.pos):
                    self.line += 1
                    self.line_start = self.pos + 2
                self.pos += 2
                continue
            parts.append(c)
            self.pos += 1
        tok = Token("FSTRING" if fmt else "STRING", "".join(parts), start_line, start_col)
        self.tokens.append(tok)

    def escape(self):
        src, p = self.src, self.pos
        if p + 1 >= len(src):
            self.error("a string ends in a lone backslash")
        c = src[p + 1]
        simple = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "\n": ""}
        if c in simple:
            self.pos += 2
            if c == "\n":
                self.line += 1
                self.line_start = self.pos
            return simple[c]
        width = {"x": 2, "u": 4, "U": 8}.get(c)
        if width:
            digits = src[p + 2:p + 2 + width]
            try:
                if len(digits) != width:
                    raise ValueError
                ch = chr(int(digits, 16))
            except ValueError:
                self.error(f"bad escape \\{c}{digits}: expected {width} hex digits")
            self.pos += 2 + width
            return ch
        self.error(f"unknown escape \\{c} (known: \\n \\t \\r \\0 \\\\ \\\" \\' \\xHH \\uHHHH)")

    def operator(self):
        src, start = self.src, self.pos
        for word, apsi in (("&&", "and"), ("||", "or")):
            if src.startswith(word, start):
                self.error(f"'{word}' is not an Apsi operator: write '{apsi}'")
        for op in OPERATORS:
            if src.startswith(op, start):
                break
        else:
            c = src[start]
            hint = " (use 'not' for negation)" if c == "!" else ""
            self.error(f"unexpected character {c!r}{hint}")
        if op in OPENERS:
            if len(self.brackets) >= MAX_BRACKET_DEPTH:
                self.error(f"brackets are nested too deeply (more than {MAX_BRACKET_DEPTH} levels): "
                           "split the expression with 'let'")
            self.brackets.append((op, self.line, start - self.line_start + 1))
        elif op in CLOSERS:
            if not self.brackets:
                self.error(f"'{op}' does not close anything")
            opener, line, col = self.brackets.pop()
            if OPENERS[opener] != op:
                self.error(f"'{op}' does not match '{opener}' opened on line {line}")
        self.pos += len(op)
        if op == ";":
            self.newline_token(";")
            return
        self.add("OP", op, start)


def _big_int(digits):
    """int(digits) for any length (Python refuses more than 4300 digits in one go)."""
    if len(digits) <= 4000:
        return int(digits)
    value = 0
    for i in range(0, len(digits), 4000):
        chunk = digits[i:i + 4000]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def tokenize(source, filename="<input>"):
    return Lexer(source, filename).tokenize()
