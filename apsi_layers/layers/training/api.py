"""fit and predict: check everything once (plan.py), choose the backend (backends/registry.py), run it.

The registry finds a backend by name. backend="torch" asks apsi_lang for permission 'python' and
says how to install PyTorch when it is missing. backend="auto" takes torch only when PyTorch is
installed, 'python' is granted and that backend is present; otherwise it runs on NumPy, and the
options NumPy cannot honour (device, precision, compile) are set aside with one note on stderr naming
them, so a program written for "auto" runs everywhere. fit runs the backend's session in the shared
loop (driver.py); predict calls the backend's predict.
"""

import sys
from dataclasses import replace
from typing import Any, TypeVar

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers import fit_hooks
from apsi_layers.backends import registry

from ..base import Layer
from . import options as options_table
from .memory import is_out_of_memory, out_of_memory
from .plan import FitPlan, PredictPlan, fit_plan, predict_plan

Plan = TypeVar("Plan", FitPlan, PredictPlan)


def choose(fn: str, backend: str) -> str:
    """The name of the backend that backend= asks for; raises for a request that cannot be met."""
    return registry.choose(fn, backend).name


_NOTED: set[str] = set()      # the notes already printed in this process: a fit in a loop says it once


def _set_aside(fn: str, plan: Plan) -> Plan:
    """backend="auto" chose NumPy: drop the torch-only options, saying so once on stderr."""
    dropped = registry.find("numpy").unsupported(plan)
    if not dropped:
        return plan
    named = ", ".join(f"{k}={show(v, True)}" for k, v in dropped)
    if named not in _NOTED:
        _NOTED.add(named)
        why = registry.passed_over(fn)
        print(f'note: {fn}(backend="auto") runs on NumPy here ({why}), in float64 on the CPU; '
              f"ignoring {named}", file=sys.stderr, flush=True)
    return replace(plan, device=None, precision=None, compile=False)


def fit(model: Layer, params: Any, inputs: Any, targets: Any = None, **options: Any) -> Record:
    """Train `model` from `params`; returns {params, history, val_history, metrics, opt, device,
    backend, steps, seconds, …}. Options (docs/layers.md has each in full):
"""
    for hook in fit_hooks.active():
        inputs, targets, options = hook.adapt_fit(inputs, targets, options)
    return _run("fit", fit_plan(model, params, inputs, targets, options))


fit.__doc__ += options_table.help_text() + "\n"


def predict(model: Layer, params: Any, x: Any, **options: Any) -> Any:
    """The model's output for x in evaluation mode (no dropout, running statistics): an nn tensor
    (with unit="km/h" under `use units`, the output read as SI and converted to that unit)."""
    if _on_disk(x):          # a mapped array or a dataset: predicted piece by piece (apsi_layers/data)
        from apsi_layers.data.predict_source import predict_pieces

        return predict_pieces(lambda piece: predict(model, params, piece, **options), x)
    outputs = []                # each hook's way back (units: the output read in unit=)
    for hook in fit_hooks.active():
        x, options, back = hook.adapt_predict(x, options)
        outputs.append(back)
    y = _run("predict", predict_plan(model, params, x, options))
    for back in reversed(outputs):
        y = back(y)
    return y


def predict_kept(model: Layer, params: Any, x: Any, keep: dict, **options: Any) -> Any:
    """predict with the parameters kept between calls in `keep` (a dict the caller holds: use web's
    server passes the same one each time, so the torch backend moves them to the device once)."""
    return _run("predict", predict_plan(model, params, x, options), keep)


def _on_disk(x: Any) -> bool:
    if "apsi_layers.data.memmap" not in sys.modules:
        return False
    from apsi_layers.data.fit_data import is_source

    return is_source(x)


def _run(fn: str, plan: Plan, keep: dict | None = None) -> Any:
    try:
        return _run_on_backend(fn, plan, keep)
    except (MemoryError, RuntimeError) as e:
        if is_out_of_memory(e):
            raise out_of_memory(fn, plan) from None
        raise


def _run_on_backend(fn: str, plan: Plan, keep: dict | None = None) -> Any:
    requested = plan.backend
    backend = registry.choose(fn, requested)
    if getattr(plan, "distributed", False) and not backend.supports_distributed:
        raise ApsiError(registry.distributed_advice(requested))
    if requested == registry.AUTO_NAME and backend.name == "numpy":
        plan = _set_aside(fn, plan)
    plan = replace(plan, backend=backend.name)
    backend.check_plan(fn, plan)
    if backend.name != "numpy" and plan.precision != "fp64":
        from ..preprocessing import check_codes_fit_float32

        check_codes_fit_float32(fn, plan.model, plan.params, plan.precision or "fp32")
    if isinstance(plan, PredictPlan):
        return backend.predict(plan, keep)
    from .driver import fit_loop

    return fit_loop(plan, backend.session(plan))
