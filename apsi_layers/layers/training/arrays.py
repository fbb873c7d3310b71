"""A data argument as a NumPy array of numbers, or a message saying where a nested list goes wrong;
and Data, what fit's and predict's data become. Shared by the data checks (data_checks.py), the sample
weights (weights.py), the data sources (apsi_layers/data/) and preprocessing's adapt."""

from dataclasses import dataclass

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import show
from apsi_layers.nn.autograd.tensor import Tensor, to_plain
from apsi_layers.nn.numlib.nested import list_problem as _list_problem


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


@dataclass
class Data:
    """Inputs (a list: one array per model input), targets (one per output, or None), row count."""

    inputs: list
    targets: list | None
    n: int
    mask: np.ndarray | None = None
    weights: np.ndarray | None = None       # one per sample (sample_weight=, class_weight=), or None
    first: list | None = None               # a dataset's call 0 ([x, y]), made when fit was checked
