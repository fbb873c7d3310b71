"""windows(series, length, horizon=1, stride=1): a sequence cut into training pairs, as views.

x[k] = series[k·stride : k·stride + length] and y[k] = series[k·stride + length : … + horizon],
both strided views of the series (NumPy's sliding_window_view): nothing is copied, so the windows of
a long series cost no memory beyond the series itself until a batch is taken.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from .memmap import Mapped


def _count(name, value, least):
    if type(value) is not int or value < least:
        raise ApsiError(f"windows: {name} must be an int >= {least}, not {show(value, True)}")
    return value


def windows(series, length, horizon=1, stride=1):
    """[x, y]: x [K, length, ...] the windows, y [K, horizon, ...] the values after each (horizon=0:
    x alone). K = (len(series) - length - horizon) // stride + 1. A mapped series (load_npy) gives
    mapped windows: read by rows per batch, never whole."""
    from apsi_layers.layers.training.data_checks import as_array
    from apsi_layers.nn.autograd.tensor import Tensor

    a = series if isinstance(series, Mapped) else as_array("windows", "series", series)
    if not isinstance(a, np.ndarray | Mapped) or a.ndim == 0:
        raise ApsiError("windows: series must be a tensor with a first axis of time steps")
    length, horizon = _count("length", length, 1), _count("horizon", horizon, 0)
    stride = _count("stride", stride, 1)
    span = length + horizon
    if span > len(a):
        raise ApsiError(f"windows: the series has {len(a)} steps, fewer than length + horizon = {span}")
    if isinstance(a, Mapped):
        k = range((len(a) - span) // stride + 1)
        x = MappedWindows(a, length, 0, stride, k)
        return x if horizon == 0 else [x, MappedWindows(a, horizon, length, stride, k)]
    if a.dtype.kind == "f" and a.dtype != np.float64:
        a = a.astype(np.float64)
    view = np.lib.stride_tricks.sliding_window_view(a, span, axis=0)[::stride]
    view = np.moveaxis(view, -1, 1)              # [K, span, ...] (the window axis after the first)
    x = Tensor(view[:, :length])
    if horizon == 0:
        return x
    return [x, Tensor(view[:, length:])]


class MappedWindows(Mapped):
    """Windows of a mapped series as a mapped array [K, size, ...]: window k is the series' rows
    k·stride + offset … + size - 1, read (as any mapped rows: pread, ascending, put back in order)
    only when a batch takes it. fit, predict and indexing take it as they take a mapped array."""

    def __init__(self, series, size, offset, stride, rows):
        self.series, self.window, self.offset, self.stride = series, size, offset, stride
        self.shards, self.starts, self.rows = series.shards, series.starts, rows
        self.np_dtype, self.tail = series.np_dtype, (size, *series.tail)

    def view(self, sl):
        return MappedWindows(self.series, self.window, self.offset, self.stride, self.rows[sl])

    def take(self, idx, what="read", dtype=None):
        ids = np.asarray(idx, dtype=np.int64)
        first = (self.rows.start + ids * self.rows.step) * self.stride + self.offset     # (rows: a range)
        steps = (first[:, None] + np.arange(self.window)).reshape(-1)
        return self.series.take(steps, what, dtype).reshape(len(ids), *self.tail)

    def __len__(self):
        return len(self.rows)

    def place(self, row):
        first = self.rows[row] * self.stride + self.offset
        return f"window {row} (its rows {first}..{first + self.window - 1} of the series)"

    def described(self):
        return f"windows {list(self.shape)} of {self.series.described()}"

    def __repr__(self):
        return f"mapped windows {list(self.shape)} {self.dtype} of {len(self.shards)} file(s)"
