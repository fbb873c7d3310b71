"""A third backend, for tests: NumPy in float32 on `nn`'s autodiff, registered by name ("toy32").

It shows what a backend is: an op set (ops.py), a session for the shared epoch loop
(session.py: the protocol in apsi_layers/layers/training/driver.py) and the registry entry below.
Nothing outside this folder and apsi_layers/backends/registry.py knows it exists.
"""

from apsi_lang.errors import ApsiError
from apsi_layers.backends.registry import Defaults


class Toy32Backend(Defaults):
    name = "toy32"
    default_precision = "fp32"      # (a checkpoint records it: a resume must compute alike)

    def opset(self):
        from .ops import OPSET

        return OPSET

    def unsupported(self, plan):
        return [(k, v) for k, v in (("device", plan.device), ("precision", plan.precision))
                if v not in (None, "cpu", "fp32")]

    def check_plan(self, fn, plan, why=""):
        for option, value in self.unsupported(plan):
            raise ApsiError(f'{fn}: {option}="{value}" is not available on backend="toy32" (cpu, fp32)')
        if plan.graph is not None:
            raise ApsiError(f"{fn}: backend=\"toy32\" has no graph support")

    def session(self, plan):
        from .session import Toy32Session

        return Toy32Session(plan, self.opset())

    def predict(self, plan, keep=None):
        from .session import predict

        return predict(plan, self.opset())


BACKEND = Toy32Backend()
