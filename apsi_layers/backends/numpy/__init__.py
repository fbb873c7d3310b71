"""The NumPy backend: float64 autodiff tensors (apsi_layers/nn), the op set on them, fit's loops."""
