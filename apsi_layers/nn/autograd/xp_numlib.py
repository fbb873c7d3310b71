"""RAW (plain NumPy) helpers for the numlib gradient rules in vjps.py (issue 19).

graph.py gives GRAPH the differentiable twin of each (same names), so a rule written with them
serves first-order and higher-order differentiation alike.
"""

import numpy as np


def has_zero(x):
    """Whether x holds an exact zero (cumprod's rule then avoids dividing by it)."""
    return bool(np.any(np.asarray(x) == 0))


def eye_mask(n):
    return np.eye(n, dtype=bool)


def tri_mask(n):
    """m[i, j] = j >= i."""
    return np.triu(np.ones((n, n), dtype=bool))


def zero_masks(x, axis):
    """(before, first) along `axis`: positions before the slice's first zero, and that zero."""
    zeros_so_far = np.cumsum(np.asarray(x) == 0, axis=axis)
    return zeros_so_far == 0, (zeros_so_far == 1) & (np.asarray(x) == 0)


def finite_mask(x):
    return np.isfinite(x)


def others_prod(x, axis):
    """prod_{k != i} x_k along `axis` for every i: exclusive products from both ends (no division,
    so zeros are exact)."""
    n = x.shape[axis]
    one = np.ones_like(np.take(x, [0], axis=axis))
    left = np.cumprod(np.concatenate([one, np.take(x, np.arange(n - 1), axis=axis)], axis=axis), axis)
    rest = np.concatenate([np.take(x, np.arange(1, n), axis=axis), one], axis=axis)
    right = np.flip(np.cumprod(np.flip(rest, axis), axis), axis)
    return left * right


RAW_NUMLIB = {
    "sqrt": np.sqrt, "cosh": np.cosh, "sinh": np.sinh, "floor": np.floor, "flip": np.flip,
    "cumsum": np.cumsum, "cumprod": np.cumprod, "moveaxis": np.moveaxis, "has_zero": has_zero,
    "zero_masks": zero_masks, "finite_mask": finite_mask, "eye_mask": eye_mask, "tri_mask": tri_mask,
    "recording": False,     # GRAPH's is True: a rule may pick a form that differentiates again
    "others_prod": others_prod,
}
