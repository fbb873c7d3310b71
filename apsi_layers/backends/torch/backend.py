"""The torch backend's entry in the registry (backends/registry.py). Importing this file does not
import torch: `missing()` only asks whether it is installed; the rest loads it when called."""

import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from ..registry import Defaults

if TYPE_CHECKING:
    from apsi_layers.layers.training.plan import FitPlan, PredictPlan
    from apsi_layers.layers.training.session import Session
    from apsi_layers.ops.protocol import OpSet


class TorchBackend(Defaults):
    name = "torch"
    permission = "python"          # PyTorch runs outside Apsi's sandbox
    default_precision = "fp32"
    supports_distributed = True     # DDP/FSDP over torchrun's processes (sharded.py)
    fork_problem = "PyTorch's thread pools and a GPU's context do not survive a fork"

    def missing(self, fn: str) -> str | None:
        if importlib.util.find_spec("torch") is not None:
            return None
        # the message begins as docs/backends.md's troubleshooting table lists it
        return (f'backend="torch" needs PyTorch, which is not installed in the Python that runs Apsi '
                f'({sys.executable}): install it with `apsi pkg install torch-auto` (or give {fn} '
                'backend="numpy")')

    def opset(self) -> "OpSet":
        """The float64 op set on the CPU (check_torch's precision)."""
        torch = self._load()
        from .ops import NumpyStreamOps

        return NumpyStreamOps(torch.device("cpu"), torch.float64)

    # device= and precision= are checked when the session selects them (devices.py, precision.py)

    def session(self, plan: "FitPlan") -> "Session":
        self._load()
        from .loop import TorchSession

        return TorchSession(plan)

    def predict(self, plan: "PredictPlan", keep: dict | None = None) -> Any:
        self._load()
        from .loop import predict_loop

        return predict_loop(plan, keep=keep)

    def check(self, device="auto", out=print):
        """check_torch's comparison of every layer with NumPy in float64 (check.py); returns its Result."""
        from .check import check_torch

        return check_torch(device, out=out)

    def exports(self) -> dict:
        from .exports import torch_exports

        return torch_exports()

    def _load(self):
        from .runtime import load_torch

        return load_torch()


BACKEND = TorchBackend()
