"""A source line and the caret under one of its columns, as errors show them.

The caret must stand under the character in a terminal: a wide character (CJK, most emoji) takes two
cells and a combining accent none, so the padding counts cells, not characters; tabs are copied. A
line longer than a screen (generated data, a minified expression) is cut to a window around the caret,
with … where text was left out, so one error cannot print a hundred thousand characters twice.
"""

import unicodedata

WINDOW = 100            # characters of a long line shown around the caret
BEFORE = 40             # of which before it


def _pad(text):
    """Blanks as wide on a terminal as `text`: tabs kept, wide characters two cells, combining none."""
    out = []
    for c in text:
        if c == "\t":
            out.append(c)
        elif unicodedata.combining(c):
            continue
        else:
            out.append("  " if unicodedata.east_asian_width(c) in "WF" else " ")
    return "".join(out)


def caret_lines(text, index):
    """(the line to show, the blanks that put a caret under text[index]); index may be len(text)."""
    index = min(max(index, 0), len(text))
    if len(text) > WINDOW:
        start = max(0, min(index - BEFORE, len(text) - WINDOW))
        end = start + WINDOW
        head = "…" if start > 0 else ""
        tail = "…" if end < len(text) else ""
        text, index = head + text[start:end] + tail, index - start + len(head)
    return text, _pad(text[:index])
