"""Splitting a program into its top-level statements' lines, without the lexer, so an editor re-checks
only what an edit touched (incremental.py).

A chunk starts at a line that begins in column 0 with code, outside every bracket, string and line
continuation, and that does not go on a statement above (elif, else, catch, finally). The language's
lexer starts a statement there too (no indentation, no open bracket), so parsing chunks one by one
finds what parsing the whole text finds."""

import re

_SCAN = re.compile(r'"""|\'\'\'|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?|#[^\n]*|[()\[\]{}]')
_GOES_ON = re.compile(r"(elif|else|catch|finally)\b")


def split(lines):
    """[(first line index, number of lines)] covering every line, in order."""
    starts, depth, triple, continued = [0], 0, None, False
    for i, line in enumerate(lines):
        if i and depth == 0 and triple is None and not continued and _starts_statement(line):
            starts.append(i)
        depth, triple = _scan(line, depth, triple)
        continued = line.endswith("\\") and triple is None
    starts = sorted(set(starts))
    return [(s, e - s) for s, e in zip(starts, starts[1:] + [len(lines)])]


def _starts_statement(line):
    return bool(line) and line[0] not in " \t#)]}\r" and not _GOES_ON.match(line)


def _scan(line, depth, triple):
    """(bracket depth, open triple quote or None) after `line`."""
    pos = 0
    while True:
        if triple is not None:
            end = line.find(triple, pos)
            if end < 0:
                return depth, triple
            pos, triple = end + 3, None
        m = _SCAN.search(line, pos)
        if m is None:
            return depth, triple
        token, pos = m.group(0), m.end()
        if token in ('"""', "'''"):
            triple = token
        elif token in "([{":
            depth += 1
        elif token in ")]}":
            depth = max(0, depth - 1)
