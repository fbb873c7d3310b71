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

NOT_A_NUMBER = object()
MAX_NUMBER_CHARS = 400      # int() of thousands of digits is slow (and Python caps it at 4300)
_INF = float("inf")
_WORDS = frozenset({"nan", "inf", "+inf", "-inf"})
_NOT_WORDS = frozenset({"nan", "inf", "infinity"})


class Overflow(Exception):
    """A finite literal beyond float64's range."""


def number(cell):
    """The int or float a cell means, NOT_A_NUMBER, or Overflow for a literal like 1e400.

    float() does the parsing (in C: this runs once per cell); what it accepts beyond the rule in the
    module's docstring is then turned away: underscores, non-ASCII digits, blanks other than spaces
    and tabs around the number, and nan/inf spelled otherwise than nan, inf, +inf, -inf."""
    if len(cell) > MAX_NUMBER_CHARS:
        return NOT_A_NUMBER
    try:
        value = float(cell)
    except ValueError:
        return NOT_A_NUMBER
    text = cell.strip(" \t")
    if not text.isascii() or "_" in text or text != text.strip():
        return NOT_A_NUMBER
    if text.isdigit() or (text[0] in "+-" and text[1:].isdigit()):
        return int(text)
    if value - value == 0:          # finite
        return value
    if text in _WORDS:
        return value
    if text.lower().lstrip("+-") in _NOT_WORDS:
        return NOT_A_NUMBER
    raise Overflow


def _with_units(path, names, columns, units, shape, header):
    if units is not True:
        raise ApsiError(f"read_csv: units must be true or false, got {show(units, True)}")
    if QUANTITY is None:
        raise ApsiError("read_csv(units=true) makes quantities: add `use units` to the program first")
    if not header or names is None:
        raise ApsiError("read_csv(units=true) reads the units from the header line (\"speed [km/h]\"); "
                        "it needs header=true")
    names, columns = list(names), list(columns)
    for i, name in enumerate(names):
        m = _UNIT_HEADER.match(name)
        if m is None:
            continue
        label, unit = m.group(1), m.group(2)
        cells = columns[i]
        if any(type(c) not in (int, float) for c in cells):
            raise ApsiError(f"read_csv({show(path, True)}): column {name!r} names a unit but does not hold "
                            "only numbers (an empty or text cell)")
        names[i] = label
        columns[i] = QUANTITY(list(cells), unit) if shape == "columns" else [QUANTITY(c, unit) for c in cells]
    if len(set(names)) != len(names):
        raise ApsiError(f"read_csv({show(path, True)}): with the units taken off, two columns have the same "
                        "name")
    return names, columns


def layout(fn, options):
    """The as= option (`as` is a Python keyword: Apsi passes it as _kw_as; Python callers as "as")."""
    value = "rows"
    for key, v in options.items():
        if key not in ("as", "_kw_as"):
            shown = key[4:] if key.startswith("_kw_") else key      # Apsi's `if=` arrives as _kw_if
            raise ApsiError(f"{fn}() has no parameter named {shown!r}")
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
    from .path_errors import os_error as _os_error
    from .path_errors import path_arg as _path

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


def header_names(fn, path, cells, units=False):
    names = [c.strip() for c in cells]
    labels = [_label(n) for n in names] if units else names       # "speed [km/h]" -> speed
    bad = [n for n in labels if not n.isidentifier() or n.startswith("_")]
    if bad and not units and _UNIT_HEADER.match(bad[0]) and _label(bad[0]).isidentifier():
        raise ApsiError(f"{fn}({show(path, True)}): the header {show(bad[0], True)} names a unit: read the "
                        "file with read_csv(path, units=true) after `use units` (quantities), or with "
                        "header=false")
    if bad:
        raise ApsiError(f"{fn}({show(path, True)}): the header {show(bad[0], True)} is not a field "
                        "name (letters, digits and _, not starting with _ or a digit): read it with "
                        "header=false and take the first row as names")
    if len(set(names)) != len(names):
        raise ApsiError(f"{fn}({show(path, True)}): the header names a column twice")
    return names


def _label(name):
    m = _UNIT_HEADER.match(name)
    return m.group(1) if m else name


def cells_word(n):
    return f"{n} cell" if n == 1 else f"{n} cells"


def read_table(fn, path, raw, header, sep, numbers, units=False):
    """(names or None, columns, lines): every column a list of cells (typed by `numbers`), `lines`
    the line each data row starts on.

    Cells are converted as they are read, so a file of numbers never holds all its cells as strings
    at once (that was most of read_csv's memory). A column that turns out to be text, after numbers
    or empty cells, gets its earlier cells back as written by reading the file once more."""
    names, width, lines, table = None, None, [], None
    for line, cells in records(fn, path, raw, sep):
        if header and names is None:
            names, width = header_names(fn, path, cells, units), len(cells)
            continue
        if width is None:
            width = len(cells)
        if len(cells) != width:
            against = "the header has" if header else "the first row has"
            raise ApsiError(f"{fn}({show(path, True)}): line {line} has {cells_word(len(cells))} but "
                            f"{against} {width}")
        if table is None:
            table = _Table(width, numbers)
        table.add(len(lines), cells)
        lines.append(line)
    if table is None:
        return names, [[] for _ in range(width or 0)], lines
    redo = table.finish(fn, path, lines, names)
    if redo:
        raw.seek(0)
        _restore(fn, path, raw, sep, header, table.columns, redo)
    return names, table.columns, lines


class _Table:
    """Columns filled row by row: numbers while every cell so far is one (or empty), text after."""

    def __init__(self, width, numbers):
        self.columns = [[] for _ in range(width)]
        # per column: the row its text starts at (0 for every column when numbers=false), whether a
        # number was seen, and the first overflowing literal (row, cell)
        self.text_from = [None if numbers else 0] * width
        self.seen = [False] * width
        self.overflow = [None] * width

    def add(self, row, cells):
        columns, text_from = self.columns, self.text_from
        for j, cell in enumerate(cells):
            if text_from[j] is not None:
                columns[j].append(cell)
                continue
            try:
                value = number(cell)
            except Overflow:
                value = _INF
                if self.overflow[j] is None:
                    self.overflow[j] = (row, cell)
            if value is NOT_A_NUMBER:
                if cell.strip():
                    text_from[j] = row          # a column of text stays text
                    columns[j].append(cell)
                    continue
                value = None
            else:
                self.seen[j] = True
            columns[j].append(value)

    def finish(self, fn, path, lines, names):
        """Checks the columns of numbers; returns {column: rows to read again} for columns of text
        whose first cells were taken as numbers or none."""
        redo = {}
        for j, start in enumerate(self.text_from):
            if start is None and not self.seen[j]:
                start = len(lines)              # only empty cells: text (as written)
            if start is None:
                if self.overflow[j] is not None:
                    row, cell = self.overflow[j]
                    raise overflow_error(fn, path, lines[row], names[j] if names else str(j), cell)
            elif start > 0:
                redo[j] = start
        return redo


def _restore(fn, path, raw, sep, header, columns, redo):
    """The first cells of the columns in `redo`, as written, from a second reading of the file."""
    last = max(redo.values())
    recs = records(fn, path, raw, sep)
    if header:
        next(recs)
    for row, (_, cells) in enumerate(recs):
        if row >= last:
            break
        if len(cells) != len(columns):
            raise ApsiError(f"{fn}({show(path, True)}): the file changed while it was read")
        for j, upto in redo.items():
            if row < upto:
                columns[j][row] = cells[j]
    recs.close()


def overflow_error(fn, path, line, column, cell):
    return ApsiError(f"{fn}({show(path, True)}): line {line}, column {column}: {cell.strip()} is beyond "
                     "the range of a float64 (about ±1.8e308); write inf if infinity is meant")


# `use units` sets this to its quantity(value, unit_text): read_csv(units=true) makes quantities of the
# columns whose header names a unit, "speed [km/h]" (the language itself knows nothing of units)
QUANTITY = None
_UNIT_HEADER = re.compile(r"^\s*(.*?\S)\s*\[\s*([^\[\]]*?\S)\s*\]\s*$")


def read_csv(path, header=True, sep=",", numbers=True, units=False, **options):
    """Rows of a CSV file (as="rows", the default): records named by the header line, or lists with
    header=false. as="columns" gives one list per column instead: a record of them (with a header) or
    a list. With numbers=true, a column whose cells are all numbers (or empty: none) holds numbers.
    With units=true (after `use units`), a column named like "speed [km/h]" is named "speed" and holds
    quantities in km/h."""
    shape = layout("read_csv", options)
    check_sep("read_csv", sep)
    with open_csv("read_csv", path) as raw:
        names, columns, _ = read_table("read_csv", path, raw, header, sep, numbers, units is True)
    if units is not False:
        names, columns = _with_units(path, names, columns, units, shape, header)
    if shape == "columns":
        if not header:
            return columns
        return Record(**dict(zip(names or [], columns, strict=True)))
    if header:
        if names is None:
            return []
        return [Record(**dict(zip(names, row, strict=True))) for row in zip(*columns, strict=True)]
    return [list(row) for row in zip(*columns, strict=True)]
