"""The seam layers' fit/predict call for backend="torch": fit_torch(plan) and predict_torch(plan).

The plan (apsi_layers/layers/training/plan.py) is already checked: data as NumPy arrays, the loss, a
fresh optimizer, the options. torch is imported here, on the first call, with a message that says how
to install it when it is missing.
"""

from .runtime import load_torch


def fit_torch(plan):
    """Train on PyTorch; returns the same record as the NumPy fit, with backend "torch"."""
    load_torch()
    from .loop import fit_loop

    return fit_loop(plan)


def predict_torch(plan):
    """The model's output for the plan's inputs in evaluation mode, as an nn tensor (float64)."""
    load_torch()
    from .loop import predict_loop

    return predict_loop(plan)
