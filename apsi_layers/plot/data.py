"""The values a plot call takes from Apsi code, checked when the call is made (so an error points at
the line that drew, not at the later save): numbers, texts, choices, and series of numbers.

A series is a tensor, a list of numbers, or a NumPy array; it becomes a float64 array here. NumPy is
imported only when a series is given; matplotlib not at all.
"""

import math
import sys

from apsi_lang.errors import ApsiError
from apsi_lang.values import a_type, show

MAX_TEXT = 1000          # characters in a title, axis label or series label


def _tensor_type():
    """nn's Tensor class, when a program has loaded nn (a tensor cannot exist otherwise)."""
    module = sys.modules.get("apsi_layers.nn.autograd.tensor")
    return None if module is None else module.Tensor


def _plain(x):
    """Nested lists of numbers and arrays for NumPy; only types we know pass (NumPy reads protocols
    such as __array_interface__ from any object it is given)."""
    t = type(x)
    if t is _tensor_type():
        return x.data
    if t is list or t is tuple:
        return [_plain(v) for v in x]
    if t is float or t is int or t is bool:
        return x
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray | np.generic):
        return x
    raise TypeError(t.__name__)


def _describe(x):
    if type(x) is _tensor_type():
        return f"a tensor of shape {tuple(x.shape)}"
    if isinstance(x, list | tuple):
        return f"a {type(x).__name__} of {len(x)} items"
    return a_type(x)


def series(value, where, arg, ndim=1):
    """A float64 array of `ndim` dimensions (ndim=None: any, flattened) from a tensor or (nested) list
    of numbers; inf is refused (NaN is a gap in a line, a missing pixel in an image)."""
    import numpy as np

    try:
        data = np.asarray(_plain(value), dtype=np.float64)
    except (TypeError, ValueError):
        raise ApsiError(f"{where}: {arg} must be a tensor or a list of numbers, "
                        f"not {_describe(value)}") from None
    if ndim is None and data.ndim >= 1:
        data = data.ravel()
    elif data.ndim != ndim:
        shape = {1: "one row of numbers", 2: "a 2-D tensor (rows × columns)"}.get(ndim, "a list of numbers")
        raise ApsiError(f"{where}: {arg} must be {shape}, not {_describe(value)}"
                        + (" (a number; give a list)" if data.ndim == 0 else ""))
    if data.size == 0:
        raise ApsiError(f"{where}: {arg} is empty: there is nothing to draw")
    if np.isinf(data).any():
        raise ApsiError(f"{where}: {arg} holds an infinite value (at position "
                        f"{_first(np.isinf(data))}); NaN is allowed (a gap), inf is not")
    return data


def _first(mask):
    import numpy as np

    where = tuple(int(i) for i in np.argwhere(mask)[0])
    return where[0] if len(where) == 1 else list(where)


def text(value, where, arg):
    """A title or label: a string of at most MAX_TEXT characters (none when absent)."""
    if value is None:
        return None
    if type(value) is not str:
        raise ApsiError(f"{where}: {arg} must be a string, got {a_type(value)} (use str(x) to convert)")
    if len(value) > MAX_TEXT:
        raise ApsiError(f"{where}: {arg} has {len(value)} characters; at most {MAX_TEXT} fit a plot")
    return value


def number(value, where, arg, low, high, whole=False):
    """A number in [low, high] (an int when `whole`)."""
    kinds = (int,) if whole else (int, float)
    if type(value) not in kinds or not math.isfinite(value) or not low <= value <= high:
        kind = "a whole number" if whole else "a number"
        raise ApsiError(f"{where}: {arg} must be {kind} from {low} to {high}, got {show(value, True)}")
    return value


def choice(value, where, arg, options):
    """One of `options` (strings)."""
    if type(value) is not str or value not in options:
        listed = ", ".join(f'"{o}"' for o in options)
        raise ApsiError(f"{where}: {arg} must be one of {listed}, got {show(value, True)}")
    return value


def flag(value, where, arg):
    if type(value) is not bool:
        raise ApsiError(f"{where}: {arg} must be true or false, got {show(value, True)}")
    return value
