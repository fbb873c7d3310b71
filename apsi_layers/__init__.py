"""Apsi's ML library: a plain Python package, also exposed to Apsi as the modules `nn` (and later `layers`).

`apsi_layers.nn` is the NumPy backend: float64 tensors with reverse-mode autodiff, optimizers, schedules,
losses, parameter trees and parameter files. `apsi_modules` declares what Apsi programs see.
"""
