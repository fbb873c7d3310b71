"""Finite checks shared by both backends' fit loops, and the error they raise."""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd.nonfinite import NonFiniteError


def check_trained(named_arrays):
    """After the last update every parameter is finite, so fit never returns (and save_params never
    writes) NaN or inf weights; a learning rate such as 1e300 overflows here without a NaN loss."""
    for name, a in named_arrays:
        a = np.asarray(a.data if hasattr(a, "shape") and hasattr(a, "data") else a)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            what = "NaN" if np.isnan(a).any() else "an infinite value"
            raise NonFiniteError(
                f"fit: after the last update the parameter {name} holds {what}; training diverged and no "
                "parameters were returned. Lower the learning rate (e.g. opt=adam(lr=1e-4)) or clip "
                "gradients with clip=1.0")


def constant_loss(loss):
    """A loss function whose value does not depend on the model's output (a constant, a NaN, or a
    graph broken by leaving autodiff): NumPy trained on it silently, torch failed with its own text."""
    name = getattr(loss, "__name__", None)
    what = f"the loss function {name}" if name and name != "<lambda>" else "the loss function"
    return ApsiError(f"fit: {what} returned a value that does not depend on the model's output "
                     "(a constant, or computed outside nn's functions), so there is nothing to train; "
                     "compute it from pred, e.g. fn(pred, target) => mean((pred - target) ** 2)")
