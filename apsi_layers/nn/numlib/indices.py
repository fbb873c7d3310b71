"""Where things are (issue 35): nonzero, argwhere, digitize. They return int tensors (indices and
bin numbers), so they have no gradient; on torch tensors NumPy's own code runs on host copies
(sorting.values_only), so both backends give NumPy's answer."""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import Tensor, plain_array
from .sorting import numpy_only, values_only


@values_only
def nonzero(x):
    """A list with one int tensor per axis of x: the indices of its non-zero (true) elements."""
    numpy_only("nonzero", x)
    d = plain_array(x, "nonzero", "x")
    if d.ndim == 0:
        raise ApsiError("nonzero: x is 0-d (a single value), which has no axes to index; "
                        "give a tensor with at least one axis, e.g. reshape(x, [1])")
    return [Tensor(i.astype(np.int64)) for i in np.nonzero(d)]


@values_only
def argwhere(x):
    """The indices of x's non-zero elements as rows: an int tensor of shape (count, x.ndim)."""
    numpy_only("argwhere", x)
    return Tensor(np.argwhere(plain_array(x, "argwhere", "x")).astype(np.int64))


@values_only
def digitize(x, bins, right=False):
    """For each value of x, the index i of the bin it falls in (numpy.digitize): bins[i-1] <= x <
    bins[i] for increasing bins (right=true: bins[i-1] < x <= bins[i]); decreasing bins the other
    way round. 0 and len(bins) mean below and above every edge."""
    numpy_only("digitize", x, bins)
    xd = plain_array(x, "digitize", "x")
    bd = plain_array(bins, "digitize", "bins")
    if bd.ndim != 1:
        raise ApsiError(f"digitize: bins must be 1-D, got shape {bd.shape}")
    try:
        out = np.digitize(xd, bd, right=bool(right))
    except ValueError:
        raise ApsiError("digitize: bins must be monotonically increasing or decreasing") from None
    return Tensor(np.asarray(out, dtype=np.int64))
