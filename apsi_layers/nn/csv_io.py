"""load_csv: a CSV file of numbers straight to a float64 tensor (rows x columns).

Reading goes through apsi_lang's read_csv, so the same permission rules apply (inside the project
folder nothing is needed; elsewhere `read`).
"""

import numpy as np

from apsi_lang.data_files import read_csv
from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .tensor import Tensor


def load_csv(path, header=True, sep=",", columns=None):
    """A [rows, columns] float64 tensor of a CSV file's numbers. With header=true the first line names
    the columns; columns=["x", "y"] (names, with a header) or [0, 2] (positions) picks some."""
    rows = read_csv(path, header=header, sep=sep, numbers=True)
    if header:
        names = list(vars(rows[0])) if rows else []
        rows = [list(vars(r).values()) if type(r) is Record else r for r in rows]
    else:
        names = []
    if not rows:
        raise ApsiError(f"load_csv({show(path, True)}): the file has no data rows")
    picks = _columns(path, columns, names, len(rows[0]))
    out = np.empty((len(rows), len(picks)), dtype=np.float64)
    first = 2 if header else 1
    for i, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise ApsiError(f"load_csv({show(path, True)}): line {i + first} has {len(row)} cells, "
                            f"the first row {len(rows[0])}")
        for j, c in enumerate(picks):
            cell = row[c]
            if isinstance(cell, bool) or not isinstance(cell, int | float):
                col = names[c] if names else str(c)
                raise ApsiError(f"load_csv({show(path, True)}): line {i + first}, column {col}: "
                                f"{show(cell, True)} is not a number (pick numeric columns with columns=[…])")
            out[i, j] = cell
    return Tensor(out)


def _columns(path, columns, names, width):
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
