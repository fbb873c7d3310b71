"""Fused ops for the layers' hot spots: one op per call, each with its own VJP (apsi_layers/ops uses them).

One module per family: elementwise, linear, conv, pool, norm, recurrent, attention, losses, graph.
"""
# ruff: noqa: F401  (this file re-exports the families' ops)

from .attention import attention
from .conv import conv
from .elementwise import dropout, elu, gelu, leaky_relu, sigmoid, silu, tanh
from .graph import bincount, scatter_add, segment_softmax, take
from .linear import dense
from .losses import bce_with_logits, softmax_cross_entropy
from .norm import batch_norm_eval, batch_norm_train, layer_norm, rms_norm
from .pool import avg_pool, max_pool
from .recurrent import gru, lstm
