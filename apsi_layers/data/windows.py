"""windows(series, length, horizon=1, stride=1): a sequence cut into training pairs, as views.

x[k] = series[k·stride : k·stride + length] and y[k] = series[k·stride + length : … + horizon],
both strided views of the series (NumPy's sliding_window_view): nothing is copied, so the windows of
a long series cost no memory beyond the series itself until a batch is taken.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import show


def _count(name, value, least):
    if type(value) is not int or value < least:
        raise ApsiError(f"windows: {name} must be an int >= {least}, not {show(value, True)}")
    return value


def windows(series, length, horizon=1, stride=1):
    """[x, y]: x [K, length, ...] the windows, y [K, horizon, ...] the values after each (horizon=0:
    x alone). K = (len(series) - length - horizon) // stride + 1."""
    from apsi_layers.layers.training.data_checks import as_array
    from apsi_layers.nn.autograd.tensor import Tensor

    a = as_array("windows", "series", series)
    if not isinstance(a, np.ndarray) or a.ndim == 0:
        raise ApsiError("windows: series must be a tensor with a first axis of time steps")
    length, horizon = _count("length", length, 1), _count("horizon", horizon, 0)
    stride = _count("stride", stride, 1)
    span = length + horizon
    if span > len(a):
        raise ApsiError(f"windows: the series has {len(a)} steps, fewer than length + horizon = {span}")
    if a.dtype.kind == "f" and a.dtype != np.float64:
        a = a.astype(np.float64)
    view = np.lib.stride_tricks.sliding_window_view(a, span, axis=0)[::stride]
    view = np.moveaxis(view, -1, 1)              # [K, span, ...] (the window axis after the first)
    x = Tensor(view[:, :length])
    if horizon == 0:
        return x
    return [x, Tensor(view[:, length:])]
