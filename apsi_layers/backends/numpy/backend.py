"""The NumPy backend's entry in the registry (backends/registry.py): float64 on the CPU, always there."""

from typing import TYPE_CHECKING, Any

from apsi_lang.errors import ApsiError

from ..registry import Defaults

if TYPE_CHECKING:
    from apsi_layers.layers.training.plan import FitPlan, PredictPlan
    from apsi_layers.layers.training.session import Session
    from apsi_layers.ops.protocol import OpSet


class NumpyBackend(Defaults):
    name = "numpy"

    def opset(self) -> "OpSet":
        from .ops import OPSET

        return OPSET

    def unsupported(self, plan: "FitPlan | PredictPlan") -> list[tuple[str, Any]]:
        """[(option, value)] that only another backend can honour (device, precision, compile)."""
        out: list[tuple[str, Any]] = []
        if plan.device not in (None, "auto", "cpu", "numpy"):
            out.append(("device", plan.device))
        if plan.precision not in (None, "fp64"):
            out.append(("precision", plan.precision))
        if plan.compile:
            out.append(("compile", True))
        return out

    def check_plan(self, fn: str, plan: "FitPlan | PredictPlan", why: str = "") -> None:
        """device/precision/compile make sense on torch only; on NumPy only their neutral values pass."""
        if plan.device not in (None, "auto", "cpu", "numpy"):
            raise ApsiError(f'{fn}: device="{plan.device}" needs backend="torch"{why}; the NumPy backend '
                            'runs on the CPU (device="cpu")')
        if plan.precision not in (None, "fp64"):
            raise ApsiError(f'{fn}: precision="{plan.precision}" needs backend="torch"{why}; the NumPy '
                            'backend computes in float64 (precision="fp64")')
        if plan.compile not in (False, None):
            raise ApsiError(f"{fn}: compile=true needs backend=\"torch\"{why}")

    def session(self, plan: "FitPlan") -> "Session":
        from .loop import NumpySession

        return NumpySession(plan)

    def predict(self, plan: "PredictPlan", keep: dict | None = None) -> Any:
        from .loop import predict_numpy

        return predict_numpy(plan)


BACKEND = NumpyBackend()
