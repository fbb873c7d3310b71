"""The two backends, siblings: each supplies its op set (ops.py) and its training step and loops
(loop.py); everything else about fit and predict (option checks, data checks, finite checks, progress,
batches) is shared, in apsi_layers/layers/training/."""
