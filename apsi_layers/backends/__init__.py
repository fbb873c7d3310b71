"""The backends, siblings found by name through registry.py: each supplies its op set (ops.py), its
session for the shared loop and its predict (loop.py) and its entry in the registry (backend.py);
everything else about fit and predict (option checks, data checks, finite checks, progress, batches,
the epoch loop, state layouts) is shared, in apsi_layers/layers/training/. No backend imports a
sibling's files; what two backends share lives in the shared core."""
