"""max_pool and avg_pool over N-d windows. Composed from nn ops for now."""

import numpy as np

from .. import reduce
from ..tensor import as_tensor
from .conv import windows


def max_pool(x, size, stride, padding):
    x = as_tensor(x, "max_pool")
    cols, _ = windows(x, size, stride, padding, (1,) * len(size), fill=-np.inf)
    return reduce.max(cols, axis=2)


def avg_pool(x, size, stride, padding):
    x = as_tensor(x, "avg_pool")
    cols, _ = windows(x, size, stride, padding, (1,) * len(size))
    return reduce.mean(cols, axis=2)
