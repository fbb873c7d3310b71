"""load_csv: a CSV file of numbers straight to float64 tensors, streamed.

The file is opened through apsi_lang's csv_read (the same permission rules as read_csv: inside the
project folder nothing is needed, elsewhere `read`), and read in blocks of whole lines into one array
allocated up front (its row count bounded by the file's line count), so the peak memory is about the
final array plus one block, whatever the file's size. A block without quotes goes to NumPy's C parser
(np.loadtxt); the result is kept only when it cannot differ from the strict reading (every value
finite, every row as wide as the first). Anything else (quotes, nan or inf, a word, a ragged line,
an overflow, a parse error) is read again by csv_read's records and number rule, which accept what
they should and give the message naming line and column.
"""

import csv
import io
import math

import numpy as np

from apsi_lang import csv_read
from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from ..autograd.tensor import Tensor

BLOCK_BYTES = 1 << 18         # small blocks: their passing buffers (text, parser) stay small
_BOM = b"\xef\xbb\xbf"
# a separator NumPy's parser may take: not a digit, point, sign, exponent or blank, which are part of
# numbers or stripped around them
_NOT_FAST_SEP = set("0123456789.+-eE \t")
# NumPy strips every ASCII blank around a number (form feed, vertical tab, \x1c-\x1f); the strict rule
# only spaces and tabs. Blocks with anything but printable ASCII, tabs and line ends take the strict
# reading (bytes.translate finds them at memory speed).
_PLAIN = bytes(range(0x20, 0x7f)) + b"\t\n\r"


# words for a missing or infinite value spelled otherwise than nan, inf, -inf
MISSING_WORDS = ("nan", "inf", "infinity", "na", "n/a", "null", "none")


class _TextColumn(Exception):
    """as="columns" met a cell that is not a number: that column is text, read the columns as lists."""


def load_csv(path, header=True, sep=",", columns=None, **options):
    """A [rows, columns] float64 tensor of a CSV file's numbers. With header=true the first line names
    the columns; columns=["x", "y"] (names, with a header) or [0, 2] (positions) picks some.
    as="columns" gives a record (with a header; else a list) of one tensor per column, and a list of
    the cells for a column of text."""
    shape = csv_read.layout("load_csv", options)
    csv_read.check_sep("load_csv", sep)
    with csv_read.open_csv("load_csv", path) as raw:
        reader = _Reader(path, raw, header, sep, columns, shape)
        try:
            return reader.read()
        except _TextColumn:
            raw.seek(0)
            return _columns_with_text(path, raw, header, sep, reader.picks)


class _Reader:
    def __init__(self, path, raw, header, sep, columns, shape):
        self.path, self.raw, self.header, self.sep = path, raw, header, sep
        self.wanted, self.shape = columns, shape
        self.names, self.width, self.picks, self.out, self.n, self.limit = [], None, None, None, 0, 0
        self.fast = sep not in _NOT_FAST_SEP

    # ---- the whole file ---------------------------------------------------------------------------

    def read(self):
        self.limit = _line_bound(self.raw)
        start = self._first_line()
        if start is None:               # the first record is not one plain line: all strict, from the top
            self._slow(0, 1)
        else:
            self._blocks(*start)
        if not self.n:
            raise ApsiError(f"load_csv({show(self.path, True)}): the file has no data rows")
        data = self.out[:self.n]
        return self._result(data if self.n > 0.9 * self.limit else data.copy(order="K"))

    def _first_line(self):
        """Reads the first non-blank line as the header (or the first row) when it is a whole record;
        returns where the data starts, (byte offset, line), or None to read all strictly."""
        raw, offset, line = self.raw, 0, 1
        raw.seek(0)
        text = raw.readline()
        if text.startswith(_BOM):
            offset, text = len(_BOM), text[len(_BOM):]
        while text and not text.strip(b"\r\n"):
            offset, line, text = offset + len(text), line + 1, raw.readline()
        if not text:
            return offset, line
        try:
            cells = next(csv.reader([text.decode("utf-8")], delimiter=self.sep, strict=True))
        except (csv.Error, UnicodeDecodeError, StopIteration):
            return None
        self._first(cells)
        return (offset + len(text), line + 1) if self.header else (offset, line)

    def _first(self, cells):
        """The first record: the header's names (or the first row's width) and the output array."""
        if self.header:
            self.names = csv_read.header_names("load_csv", self.path, cells)
        self.width = len(cells)
        self.picks = _picks(self.path, self.wanted, self.names, self.width)
        self.out = np.empty((self.limit, len(self.picks)), dtype=np.float64,
                            order="F" if self.shape == "columns" else "C")

    def _result(self, data):
        if self.shape != "columns":
            return Tensor(data)
        tensors = [Tensor(data[:, j]) for j in range(data.shape[1])]
        if not self.names:
            return tensors
        return Record(**{self.names[c]: t for c, t in zip(self.picks, tensors, strict=True)})

    def _blocks(self, offset, line):
        self.raw.seek(offset)
        rest = b""
        while True:
            chunk = self.raw.read(BLOCK_BYTES)
            data = rest + chunk
            if not chunk:
                if data:
                    self._block(data + b"\n", line)
                return
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            if b'"' in block:
                # a quoted cell may span lines (and blocks): the strict records read the rest
                self._slow(offset, line)
                return
            self._block(block, line)
            offset += cut
            line += block.count(b"\n")

    def _block(self, block, line):
        arr = self._fast(block) if self.fast and self.width is not None else None
        if arr is None:
            self._rows(csv_read.records("load_csv", self.path, io.BytesIO(block), self.sep, line))
        else:
            self.out[self.n:self.n + len(arr)] = arr
            self.n += len(arr)

    # ---- NumPy's parser, for blocks of plain numbers -------------------------------------------------

    def _fast(self, block):
        if not block.strip(b"\r\n"):         # blank lines are no records; a line of spaces is one
            return np.empty((0, len(self.picks)))
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
            if b"\r" in block:               # a lone carriage return ends a line for csv only
                return None
        if block.translate(None, _PLAIN):
            return None
        text = block.decode("ascii")
        usecols = None if len(self.picks) == self.width else self.picks
        if usecols is not None and not _even_rows(block, self.sep, self.width):
            return None
        try:
            arr = np.loadtxt(io.StringIO(text), delimiter=self.sep, comments=None, quotechar=None,
                             dtype=np.float64, ndmin=2, usecols=usecols)
        except ValueError:
            return None
        if arr.shape[1] != len(self.picks):
            return None
        with np.errstate(all="ignore"):      # inf - inf, or finite values summing past 1.8e308
            total = arr.sum()
        if not math.isfinite(total) and not (usecols is None and _words_as_written(block, arr, self.sep)):
            return None                      # NaN, Infinity, an overflow…: the strict reading decides
        if usecols is None and self.picks != list(range(self.width)):
            arr = arr[:, self.picks]
        return arr

    # ---- the strict reading ----------------------------------------------------------------------------

    def _slow(self, offset, line):
        self.raw.seek(offset)
        self._rows(csv_read.records("load_csv", self.path, self.raw, self.sep, line))

    def _rows(self, recs):
        for line, cells in recs:
            if self.width is None:
                self._first(cells)
                if self.header:
                    continue
            out, picks, width = self.out, self.picks, self.width
            if len(cells) != width:
                against = "the header has" if self.header else "the first row has"
                raise ApsiError(f"load_csv({show(self.path, True)}): line {line} has "
                                f"{csv_read.cells_word(len(cells))} but {against} {width}")
            if self.n == len(out):           # more records than lines: impossible, but never write past
                raise ApsiError(f"load_csv({show(self.path, True)}): the file changed while it was read")
            out[self.n] = [self._number(line, cells[c], c) for c in picks]
            self.n += 1

    def _number(self, line, cell, c):
        try:
            value = csv_read.number(cell)
        except csv_read.Overflow:
            raise csv_read.overflow_error("load_csv", self.path, line, self._name(c), cell) from None
        if value is csv_read.NOT_A_NUMBER:
            if self.shape == "columns" and self.wanted is None:
                raise _TextColumn
            raise _not_a_number(self.path, line, self._name(c), cell, picked=self.wanted is not None)
        try:
            return float(value)         # an int of 400 digits is no float64
        except OverflowError:
            raise csv_read.overflow_error("load_csv", self.path, line, self._name(c), cell) from None

    def _name(self, c):
        return self.names[c] if self.names else str(c)


def _not_a_number(path, line, column, cell, picked=False):
    word = cell.strip()
    where = f"load_csv({show(path, True)}): line {line}, column {column}"
    if not word:
        return ApsiError(f"{where}: the cell is empty; load_csv needs a number in every cell (write nan "
                         "for a missing value, or read the file with read_csv, which gives none)")
    if word.lower().lstrip("+-") in MISSING_WORDS:
        return ApsiError(f"{where}: {show(cell, True)} is not a number here; write nan, inf or -inf "
                         "(lower case, as Python and NumPy write them)")
    if picked:
        return ApsiError(f"{where}: {show(cell, True)} is not a number (columns= picked it: leave it "
                         "out, or use as=\"columns\" without columns= to get text columns as lists)")
    return ApsiError(f"{where}: {show(cell, True)} is not a number (pick numeric columns with "
                     "columns=[…], or use as=\"columns\" to get text columns as lists)")


def _words_as_written(block, arr, sep):
    """Whether the block's nan and inf values (NumPy also reads NaN, Infinity, -nan, and 1e400 as
    inf) are all spelled nan, inf, -inf or +inf. Every cell is in `arr` (no usecols): with numbers and
    separators deleted, what is left must be made of the words nan and inf alone (e and E go with the
    numbers, so a word holding them, like Infinity, is left in part and fails), no nan has a sign,
    and there are as many infinities as words inf (one more is an overflow)."""
    words = block.translate(None, b"0123456789.+-eE \t\r\n" + sep.encode())
    if words.replace(b"nan", b"").replace(b"inf", b""):
        return False
    if b"-nan" in block or b"+nan" in block:
        return False
    return int(np.isinf(arr).sum()) == block.count(b"inf")


def _line_bound(raw):
    """How many records the file can hold at most: its line count (+1 for a last line without \\n)."""
    raw.seek(0)
    lines = 1
    while chunk := raw.read(BLOCK_BYTES):
        lines += chunk.count(b"\n")
        if b"\r" in chunk:               # csv also ends a line at a lone \r
            lines += chunk.count(b"\r") - chunk.count(b"\r\n")
    return lines


def _even_rows(block, sep, width):
    """Every non-empty line of the block has width-1 separators (np.loadtxt with usecols would not
    notice a ragged line)."""
    b = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(b == 10)
    seps = np.searchsorted(np.flatnonzero(b == ord(sep)), ends)
    per_line = np.diff(seps, prepend=0)
    empty = np.diff(ends, prepend=-1) == 1
    return bool(np.all((per_line == width - 1) | empty))


def _columns_with_text(path, raw, header, sep, picks):
    """as="columns" with a column of text: csv_read's columns (lists), numbers made tensors."""
    names, columns, lines = csv_read.read_table("load_csv", path, raw, header, sep, numbers=True)
    out = []
    for j, cells in enumerate(columns):
        if cells and all(type(v) is str for v in cells):
            out.append(cells)
            continue
        missing = next((i for i, v in enumerate(cells) if v is None), None)
        if missing is not None:
            raise _not_a_number(path, lines[missing], names[j] if names else str(j), "")
        try:
            out.append(Tensor(np.array(cells, dtype=np.float64)))
        except OverflowError:           # an int of 400 digits
            i = next(i for i, v in enumerate(cells) if abs(v) > 1e308)
            raise csv_read.overflow_error("load_csv", path, lines[i], names[j] if names else str(j),
                                          str(cells[i])) from None
    if not header:
        return out
    return Record(**dict(zip(names, out, strict=True)))


def _picks(path, columns, names, width):
    if columns is None:
        return list(range(width))
    if not isinstance(columns, list | tuple) or not columns:
        raise ApsiError("load_csv: columns must be a non-empty list of names or positions, "
                        f"not {show(columns)}")
    picks = []
    for c in columns:
        if type(c) is int and -width <= c < width:
            picks.append(c % width)
        elif type(c) is str and c in names:
            picks.append(names.index(c))
        else:
            known = ", ".join(names) if names else f"positions 0..{width - 1}"
            raise ApsiError(f"load_csv({show(path, True)}): no column {show(c, True)} (columns: {known})")
    return picks
