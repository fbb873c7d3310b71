"""`use layers`: layers, composition, zoo models, fit and predict, written once on a backend-neutral
op set (apsi_layers/ops). Usable from Python too: `from apsi_layers.layers import mlp, fit`.
"""
# ruff: noqa: F401  (this file re-exports the package's public names)

from .attention import attention, positions, transformer_block
from .base import Layer
from .compose import dag, merge, parallel, residual, sequential
from .context import Ctx, Graph
from .conv import avg_pool1d, avg_pool2d, conv1d, conv2d, global_avg_pool, max_pool1d, max_pool2d
from .core import activation, dense, embedding, flatten, lambda_layer
from .core import dropout_layer as dropout
from .custom import CustomLayer
from .generate import generate
from .graph import gat_layer, gcn_layer, gin_layer, sage_layer
from .norm import batch_norm, layer_norm, rms_norm
from .preprocessing import adapt, category_lookup, impute, normalization
from .recurrent import gru_layer, lstm_layer
from .summary import summary
from .training.api import fit, predict
from .zoo import cnn_classifier, gcn_classifier, lstm_classifier, mlp, resnet_mlp, transformer_lm, vae
