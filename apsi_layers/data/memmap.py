"""load_npy / save_npy: .npy files read by rows, never whole.

A `Mapped` value is one or more .npy shards seen as one array along the first axis. A batch's rows
are read in ascending file order (locality) with pread, one read per run of consecutive rows, and
put back into the batch's order: the file's pages stay in the page cache (warm for the next epoch)
and never count as this process's memory, so the resident memory stays about one batch whatever the
file's size. Before each gather the file's
size is compared with the size it had when loaded: a file cut short or grown by another program is
an error naming it, never a wrong batch.
"""

import contextlib
import math
import os

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.values import show

KINDS = "biuf"      # bool, int, uint, float: what a tensor holds
FEW_RUNS = 8        # up to this many runs of rows are read straight into place


class Shard:
    """One .npy file: where its rows start, how many, and the file it was opened as."""

    def __init__(self, shown, resolved):
        from apsi_lang.files import open_regular

        self.shown = shown
        try:
            self.file = open_regular(resolved)
        except OSError as e:
            from apsi_lang.data_files import _os_error

            raise _os_error("load_npy", shown, e) from None
        self.fd = self.file.fileno()
        self.dtype, shape, self.offset = _header(self.file, shown)
        if not shape:
            raise ApsiError(f"load_npy: {shown!r} holds a single number (shape []); a data file needs "
                            "a first axis of rows")
        self.rows, self.tail = shape[0], tuple(shape[1:])
        self.row_bytes = int(self.dtype.itemsize * int(np.prod(self.tail, dtype=np.int64)))
        self.size = self.offset + self.rows * self.row_bytes
        self.seen = actual = os.fstat(self.fd).st_size
        if actual < self.size:
            raise ApsiError(f"load_npy: {shown!r} is truncated: its header promises {self.rows} rows "
                            f"({self.size} bytes) but the file has {actual} bytes; write it again "
                            "(save_npy writes atomically)")

    def check(self, what):
        """The file must still have the size it had when loaded (no silently wrong rows)."""
        actual = os.fstat(self.fd).st_size
        if actual != self.seen:
            raise ApsiError(f"{what}: {self.shown!r} changed size while it was in use ({self.seen} "
                            f"bytes when loaded, {actual} now); do not rewrite a data file while "
                            f"{_user(what)} reads it, or load it again")

    def read_into(self, view, at, what):
        """Bytes at `at` into view, however many reads it takes."""
        while len(view):
            got = os.preadv(self.fd, [view], at)
            if got <= 0:        # the file was cut short since the check: never a silently wrong row
                self.check(what)
                raise ApsiError(f"{what}: {self.shown!r} could not be read at byte {at}; load it again")
            view, at = view[got:], at + got


def _user(what):
    """Who was reading, in the message of a file that changed: fit, predict, adapt… (indexing: "the
    program")."""
    name = what.split(":")[0].split("(")[0]
    return name if name.isidentifier() and name != "read" else "the program"


def _header(f, shown):
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0,
                (3, 0): fmt.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(version)
        shape, fortran, dtype = read(f)
    except (ValueError, OSError, SyntaxError, KeyError, TypeError):
        raise ApsiError(f"load_npy: {shown!r} is not a .npy file (or its header is damaged); save_npy "
                        "writes one") from None
    if dtype.hasobject or dtype.kind not in KINDS or dtype.fields is not None:
        raise ApsiError(f"load_npy: {shown!r} holds {dtype} values; a data file holds numbers (bool, "
                        "int, uint or float)")
    if fortran and len(shape) > 1:
        raise ApsiError(f"load_npy: {shown!r} is stored in Fortran (column) order, which cannot be read "
                        "by rows; save it again with save_npy")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape) or math.prod(shape) * dtype.itemsize > np.iinfo(np.int64).max:
        # NumPy reads such a header as it is: -5 rows would be 0, an overflowing size 0 bytes
        raise ApsiError(f"load_npy: {shown!r} has a damaged header: its shape {list(shape)} "
                        f"{'has a negative length' if min(shape) < 0 else 'is too large for any file'}; "
                        "write it again (save_npy writes a valid one)")
    if len(shape) > 1 and shape[0] and not math.prod(shape[1:]):
        # rows of no bytes: any count of them fits in the file, so a header could promise 2**62 rows
        # that every loop over the rows (save_npy, `for row in x`) then walks for ever
        raise ApsiError(f"load_npy: {shown!r} has rows that hold no numbers (shape {list(shape)}); a data "
                        "file's rows hold one number at least")
    return dtype, shape, f.tell()


ITER_BYTES = 1 << 20   # `for row in x` reads this much at a time
_OPS = [("'+'", "add radd pos"), ("'-'", "sub rsub neg"), ("'*'", "mul rmul"), ("'/'", "truediv rtruediv"),
        ("'//'", "floordiv rfloordiv"), ("'%'", "mod rmod"), ("'**'", "pow rpow"), ("'@'", "matmul rmatmul"),
        ("'<'", "lt"), ("'<='", "le"), ("'>'", "gt"), ("'>='", "ge"), ("abs()", "abs"), ("round()", "round")]


def _refuse_op(op):
    def refuse(self, *_):
        raise ApsiError(f"{op} does not work on a mapped array ({self.described()}: rows on disk, read only "
                        f"when indexed); index it first: x[a:b] is a tensor of those rows, e.g. "
                        f"x[0:{min(len(self), 1000)}]")
    return refuse


def _refuse_number(name):
    def refuse(self):
        first = f"x[{', '.join(['0'] * self.ndim)}]"
        raise ApsiError(f"{name}() of a mapped array ({self.described()}): it holds many numbers, not one; "
                        f"index one first, e.g. {name}({first})")
    return refuse


class Mapped:
    """Rows of one or more .npy shards as one read-only array: len, shape, x[i], x[a:b], x[ids]."""

    __apsi_attrs__ = frozenset({"shape", "ndim", "dtype", "size", "files", "split"})
    __apsi_type__ = "mapped array"
    __array_ufunc__ = None

    def __init__(self, shards, rows=None):
        self.shards = shards
        self.starts = np.cumsum([0] + [s.rows for s in shards])
        total = int(self.starts[-1])
        # a row view (x[a:b] of a mapped array, validation_split): which of the shards' rows it is
        self.rows = rows if rows is not None else range(total)
        first = shards[0]
        self.np_dtype, self.tail = first.dtype, first.tail
        self.fds = np.array([s.fd for s in shards])
        self.offsets = np.array([s.offset for s in shards], dtype=np.int64)

    @property
    def shape(self):
        return (len(self.rows), *self.tail)       # a tuple, as a tensor's: x.shape == t.shape

    @property
    def ndim(self):
        return 1 + len(self.tail)

    @property
    def dtype(self):
        return self.np_dtype.name

    @property
    def size(self):
        return len(self.rows) * int(np.prod(self.tail, dtype=np.int64))

    @property
    def files(self):
        return [s.shown for s in self.shards]

    def __len__(self):
        return len(self.rows)

    def __repr__(self):
        return f"mapped array {list(self.shape)} {self.dtype} ({len(self.shards)} file(s))"

    def __iter__(self):
        """Row by row, as a tensor's: each row a tensor; rows are read a block at a time (about
        ITER_BYTES), never the whole file."""
        from apsi_layers.nn.autograd.tensor import Tensor

        step = max(1, ITER_BYTES // max(1, self.np_dtype.itemsize * math.prod(self.tail)))
        for start in range(0, len(self.rows), step):
            block = _as_tensor_data(self.take(np.arange(start, min(start + step, len(self.rows)))))
            for row in block:
                yield Tensor(row)

    def described(self):
        return f"{list(self.shape)} {self.dtype} in {', '.join(map(repr, self.files))}"

    def place(self, row):
        """Row `row` named as the user sees it: the row, the file it is in (and its row there)."""
        k = int(np.searchsorted(self.starts, self.rows[row], side="right") - 1)
        local = self.rows[row] - int(self.starts[k])
        return f"row {row} (file {self.shards[k].shown!r}{f', its row {local}' if local != row else ''})"

    def refuse_whole(self, fn):
        raise ApsiError(f"{fn}() of a mapped array ({self.described()}): on a tensor it takes every "
                        "number, which here would read the whole file; take it over rows you read, e.g. "
                        f"{fn}(x[0:{min(len(self), 1000)}]), block by block for the whole file")

    def view(self, sl):
        """The rows sl (a slice) as another Mapped array: nothing is read."""
        return Mapped(self.shards, self.rows[sl])

    def split(self, at):
        """[its first `at` rows, the rest] as two mapped arrays, nothing read: the training split of
        data larger than memory (x[a:b] reads its rows into a tensor)."""
        n = len(self.rows)
        if n < 2:
            raise ApsiError(f"split: a mapped array of {n} row{'' if n == 1 else 's'} cannot be split in two "
                            "parts of at least one row")
        if type(at) is not int or not 0 < at < n:
            raise ApsiError(f"split: at must be an int from 1 to {n - 1} (the rows of the first part) for "
                            f"a mapped array of {n} rows, not {show(at, True)}")
        return [self.view(slice(0, at)), self.view(slice(at, n))]

    def check(self, what):
        for s in self.shards:
            s.check(what)

    def take(self, idx, what="read", dtype=None):
        """The rows at positions idx (any order, repeats allowed) as an ndarray (of `dtype`: cast as
        they are put in place), read in ascending file order."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.rows.step == 1 and self.rows.start:
            idx = idx + self.rows.start
        elif not (self.rows.step == 1 and self.rows.start == 0):
            idx = np.asarray(self.rows)[idx]
        order = np.argsort(idx, kind="stable")
        wanted = idx[order]
        out = np.empty((len(idx),) + self.tail, dtype=dtype or self.np_dtype)
        in_place = out.dtype == self.np_dtype and np.array_equal(order, np.arange(len(idx)))
        sorted_out = out if in_place else np.empty(out.shape, self.np_dtype)
        self._read_sorted(wanted, sorted_out, what)
        if sorted_out is not out:
            out[order] = sorted_out
        return out

    def _read_sorted(self, wanted, out, what):
        """Rows `wanted` (ascending) into `out` (C order), one pread per run of rows consecutive in
        one file. The rows are copied out of the page cache, never mapped: a mapping's pages count
        as the process's memory for as long as they stay mapped, and one fault maps many (64 KiB of
        fault-around, a whole 2 MiB folio on Linux 6), so a batch of scattered rows mapped most of a
        file for a moment; a read maps nothing, and the cache stays warm for the next epoch."""
        self.check(what)
        size = self.shards[0].row_bytes
        if not len(wanted) or not size:
            return
        k = np.searchsorted(self.starts, wanted, side="right") - 1
        at = self.offsets[k] + (wanted - self.starts[k]) * size
        cuts = np.flatnonzero((np.diff(wanted) != 1) | (np.diff(k) != 0)) + 1
        first, last = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(wanted)]])
        into = memoryview(out.reshape(-1).view(np.uint8))
        try:
            if len(first) > FEW_RUNS:
                # many short runs (a shuffled batch): os.pread mapped over them runs in C, a third
                # cheaper than a Python loop of preadv into place; the rows are then copied in at once
                data = b"".join(map(os.pread, self.fds[k[first]].tolist(), ((last - first) * size).tolist(),
                                    at[first].tolist()))
                if len(data) == len(into):
                    into[:] = data
                    return
            for a, b in zip(first.tolist(), last.tolist(), strict=True):    # (or a read came back short)
                self.shards[k[a]].read_into(into[a * size:b * size], int(at[a]), what)
        except OSError as e:
            shard = self.shards[int(k[0])] if len(set(k.tolist())) == 1 else None
            name = repr(shard.shown) if shard else ", ".join(repr(f) for f in self.files)
            raise ApsiError(f"{what}: cannot read {name} ({e.strerror or e}); check the disk, then load it "
                            "again") from None

    def _row_ids(self, rows):
        """A list or tensor of row numbers, or of one true/false per row (a mask), as a tensor reads it."""
        ids = np.asarray(rows)
        if ids.size == 0:           # x[[]]: no rows, as a tensor's
            return np.zeros(0, np.int64)
        if ids.dtype.kind == "b" and ids.ndim == 1:
            if len(ids) != len(self.rows):
                raise ApsiError(f"index: boolean index did not match indexed mapped array along axis 0; "
                                f"size of axis is {len(self.rows)} but size of corresponding boolean axis "
                                f"is {len(ids)} (the mapped array has shape {self.shape}); a mask needs "
                                "one true/false per row")
            return np.flatnonzero(ids)
        return ids

    def __getitem__(self, key):
        from apsi_layers.nn.autograd.tensor import Tensor

        rows, rest = (key[0], key[1:]) if isinstance(key, tuple) and key else (key, ())
        n = len(self.rows)
        if isinstance(rows, slice):
            # the slice's own rows (np.arange(n)[rows] made an array of every row first: 8 GB for a
            # file of a billion rows, for x[0:3])
            part = range(n)[rows]
            picked = self.take(np.arange(part.start, part.stop, part.step))
        elif type(rows) in (int, bool) or isinstance(rows, np.integer):
            i = int(rows)
            if not -n <= i < n:
                raise ApsiError(f"index {i} is out of range for a mapped array of {n} rows")
            picked = self.take([i % n])[0]
        else:
            ids = self._row_ids(rows.data if isinstance(rows, Tensor) else rows)
            if ids.dtype.kind == "f":
                raise ApsiError("index: a float list or tensor was used as the row index of a mapped "
                                "array; row numbers must be whole numbers (astype(ids, \"int64\"))")
            if ids.dtype.kind not in "iu" or ids.ndim != 1:
                raise ApsiError("a mapped array takes an int, a slice or a list of row numbers as its "
                                f"first index, not {show(rows, True)}")
            if ids.size and (ids.max() >= n or ids.min() < -n):
                raise ApsiError(f"row {int(ids.max() if ids.max() >= n else ids.min())} is out of range "
                                f"for a mapped array of {n} rows")
            picked = self.take(ids % max(n, 1))
        if rest:      # x[i, j] indexes the row; x[a:b, j] each row
            picked = picked[tuple(rest)] if picked.ndim == len(self.tail) else picked[(slice(None), *rest)]
        return Tensor(_as_tensor_data(picked))


# arithmetic and conversions are refused in Apsi's words, with what to do (on a tensor they would read
# the whole file; Python's own message would name the class)
for _op, _names in _OPS:
    for _name in _names.split():
        setattr(Mapped, f"__{_name}__", _refuse_op(_op))
for _name in ("float", "int", "complex"):
    setattr(Mapped, f"__{_name}__", _refuse_number(_name))


def _as_tensor_data(a):
    return a.astype(np.float64) if a.dtype.kind == "f" and a.dtype != np.float64 else np.ascontiguousarray(a)


def _dtype_words(dtype):
    """float64, or float64 (big-endian) for a file written on another kind of machine (NumPy shows
    that as >f8, which does not read as the same type)."""
    if dtype.byteorder in "=|" or dtype.byteorder == np.dtype(dtype.name).byteorder:
        return dtype.name
    return f"{dtype.name} ({'big' if dtype.byteorder == '>' else 'little'}-endian)"


def _order_hint(a, b):
    if a.name != b.name:
        return ""
    return ("; one of them is in another byte order: rewrite it with save_npy(path, load_npy(path)), "
            "which writes this machine's")


def is_mapped(x):
    return isinstance(x, Mapped)


def load_npy(path, mmap=True):
    """A .npy file (or a list of shards, one array along the first axis) read by rows when used.
    mmap=false reads it whole into a tensor."""
    paths = path if isinstance(path, list | tuple) else [path]
    if not paths or any(type(p) is not str or not p for p in paths):
        raise ApsiError(f"load_npy: path must be a file name or a list of file names, not {show(path, True)}")
    if type(mmap) is not bool:         # (mmap=0 or "false" read as true would map, not read)
        raise ApsiError(f"load_npy: mmap must be true (read by rows when used) or false (read it into a "
                        f"tensor now), not {show(mmap, True)}")
    resolved = [permissions.require("read", what=f"load_npy({show(p, True)})", path=p) for p in paths]
    _room_for(len(paths))
    try:
        shards = [Shard(p, r) for p, r in zip(paths, resolved, strict=True)]
    except ApsiError as e:
        if "Too many open files" not in e.message:
            raise
        raise ApsiError(f"load_npy: {len(paths)} shards are more files than this process may keep open "
                        f"(the limit is {_open_limit()}: `ulimit -n`); write fewer, larger shards "
                        "(csv_to_npy's shard_rows, or save_npy of joined rows), or raise the limit") from None
    first = shards[0]
    for s in shards[1:]:
        if s.dtype != first.dtype or s.tail != first.tail:
            raise ApsiError(f"load_npy: shard {s.shown!r} holds {_dtype_words(s.dtype)} rows of shape "
                            f"{list(s.tail)} but {first.shown!r} holds {_dtype_words(first.dtype)} rows of "
                            f"shape {list(first.tail)}; every shard must have the same dtype and the same "
                            f"shape after the first axis{_order_hint(s.dtype, first.dtype)}")
    mapped = Mapped(shards)
    if mmap is False:
        from apsi_layers.nn.autograd.tensor import Tensor

        return Tensor(_as_tensor_data(mapped.take(np.arange(len(mapped)), "load_npy")))
    return mapped


SPARE_FILES = 256       # besides the shards: the program's own files, sockets, workers' pipes


def _open_limit():
    import resource

    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _room_for(count):
    """A mapped array keeps each shard open (it reads them by pread): many shards need more open
    files than a shell's usual soft limit of 1024. Raise it as far as the hard limit allows, as a
    process may without privilege."""
    try:
        import resource
    except ImportError:         # (not on Windows)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


def _write_rows(f, m):
    """A mapped array into an open .npy file about ITER_BYTES of rows at a time: joining shards
    larger than memory into one file never holds more than a block (in this machine's byte order,
    as save_npy writes every array)."""
    fmt = np.lib.format
    dtype = m.np_dtype.newbyteorder("=")
    header = {"descr": fmt.dtype_to_descr(dtype), "fortran_order": False, "shape": m.shape}
    try:
        fmt.write_array_header_1_0(f, header)
    except ValueError:          # (a header over 64 KiB: version 2.0 holds it)
        fmt.write_array_header_2_0(f, header)
    step = max(1, ITER_BYTES // max(1, dtype.itemsize * math.prod(m.tail)))
    for start in range(0, len(m), step):
        f.write(m.take(np.arange(start, min(start + step, len(m))), "save_npy", dtype).tobytes())


def save_npy(path, x):
    """Write x as a .npy file, atomically (a reader never sees half a file)."""
    from apsi_lang.files import atomic_open
    from apsi_layers.nn.autograd.tensor import Tensor

    if type(path) is not str or not path:
        raise ApsiError(f"save_npy: path must be a file name like \"x.npy\", not {show(path, True)}")
    if not path.endswith(".npy"):
        raise ApsiError(f"save_npy: {path!r} must end in .npy (np.load and load_npy read it by that name)")
    if isinstance(x, Mapped):
        a = x
    else:
        from apsi_layers.layers.training.data_checks import as_array

        a = as_array("save_npy", "x", x.data if isinstance(x, Tensor) else x)
    resolved = permissions.require("write", what=f"save_npy({show(path, True)})", path=path)
    if not os.path.isdir(os.path.dirname(os.path.abspath(resolved))):
        raise ApsiError(f'save_npy: the folder "{os.path.dirname(path) or "."}" does not exist; create it '
                        "first with make_dir")
    try:
        with atomic_open(resolved, "wb") as f:
            if isinstance(a, Mapped):
                _write_rows(f, a)
            else:
                np.lib.format.write_array(f, np.ascontiguousarray(a), allow_pickle=False)
    except OSError as e:
        raise ApsiError(f"save_npy({path!r}): cannot write it: {e.strerror or e}") from None
    return None
