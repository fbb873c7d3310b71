"""`use layers`: layers, composition, zoo models, fit and predict, written once on a backend-neutral
op set (apsi_layers/ops). Usable from Python too: `from apsi_layers.layers import mlp, fit`.

Every layer constructor is registered where it is defined (registry.py) and bound here by its Apsi
name (dense, dropout, mlp, ...), so adding one needs no edit here.
"""
# ruff: noqa: F401  (this file re-exports the package's public names)

from . import registry
from .base import Layer
from .context import Ctx, Graph
from .custom import CustomLayer
from .generate import generate
from .preprocessing import adapt
from .summary import summary
from .training.api import fit, predict

globals().update(registry.constructors())
