"""Data: fit's and predict's checked data (data_checks.py makes it; the data sources of
apsi_layers/data/ make it for mapped arrays and datasets). Its own file, so both import it and neither
imports the other for it."""

from dataclasses import dataclass

import numpy as np


@dataclass
class Data:
    """Inputs (a list: one array per model input), targets (one per output, or None), row count."""

    inputs: list
    targets: list | None
    n: int
    mask: np.ndarray | None = None
    weights: np.ndarray | None = None       # one per sample (sample_weight=, class_weight=), or None
    first: list | None = None               # a dataset's call 0 ([x, y]), made when fit was checked
