"""csv_to_npy: a CSV file of numbers too large for memory, streamed into .npy shards.

The reading is load_csv's (apsi_layers/nn/io/csv_io.py: NumPy's parser for plain blocks, csv_read's
strict records and messages for anything else), but the rows go to a buffer of one shard plus one
block instead of an array of the whole file: when the buffer holds a shard's rows they are written
(atomically, under the write permission) and the buffer starts again. Memory stays about one shard.
"""

import math
import os

import numpy as np

from apsi_lang import csv_read, permissions
from apsi_lang.errors import ApsiError
from apsi_lang.values import show
from apsi_layers.nn.io import csv_io

DTYPES = {"float32": np.float32, "float64": np.float64}


class _Sharder(csv_io._Reader):
    def __init__(self, path, raw, header, sep, columns, out, rows, dtype, missing):
        super().__init__(path, raw, header, sep, columns, None)
        self.prefix, self.shard_rows, self.dtype, self.written = out, rows, dtype, []
        self.missing = missing

    def _number(self, line, cell, c):
        """A cell written as one of `missing` is NaN (impute() fills it). NumPy's parser refuses an
        empty cell or a word, so only the strict reading meets them."""
        word = cell.strip(" \t")
        if word in self.missing:
            return math.nan
        try:
            return super()._number(line, cell, c)
        except ApsiError:
            if _is_number(cell):            # (an overflow: load_csv's message says it)
                raise
            raise _not_a_number(f"load_csv({show(self.path, True)}): line {line}, column {self._name(c)}",
                                cell, word) from None

    def _bound(self):
        """One shard plus one block of lines (a block never holds more lines than half its bytes);
        no more shard than the file has records (each takes 2 bytes at least): shard_rows=10**12
        must not ask for 16 TB of buffer."""
        rows = min(self.shard_rows, os.fstat(self.raw.fileno()).st_size // 2 + 2)
        return rows + csv_io.BLOCK_BYTES // 2 + 2

    def _block(self, block, line):
        super()._block(block, line)
        self._spill()

    def _rows(self, recs):
        super()._rows(self._room(recs))

    def _room(self, recs):
        for rec in recs:
            if self.out is not None and self.n == len(self.out):
                self._spill()
            yield rec

    def _spill(self, last=False):
        while self.n >= self.shard_rows or (last and self.n):
            k = min(self.n, self.shard_rows)
            self._write(self.out[:k])
            self.out[:self.n - k] = self.out[k:self.n]
            self.n -= k

    def _write(self, rows):
        from apsi_layers.data.memmap import save_npy
        from apsi_layers.nn.autograd.tensor import Tensor

        name = f"{self.prefix}-{len(self.written):05d}.npy"
        save_npy(name, Tensor(rows.astype(self.dtype)))
        self.written.append(name)

    def run(self):
        self.limit = self._bound()
        start = self._first_line()
        if start is None:
            self._slow(0, 1)
        else:
            self._blocks(*start)
        self._spill(last=True)
        if not self.written:
            raise ApsiError(f"load_csv({show(self.path, True)}): the file has no data rows")
        return self.written


def _not_a_number(where, cell, word):
    """load_csv's message for a cell that is no number, with what csv_to_npy offers instead (it takes
    no as="columns" and reads a file too large for read_csv)."""
    if not word or word.lower().lstrip("+-") in csv_io.MISSING_WORDS:
        what = "the cell is empty" if not word else f"{show(cell, True)} is not a number"
        return ApsiError(f"{where}: {what}; if it marks a missing value, pass missing=[{show(word, True)}] "
                         "(such cells become nan, which impute() fills)")
    return ApsiError(f"{where}: {show(cell, True)} is not a number; csv_to_npy writes numbers only: leave "
                     "the column out with columns=[…] (a column of categories needs numeric codes first), or "
                     "pass missing=[…] if such words mark missing values")


def _is_number(cell):
    try:
        return csv_read.number(cell) is not csv_read.NOT_A_NUMBER
    except csv_read.Overflow:
        return True


def _missing(missing):
    if missing is None:
        return frozenset()
    if not isinstance(missing, list) or not all(type(w) is str for w in missing):
        raise ApsiError(f'csv_to_npy: missing must be a list of the words that mark a missing value, '
                        f'like ["", "NA"], not {show(missing, True)}')
    return frozenset(w.strip(" \t") for w in missing)


def csv_to_npy(path, out, header=True, sep=",", columns=None, shard_rows=1_000_000, dtype="float32",
               missing=None):
    """Stream a CSV file of numbers into .npy shards OUT-00000.npy, OUT-00001.npy, … of shard_rows
    rows each (load_csv's rules and messages); returns the list of files (load_npy takes it).
    missing=["", "NA"]: cells written so are NaN."""
    if type(out) is not str or not out or out.endswith(".npy"):
        raise ApsiError(f'csv_to_npy: out must be a file name prefix like "data/train" (shards become '
                        f'data/train-00000.npy, …), not {show(out, True)}')
    if type(shard_rows) is not int or shard_rows < 1:
        raise ApsiError(f"csv_to_npy: shard_rows must be an int >= 1, not {show(shard_rows, True)}")
    if dtype not in DTYPES:
        raise ApsiError(f'csv_to_npy: dtype must be "float32" or "float64", not {show(dtype, True)}')
    csv_read.check_sep("csv_to_npy", sep)
    words = _missing(missing)
    # the files written are OUT-00000.npy, …: the write rules are theirs (a prefix has no suffix, so
    # asked about itself, "data/train" would be refused as a file that is not data)
    first = permissions.require("write", what=f"csv_to_npy(out={out!r})", path=f"{out}-00000.npy")
    if not os.path.isdir(os.path.dirname(os.path.abspath(first))):
        raise ApsiError(f'csv_to_npy: the folder "{os.path.dirname(out)}" does not exist; create it first '
                        "with make_dir")
    with csv_read.open_csv("csv_to_npy", path) as raw:
        try:
            return _Sharder(path, raw, header, sep, columns, out, shard_rows, DTYPES[dtype], words).run()
        except ApsiError as e:
            if e.message.startswith("load_csv"):        # load_csv's messages, as this call's
                raise ApsiError("csv_to_npy" + e.message[len("load_csv"):]) from None
            raise
