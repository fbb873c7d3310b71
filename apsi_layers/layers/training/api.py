"""fit and predict: check everything once (plan.py), choose the backend, run it.

The seam to the torch backend: backend="torch" asks apsi_lang for permission 'python', then hands
the plan to apsi_layers.backends.torch.fit.fit_torch(plan) / .predict_torch(plan). backend="auto"
takes torch only when PyTorch is installed, 'python' is granted and that backend is present;
otherwise it runs on NumPy, and torch-only options (device, precision, compile) are set aside with
one note on stderr naming them, so a program written for "auto" runs everywhere.
"""

import importlib.util
import sys

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from .memory import is_out_of_memory, out_of_memory
from .option_checks import check_backend, check_numpy_options, torch_only_options
from .plan import fit_plan, predict_plan

TORCH_MODULE = "apsi_layers.backends.torch.fit"


def _torch_installed():
    return importlib.util.find_spec("torch") is not None


def _torch_backend_present():
    try:
        return importlib.util.find_spec(TORCH_MODULE) is not None
    except ModuleNotFoundError:
        return False


def choose(fn, backend):
    """"numpy" or "torch" for backend=; raises for a torch request that cannot be met."""
    check_backend(fn, backend)
    if backend == "numpy":
        return "numpy"
    # the permission is an Apsi program's; a Python caller (no grants installed) is not sandboxed
    may_use_python = not permissions.sandboxed() or permissions.allowed("python")
    if backend == "auto":
        if may_use_python and _torch_installed() and _torch_backend_present():
            return "torch"
        return "numpy"
    if not may_use_python:
        permissions.require("python", what=f'{fn}(backend="torch")')
    if not _torch_installed():
        # the message begins as docs/backends.md's troubleshooting table lists it
        raise ApsiError(f'backend="torch" needs PyTorch, which is not installed in the Python that runs '
                        f'Apsi ({sys.executable}): install it with `apsi pkg install torch-auto` (or give '
                        f'{fn} backend="numpy")')
    if not _torch_backend_present():
        raise ApsiError(f'{fn}: backend="torch" needs PyTorch support in apsi_layers (apsi_layers/'
                        'backends/torch), which this installation lacks; use backend="numpy"')
    return "torch"


_NOTED = set()      # the notes already printed in this process: a fit in a loop says it once


def _set_aside(fn, plan):
    """backend="auto" chose NumPy: drop the torch-only options, saying so once on stderr."""
    dropped = torch_only_options(plan)
    if not dropped:
        return
    plan.device, plan.precision, plan.compile = None, None, False
    named = ", ".join(f"{k}={show(v, True)}" for k, v in dropped)
    if named in _NOTED:
        return
    _NOTED.add(named)
    why = "PyTorch is not installed" if not _torch_installed() else "permission 'python' is not granted"
    print(f'note: {fn}(backend="auto") runs on NumPy here ({why}), in float64 on the CPU; '
          f"ignoring {named}", file=sys.stderr, flush=True)


def fit(model, params, inputs, targets=None, **options):
    """Train `model` from `params`; returns {params, history, val_history, device, backend, steps,
    seconds}. Options: see docs/layers.md."""
    units = _units()
    if units and (units.any_quantity(inputs, targets, options.get("val")) or callable(options.get("loss"))):
        inputs, targets, options = units.fit_args(inputs, targets, options)
    return _run("fit", fit_plan(model, params, inputs, targets, options))


def predict(model, params, x, **options):
    """The model's output for x in evaluation mode (no dropout, running statistics): an nn tensor
    (with unit="km/h" under `use units`, the output read as SI and converted to that unit)."""
    if _on_disk(x):          # a mapped array or a dataset: predicted piece by piece (apsi_layers/data)
        from apsi_layers.data.predict_source import predict_pieces

        return predict_pieces(lambda piece: predict(model, params, piece, **options), x)
    units = _units()
    if units and (units.any_quantity(x) or "unit" in options):
        x, options, unit = units.predict_args(x, options)
        y = _run("predict", predict_plan(model, params, x, options))
        return y if unit is None else units.output_in(y, unit)
    return _run("predict", predict_plan(model, params, x, options))


def _on_disk(x):
    if "apsi_layers.data.memmap" not in sys.modules:
        return False
    from apsi_layers.data.fit_data import is_source

    return is_source(x)


def _units():
    """apsi_layers.units.training when `use units` has run (quantities exist only then)."""
    if "apsi_layers.units.quantity" not in sys.modules:
        return None
    from apsi_layers.units import training

    return training


def _run(fn, plan):
    try:
        return _run_on_backend(fn, plan)
    except (MemoryError, RuntimeError) as e:
        if is_out_of_memory(e):
            raise out_of_memory(fn, plan) from None
        raise


def _run_on_backend(fn, plan):
    requested = plan.backend
    plan.backend = choose(fn, requested)
    if getattr(plan, "distributed", False) and plan.backend != "torch":
        raise ApsiError(f'fit: distributed training runs on PyTorch: give fit backend="torch" (and run with '
                        f'--allow-python), not backend="{requested}"')
    if plan.backend == "torch":
        from apsi_layers.backends.torch import fit as torch_fit

        return getattr(torch_fit, f"{fn}_torch")(plan)
    if requested == "auto":
        _set_aside(fn, plan)
    check_numpy_options(fn, plan)
    from apsi_layers.backends.numpy import loop as numpy_loop

    return getattr(numpy_loop, f"{fn}_numpy")(plan)
