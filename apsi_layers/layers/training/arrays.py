"""A data argument as a NumPy array of numbers, or a message saying where a nested list goes wrong.
Shared by the data checks (data_checks.py) and the sample weights (weights.py)."""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import show
from apsi_layers.nn.tensor import Tensor, to_plain


def as_array(fn, arg, value):
    if type(value) is Tensor:
        return value.data
    if isinstance(value, np.ndarray):
        return value
    try:
        arr = np.asarray(to_plain(value))
    except (TypeError, ValueError, RecursionError):     # (lists nested thousands deep: a client's)
        arr = None
    if arr is None or arr.dtype == object or arr.dtype.kind not in "biuf":
        found = _list_problem(value, arg) if isinstance(value, list) else None
        what = f"; {found}" if found else (", not a ragged list" if isinstance(value, list) else
                                           f", not {show(value, True)}")
        raise ApsiError(f"{fn}: {arg} must be a tensor or a (nested) list of numbers of equal lengths"
                        f"{what}")
    return arr


def _list_problem(value, arg, depth=64):
    """Where a nested list stops being numbers of equal lengths, in words (None when not found): a
    client of serve_model sending [["a", 2]] must learn which entry, not just 'ragged'."""
    def at(path):
        return f"{arg}[{', '.join(map(str, path))}]"

    def shape_of(x):
        return len(x) if isinstance(x, list | tuple) else None

    def kind(x):
        return "a number" if shape_of(x) is None else f"a list of {len(x)}"

    def walk(v, path):
        if isinstance(v, list | tuple):
            if len(path) >= depth:
                return f"{arg} is lists nested more than {depth} deep (tensors have at most {depth} axes)"
            odd = next((i for i, x in enumerate(v) if shape_of(x) != shape_of(v[0])), None)
            if odd is not None:
                return f"{at(path + [odd])} is {kind(v[odd])} but {at(path + [0])} is {kind(v[0])}"
            return next((f for i, x in enumerate(v) if (f := walk(x, path + [i]))), None)
        if type(v) is int and abs(v) > 2 ** 1023:
            return f"{at(path)} is {show(v)[:20]}… ({len(show(v))} digits), too large for a float"
        if type(v) in (int, float, bool):
            return None
        return f"{at(path)} is {show(v, True)[:60]}, not a number"
    return walk(value, [])
