"""Whole models in one file: save_model / load_model (model_file.py), the description as JSON
(description.py), Apsi functions as source (functions.py), and predict_labels, predict_proba,
model_from_checkpoint, export_onnx (api.py). docs/models.md describes the format."""
# ruff: noqa: F401  (this file re-exports the package's public names)

from .api import export_onnx, model_from_checkpoint, predict_labels, predict_proba
from .model_file import load_model, save_model
