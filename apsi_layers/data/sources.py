"""What fit and predict read batches from when the data is not arrays in memory.

A source reads one batch for an index array: a Mapped source the rows (.npy shards, read by rows),
a Dataset source one call of the user's function. A Column is one of a source's arrays (inputs or
targets) as fit's Data holds it: it has a shape and a length, and take(idx) gives that batch's
array. The driver announces each epoch's batches so a source reads them ahead (prefetch.py).
"""

import inspect
import os
import sys

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from .memmap import Mapped
from .prefetch import Prefetcher
from .waited import WAITED

SWITCH = 0.0002         # seconds: the GIL's switch interval while a dataset's calls run ahead
MAX_WORKERS = 64


class Dataset:
    """dataset(count, fn, workers): `count` batches, batch i being fn(i) (or fn(i, g) with g a random
    generator of its own) => [x, y] (or x alone for predict), made ahead by `workers` processes (0:
    a thread of this one)."""

    __apsi_attrs__ = frozenset({"count", "workers"})
    __apsi_type__ = "dataset"

    def __init__(self, count, fn, workers):
        self.count, self.fn, self.workers = count, fn, workers
        self.with_rng = _takes_two(fn)

    def __len__(self):
        return self.count

    def __repr__(self):
        return f"dataset({self.count} batches, workers={self.workers})"

    def call(self, i, seed, epoch, what):
        """Batch i as a list of arrays (x, y): one call, checked; errors name the batch and where
        the function failed."""
        from apsi_layers.nn.numlib.random_gen import Rng

        try:
            out = self.fn(int(i), Rng(seed, (epoch, int(i)))) if self.with_rng else self.fn(int(i))
        except ApsiError as e:
            raise ApsiError(f"{what}: the dataset function failed at batch {i}{_epoch(epoch)}{_line(e)}: "
                            f"{e.message}", e.kind) from None
        except Exception as e:  # noqa: BLE001  (any error of the user's function, named by batch)
            from apsi_lang.report import describe

            raise ApsiError(f"{what}: the dataset function failed at batch {i}{_epoch(epoch)}{_line(e)}: "
                            f"{describe(e)}") from None
        return _parts(out, i, epoch, what)


def dataset(count, fn, workers=None):
    """A batch source for fit and predict: count batches, batch i = fn(i) => [x, y] (Keras
    PyDataset's semantics: one call per batch, the order shuffled per epoch from fit's seed), the
    calls made ahead by `workers` processes (none: the measured default; 0: a thread)."""
    from .workers import default_count

    if type(count) is not int or count < 1:
        raise ApsiError("dataset: count must be an int >= 1 (the number of batches), not "
                        f"{show(count, True)}")
    if not callable(fn):
        raise ApsiError(f"dataset: fn must be a function fn(i) => [x, y], not {show(fn, True)}")
    _check_arity(fn)
    if workers is None:
        workers = default_count()
    elif type(workers) is not int or not 0 <= workers <= MAX_WORKERS:
        raise ApsiError(f"dataset: workers must be an int from 0 to {MAX_WORKERS} (processes making the "
                        f"calls ahead; 0: a thread of this process), not {show(workers, True)}")
    elif workers and not hasattr(os, "fork"):
        workers = 0         # (no fork on this system: the calls run in a thread)
    return Dataset(count, fn, workers)


def _check_arity(fn):
    """fn is called fn(i) or fn(i, g): one that cannot be (fn(), fn(i, g, h)) is named here, not as
    a failure inside it at batch 0."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if len(required) > 2 or (not positional and not any(p.kind == p.VAR_POSITIONAL for p in params)):
        names = ", ".join(p.name for p in params)
        raise ApsiError(f"dataset: fn is called fn(i) (the batch number) or fn(i, g) (and a random generator "
                        f"of its own), but this function takes ({names}); give it one or two parameters")


def _takes_two(fn):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2


def _epoch(epoch):
    return f" (epoch {epoch})" if epoch else ""


def _line(e):
    """ ' (file.apsi:12)' where the user's function raised, when its frames are Apsi's."""
    tb, where = e.__traceback__, ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith(".apsi"):
            where = f" ({os.path.basename(name)}:{tb.tb_lineno})"
        tb = tb.tb_next
    return where


def read_whole(m, fn):
    """Targets and masks are read into memory (one value or row per sample: small beside inputs)."""
    return m.take(np.arange(len(m)), fn)


def _parts(out, i, epoch, what):
    from apsi_layers.layers.training.data_checks import as_array

    items = list(out) if isinstance(out, list | tuple) else [out]
    if not 1 <= len(items) <= 2:
        raise ApsiError(f"{what}: the dataset function returned {len(items)} values at batch {i}"
                        f"{_epoch(epoch)}; return [x, y] (inputs and targets of one batch)")
    arrays = []
    for k, v in zip(("x", "y"), items, strict=False):
        try:
            # a mapped array returned (x.split(…)) is this batch's rows: read them
            a = read_whole(v, what) if isinstance(v, Mapped) else as_array(what, f"batch {i}'s {k}", v)
        except ApsiError as e:
            raise ApsiError(f"{e.message}{_epoch(epoch)}") from None
        if a.ndim == 0:
            raise ApsiError(f"{what}: batch {i}'s {k}{_epoch(epoch)} is a single number; a batch has a "
                            "first axis of samples")
        arrays.append(a)
    if not len(arrays[0]):
        raise ApsiError(f"{what}: the dataset function returned x of shape {list(arrays[0].shape)} at batch "
                        f"{i}{_epoch(epoch)}: a batch of no samples; return at least one sample a batch")
    if len(arrays) == 2 and len(arrays[0]) != len(arrays[1]):
        raise ApsiError(f"{what}: batch {i}{_epoch(epoch)} has {len(arrays[0])} inputs but "
                        f"{len(arrays[1])} targets; return as many of each")
    return arrays


class Source:
    """Reads batches (lists of arrays) by index array, with read-ahead over an announced epoch."""

    ahead = None
    last = (None, None)

    def announce(self, batches, epoch):
        self.stop_ahead()
        self.epoch = epoch
        self.ahead = Prefetcher(self.read, batches)

    def fetch(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        key = idx.tobytes()
        if self.last[0] == key:           # the other column of the batch just read
            return self.last[1]
        value = self.get(idx)
        self.last = (key, value)
        return value

    def get(self, idx):
        return self.ahead.get(idx) if self.ahead is not None else self.read(idx)

    def stop_ahead(self):
        if self.ahead is not None:
            self.ahead.close()
            self.ahead = None
        self.last = (None, None)

    def close(self):
        """The fit is over (or failed): nothing more is read ahead."""
        self.stop_ahead()


class MappedSource(Source):
    """Rows of a Mapped array, as `dtype` (float64 for NumPy's fit; ids as int64)."""

    reader = None       # the reader process (reader.py), forked at the first epoch

    def __init__(self, mapped, dtype, what):
        self.mapped, self.dtype, self.what = mapped, dtype, what

    def row_bytes(self):
        return int(np.prod(self.mapped.tail, dtype=np.int64)) * self.dtype.itemsize

    def announce(self, batches, epoch):
        from .reader import read_ahead

        self.stop_ahead()
        self.epoch = epoch
        self.ahead = read_ahead(self, batches)

    def close(self):
        super().close()
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def read(self, idx):
        return [self.mapped.take(idx, self.what, self.dtype)]      # (take checks the files' sizes)


class DatasetSource(Source):
    """One call of a dataset's function per batch; idx holds the call number (one per step).

    With workers, the calls run in worker processes (workers.py), forked here: before fit starts
    any thread. Without, they run in the read-ahead thread, where an Apsi function holds the GIL
    while it runs, so while the thread is busy the step waits for its turn: the switch interval is
    made short (Python's default is 5 ms, longer than a call) so a step waits little, and set back
    when the epoch ends. Either way the checks of each batch (rules) are made here, in order."""

    epoch = 0
    switch = None
    fresh = False           # the next batch is the first announced (waits are counted apart)

    def __init__(self, ds, seed, what, rules):
        from .workers import Pool

        self.ds, self.seed, self.what = ds, seed, what
        self.rules = rules            # per column: fn(array, i) -> the array fit uses (checked)
        self.pool = Pool(self.call, ds.workers, what) if ds.workers else None

    def call(self, i, epoch):
        return self.ds.call(i, self.seed, epoch, self.what)

    def announce(self, batches, epoch):
        from .workers import Ahead

        if self.pool is not None:
            self.stop_ahead()
            self.epoch = epoch
            self.ahead = Ahead(self.pool, batches, epoch, self.read, self.finish)
            return
        super().announce(batches, epoch)
        self.fresh = True
        if self.switch is None:
            self.switch = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH)

    def stop_ahead(self):
        super().stop_ahead()
        if self.switch is not None:
            sys.setswitchinterval(self.switch)
            self.switch = None

    def close(self):
        super().close()
        if self.pool is not None:
            self.pool.close()

    def get(self, idx):
        if self.pool is not None:
            return super().get(idx)         # (workers.Ahead counts its own waits)
        t0, first, self.fresh = WAITED.start(), self.fresh, False
        value = super().get(idx)
        WAITED.since(t0, first)
        return value

    def read(self, idx):
        if len(idx) != 1:
            raise ApsiError(f"{self.what}: a dataset is read one call per step")
        i = int(idx[0])
        return self.finish(self.call(i, self.epoch), i)

    def finish(self, arrays, i):
        if len(arrays) < len(self.rules):
            raise ApsiError(f"{self.what}: the dataset function returned only x at batch {i}"
                            f"{_epoch(self.epoch)}; fit needs [x, y]")
        return [rule(a, i, self.epoch) for rule, a in zip(self.rules, arrays, strict=False)]


class Column:
    """One array of a source, as fit's Data holds it: shape (rows, ...), take(idx) -> ndarray."""

    def __init__(self, source, k, shape, dtype):
        self.source, self.k, self.shape, self.dtype = source, k, tuple(shape), np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return self.shape[0]

    def take(self, idx):
        return self.source.fetch(idx)[self.k]

    def __getitem__(self, key):
        """A slice of rows (validation_split, evaluation batches): another column, nothing read."""
        if not isinstance(key, slice) or not isinstance(self.source, MappedSource):
            raise ApsiError(f"{self.source.what}: this data source cannot be sliced")
        src = self.source
        part = src.mapped.view(key)
        return Column(MappedSource(part, src.dtype, src.what), 0, (len(part), *self.shape[1:]), self.dtype)


def is_column(a):
    return isinstance(a, Column)


def gather(a, idx):
    """Rows idx of an in-memory array or a column."""
    return a.take(idx) if isinstance(a, Column) else a[idx]


def mapped_column(fn, arg, m, dtype):
    return Column(MappedSource(m, np.dtype(dtype), fn), 0, m.shape, dtype)


def columns_of(data):
    """Every source behind fit's Data (inputs, targets), each once."""
    seen = []
    for a in list(data.inputs) + list(data.targets or []):
        if isinstance(a, Column) and a.source not in seen:
            seen.append(a.source)
    return seen


def announce(data, batches, epoch):
    for src in columns_of(data):
        src.announce(batches, epoch)


def close(*datas):
    for data in datas:
        if data is not None:
            for src in columns_of(data):
                src.close()


__all__ = ["Dataset", "Mapped", "dataset", "gather", "is_column"]
