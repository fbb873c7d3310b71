"""Backends found by name: the one seam between fit/predict/generate/`use web` and a backend.

A backend is an object with the interface `Backend` below, found by its name:
- the built-in ones, `numpy` and `torch`, in backends/<name>/backend.py (importing that file must not
  import the backend's heavy library: the registry reads `missing()` and `permission` first);
- one a Python program registers with `register(backend)` (a test's toy backend does);
- one an installed package names in the entry-point group "apsi.backends" (its object is loaded when a
  program first asks for that name).

What runs through the interface: fit builds a frozen plan (layers/training/plan.py), the registry
chooses the backend, the backend checks the options only it knows (`check_plan`), makes a session
(the protocol in layers/training/driver.py), and the shared driver runs it; predict calls the
backend's `predict`. Nothing outside backends/<name>/ imports a backend's own modules.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from apsi_lang import permissions
from apsi_lang.errors import ApsiError

if TYPE_CHECKING:
    from apsi_layers.layers.training.plan import FitPlan, PredictPlan
    from apsi_layers.layers.training.session import Session
    from apsi_layers.ops.protocol import OpSet

GROUP = "apsi.backends"
BUILTIN = {"numpy": "apsi_layers.backends.numpy.backend", "torch": "apsi_layers.backends.torch.backend"}
# backend="auto": the first of these present and permitted (NumPy is always both)
AUTO = ("torch", "numpy")
AUTO_NAME = "auto"
LABELS = {"numpy": "NumPy", "torch": "PyTorch"}


class Backend(Protocol):
    name: str
    permission: str | None          # what an Apsi program must be granted to use it ("python"), or None
    default_precision: str          # what it computes in when precision= is not given (a checkpoint's)
    supports_distributed: bool      # fit(distributed=true) under `apsi launch` runs on it
    fork_problem: str | None        # why forked processes cannot use it (serve_model's workers=), or None

    def missing(self, fn: str) -> str | None:
        """Why this Python cannot run the backend (its library is not installed), or None."""

    def opset(self) -> "OpSet":
        """The op set (ops/spec.py's names) at the backend's reference precision, on the CPU."""

    def check_plan(self, fn: str, plan: "FitPlan | PredictPlan", why: str = "") -> None:
        """Raise for an option this backend cannot honour (device=, precision=, compile=)."""

    def unsupported(self, plan: "FitPlan | PredictPlan") -> list[tuple[str, Any]]:
        """[(option, value)] this backend cannot honour: backend="auto" sets them aside."""

    def session(self, plan: "FitPlan") -> "Session":
        """fit's state for the shared loop (the protocol in layers/training/driver.py)."""

    def predict(self, plan: "PredictPlan", keep: dict | None = None) -> Any:
        """The model's outputs for a PredictPlan; `keep` lets a caller that predicts again and again
        with the same parameters (use web's server) keep them on the device between calls."""

    def exports(self) -> dict:
        """Names the backend adds to `use layers` (devices(), torch_module(), ...)."""

    # optional: check(device, out) -> a Result with .ok, comparing every layer with the NumPy reference
    # (torch's is `apsi check-torch`)


class Defaults:
    """What most backends answer: a base class to subclass (a backend need not: the interface is the
    Protocol above). Each backend still gives name, opset, session and predict."""

    permission: str | None = None
    default_precision = "fp64"
    supports_distributed = False
    fork_problem: str | None = None

    def missing(self, fn: str) -> str | None:
        return None

    def unsupported(self, plan: "FitPlan | PredictPlan") -> list[tuple[str, Any]]:
        return []

    def check_plan(self, fn: str, plan: "FitPlan | PredictPlan", why: str = "") -> None:
        return None

    def exports(self) -> dict:
        return {}


_registered: dict[str, Backend] = {}
_loaded: dict[str, Backend] = {}


def register(backend: Backend) -> None:
    """Make `backend` findable by its name (replacing an earlier one of that name)."""
    _registered[backend.name] = backend
    _loaded.pop(backend.name, None)


def unregister(name: str) -> None:
    _registered.pop(name, None)
    _loaded.pop(name, None)


def names() -> list[str]:
    """Every backend name fit accepts, "auto" included, in the order messages list them."""
    from apsi_lang.installed import entry_points

    found = ["numpy", AUTO_NAME, *[n for n in BUILTIN if n != "numpy"], *_registered]
    found += [n for n in entry_points(GROUP) if n not in found]
    return found


def present(name: str) -> bool:
    """Whether this installation holds the backend `name` (its files: not whether it can run)."""
    try:
        find(name)
    except ModuleNotFoundError:
        return False
    return True


def find(name: str) -> Backend:
    """The backend called `name`; ModuleNotFoundError when its files are not part of this install."""
    if name in _registered:
        return _registered[name]
    if name not in _loaded:
        if name in BUILTIN:
            _loaded[name] = import_module(BUILTIN[name]).BACKEND
        else:
            _loaded[name] = _plugin(name)
    return _loaded[name]


def _plugin(name: str) -> Backend:
    from apsi_lang.installed import entry_points

    ep = entry_points(GROUP).get(name)
    if ep is None:
        raise ModuleNotFoundError(f"no backend {name!r}")
    try:
        return ep.load()()
    except Exception as e:      # a broken plug-in: say whose it is (as `use layers`' plug-ins do)
        raise ApsiError(f'backend="{name}": the plug-in\'s entry point {ep.value!r} failed to load: '
                        f"{type(e).__name__}: {e}") from None


def may_use(backend: Backend) -> bool:
    """The permission is an Apsi program's; a Python caller (no grants installed) is not sandboxed."""
    need = backend.permission
    return need is None or not permissions.sandboxed() or permissions.allowed(need)


def choose(fn: str, requested: str) -> Backend:
    """The backend for backend=`requested`; raises for a request that cannot be met."""
    check_name(fn, requested)
    if requested == AUTO_NAME:
        return _auto()
    if not present(requested):
        raise ApsiError(f'{fn}: backend="{requested}" needs {LABELS.get(requested, requested)} support in '
                        f'apsi_layers (apsi_layers/backends/{requested}), which this installation lacks; use '
                        'backend="numpy"')
    backend = find(requested)
    if not may_use(backend):
        permissions.require(backend.permission, what=f'{fn}(backend="{requested}")')
    why = backend.missing(fn)
    if why is not None:
        raise ApsiError(why)
    return backend


def _auto() -> Backend:
    for name in AUTO:
        if present(name):
            backend = find(name)
            if may_use(backend) and backend.missing("auto") is None:
                return backend
    return find("numpy")


def passed_over(fn: str) -> str:
    """Why backend="auto" did not take the first of AUTO (it took a later one): its library is missing,
    or the program lacks its permission."""
    name = AUTO[0]
    backend = find(name) if present(name) else None
    if backend is None or backend.missing(fn) is not None:
        return f"{LABELS.get(name, name)} is not installed"
    return f"permission '{backend.permission}' is not granted"


def distributed_advice(requested: str) -> str:
    """fit(distributed=true) on a backend without it: the built-in backend that has it, and its grant."""
    name = next((n for n in BUILTIN if present(n) and find(n).supports_distributed), None)
    if name is None:
        return f'fit: distributed training needs a backend that supports it, not backend="{requested}"'
    backend = find(name)
    grant = f" (and run with --allow-{backend.permission})" if backend.permission else ""
    return (f'fit: distributed training runs on {LABELS.get(name, name)}: give fit backend="{name}"{grant}, '
            f'not backend="{requested}"')


def check_name(fn: str, name: str) -> None:
    from apsi_layers.layers.suggest import unknown

    if isinstance(name, str) and (name in BUILTIN or name == AUTO_NAME or name in _registered):
        return
    known = names()
    if name not in known:
        raise ApsiError(f"{fn}: {unknown('backend', name, known)}")


def exports() -> dict:
    """What the built-in backends add to `use layers` (devices(), check_torch(), torch_module(), ...)."""
    out: dict = {}
    for name in BUILTIN:
        if present(name):
            out.update(find(name).exports())
    return out
