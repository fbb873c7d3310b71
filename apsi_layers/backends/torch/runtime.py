"""Importing torch: only here, only when the torch backend is used, with a message that says what to do."""

import sys

from apsi_lang.errors import ApsiError


def load_torch(what='backend="torch"'):
    """The torch module, or an ApsiError saying how to install it."""
    try:
        import torch
    except ImportError as e:
        raise ApsiError(
            f"{what} needs PyTorch, which is not installed in the Python that runs Apsi "
            f"({sys.executable}): run `apsi pkg install torch-auto` (it picks the build for this "
            f"machine), or use backend=\"numpy\" ({e})") from None
    return torch
