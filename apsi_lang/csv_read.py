"""read_csv: CSV files read strictly, as rows or as columns, under the read rules.

Strict where leniency hides mistakes: a quote that never closes is an error naming the line it
opened on (not one cell holding the rest of the file); a cell becomes a number only when it is a
number as a CSV user writes one, and only when its whole column is numbers (a column of text stays
text); a literal too large for a float64 (1e400) is an error naming file, line and column rather than
inf. nn's load_csv uses the same records, number rule and messages.

Numbers: an optional sign, digits with an optional point and fraction (or a point and a fraction), an
optional exponent; spaces and tabs around it are allowed. The non-finite values are spelled as Python,
NumPy (savetxt) and pandas (to_csv) write them: `nan`, `inf`, `-inf` (`+inf`), so files those tools
write read back; other spellings (`NaN`, `Nan`, `INF`, `Infinity`, `NA`) are words, `1_0` is Python
source rather than data, and `0x10` or non-ASCII digits are text.
"""

import csv
import io
import re

from . import permissions
from .errors import ApsiError
from .files import open_checked
from .values import Record, show

_NUMBER = re.compile(r"[ \t]*(?:(?P<int>[+-]?[0-9]+)|[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     r"|(?P<word>[+-]?inf|nan))[ \t]*")
NOT_A_NUMBER = object()
MAX_NUMBER_CHARS = 400      # int() of thousands of digits is slow (and Python caps it at 4300)
_INF = float("inf")


class Overflow(Exception):
    """A finite literal beyond float64's range."""


def number(cell):
    """The int or float a cell means, NOT_A_NUMBER, or Overflow for a literal like 1e400."""
    if len(cell) > MAX_NUMBER_CHARS:
        return NOT_A_NUMBER
    m = _NUMBER.fullmatch(cell)
    if m is None:
        return NOT_A_NUMBER
    if m.group("int") is not None:
        return int(cell)
    value = float(cell)
    if (value == _INF or value == -_INF) and m.group("word") is None:
        raise Overflow
    return value


def layout(fn, options):
    """The as= option (`as` is a Python keyword: Apsi passes it as _kw_as; Python callers as "as")."""
    value = "rows"
    for key, v in options.items():
        if key not in ("as", "_kw_as"):
            raise ApsiError(f"{fn}() has no parameter named {key!r}")
        value = v
    if value not in ("rows", "columns"):
        raise ApsiError(f'{fn}: as= must be "rows" or "columns", got {show(value, True)}')
    return value


def check_sep(fn, sep):
    if type(sep) is not str or len(sep) != 1 or sep in '"\r\n':
        raise ApsiError(f"{fn}: sep must be one character (not a quote or a line break), got "
                        f"{show(sep, True)}")


def open_csv(fn, path):
    """The file, opened in binary after the read permission check; messages name `path` as written."""
    from .data_files import _os_error, _path

    path = _path(fn, path)
    resolved = permissions.require("read", what=f"{fn}({show(path, True)})", path=path)
    try:
        return open_checked(resolved, "rb")
    except OSError as e:
        raise _os_error(fn, path, e) from None


def records(fn, path, raw, sep, first_line=1):
    """(line, cells) for each record of a binary file from its current position (blank lines are not
    records); `line` is where the record starts, counting the current position as `first_line`. A
    byte order mark is skipped at the start of the file only."""
    encoding = "utf-8-sig" if raw.tell() == 0 else "utf-8"
    text = io.TextIOWrapper(raw, encoding=encoding, newline="")
    reader = csv.reader(text, delimiter=sep, strict=True)
    start = first_line
    try:
        for cells in reader:
            line, start = start, first_line + reader.line_num
            if cells:
                yield line, cells
    except csv.Error as e:
        raise ApsiError(f"{fn}({show(path, True)}): line {start}: {_explain(str(e), sep)}") from None
    except UnicodeDecodeError:
        raise ApsiError(f"{fn}({show(path, True)}): line {start} is not UTF-8 text; save the file as "
                        "UTF-8") from None
    finally:
        if not raw.closed:      # the caller owns (and closes) the binary file: let go of it
            text.detach()


def _explain(message, sep):
    if message.startswith("unexpected end of data") or message.startswith("field larger"):
        return ('a quoted cell starts in this record and its closing " never comes (the file ends '
                'inside it); close the quote, and write a " inside a quoted cell as ""')
    if "expected after" in message:
        return (f'a closing " must be followed by {show(sep, True)} or the end of the line; write a '
                '" inside a quoted cell as ""')
    if "NUL" in message:
        return "it holds a NUL character: this is not a text file"
    return message


def header_names(fn, path, cells):
    names = [c.strip() for c in cells]
    bad = [n for n in names if not n.isidentifier() or n.startswith("_")]
    if bad:
        raise ApsiError(f"{fn}({show(path, True)}): the header {show(bad[0], True)} is not a field "
                        "name (letters, digits and _, not starting with _ or a digit): read it with "
                        "header=false and take the first row as names")
    if len(set(names)) != len(names):
        raise ApsiError(f"{fn}({show(path, True)}): the header names a column twice")
    return names


def cells_word(n):
    return f"{n} cell" if n == 1 else f"{n} cells"


def read_table(fn, path, raw, header, sep, numbers):
    """(names or None, columns, lines): every column a list of cells (typed by `numbers`), `lines`
    the line each data row starts on."""
    names, width, lines, rows = None, None, [], []
    for line, cells in records(fn, path, raw, sep):
        if header and names is None:
            names, width = header_names(fn, path, cells), len(cells)
            continue
        if width is None:
            width = len(cells)
        if len(cells) != width:
            against = "the header has" if header else "the first row has"
            raise ApsiError(f"{fn}({show(path, True)}): line {line} has {cells_word(len(cells))} but "
                            f"{against} {width}")
        lines.append(line)
        rows.append(cells)
    columns = [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in range(width or 0)]
    del rows
    if numbers:
        for j, cells in enumerate(columns):
            columns[j] = typed(fn, path, cells, lines, names[j] if names else str(j))
    return names, columns, lines


def typed(fn, path, cells, lines, column):
    """A column as numbers when every cell that is not empty is one (empty cells become none), else
    the column as it is: text. An overflowing literal in a column of numbers is an error."""
    out, seen, overflow = [], False, None
    for i, cell in enumerate(cells):
        try:
            value = number(cell)
        except Overflow:
            overflow = overflow if overflow is not None else i
            value = _INF
        if value is NOT_A_NUMBER:
            if cell.strip():
                return cells                # a column of text stays text
            value = None
        else:
            seen = True
        out.append(value)
    if not seen:
        return cells
    if overflow is not None:
        raise overflow_error(fn, path, lines[overflow], column, cells[overflow])
    return out


def overflow_error(fn, path, line, column, cell):
    return ApsiError(f"{fn}({show(path, True)}): line {line}, column {column}: {cell.strip()} is beyond "
                     "the range of a float64 (about ±1.8e308); write inf if infinity is meant")


def read_csv(path, header=True, sep=",", numbers=True, **options):
    """Rows of a CSV file (as="rows", the default): records named by the header line, or lists with
    header=false. as="columns" gives one list per column instead: a record of them (with a header) or
    a list. With numbers=true, a column whose cells are all numbers (or empty: none) holds numbers."""
    shape = layout("read_csv", options)
    check_sep("read_csv", sep)
    with open_csv("read_csv", path) as raw:
        names, columns, _ = read_table("read_csv", path, raw, header, sep, numbers)
    if shape == "columns":
        if not header:
            return columns
        return Record(**dict(zip(names or [], columns, strict=True)))
    if header:
        if names is None:
            return []
        return [Record(**dict(zip(names, row, strict=True))) for row in zip(*columns, strict=True)]
    return [list(row) for row in zip(*columns, strict=True)]
