"""torch-auto's choice: hardware in, one PyTorch build out, with one line of reasoning. Pure functions.

NVIDIA: among the CUDA indexes whose driver minimum the driver meets, take one whose kernels cover every
GPU; if none covers them all, one that covers the most capable GPU, with a warning naming the ones left
out. Between several that qualify, an index still receiving new PyTorch releases beats one that stopped
(cu129 only ever had 2.8), then the newest CUDA wins. AMD (Linux): a ROCm index whose gfx list holds the
GPUs. Intel Arc / Data Center / Core Ultra GPUs: the XPU index. macOS: PyPI's default build (MPS on Apple
silicon). Everything else: the CPU build.
"""

from dataclasses import dataclass

from . import torch_builds as tb
from .hardware import version_tuple


@dataclass(frozen=True)
class Plan:
    index: str | None                 # key in torch_builds.INDEXES; None: nothing to install (see stop)
    requirement: str = "torch"        # what pip is asked for, e.g. "torch>=2.6"
    first: str | None = None
    last: str | None = None
    reason: str = ""                  # one line: what was seen → what is chosen
    warnings: tuple = ()
    stop: str | None = None           # set when torch-auto must not install anything; says why and what to do
    default_index: bool = False       # install from pip's own default index (PyPI), not the PyTorch one

    @property
    def name(self):
        return tb.build_name(self.index) if self.index else "torch-auto"

    @property
    def summary(self):
        """'torch-cuda: PyTorch ≥ 2.6 + CUDA 12.6'"""
        if self.index is None:
            return "nothing"
        ix = tb.INDEXES[self.index]
        if self.default_index:
            return f"{self.name}: PyTorch from the default index (CPU, and MPS on Apple silicon)"
        return f"{self.name}: {tb.describe(ix, self.first, self.last)}"


def explicit(index_key):
    """The plan for a build named on the command line (no hardware involved)."""
    ix = tb.INDEXES[index_key]
    return Plan(index=index_key, requirement=tb.requirement(ix.first, ix.last), first=ix.first,
                last=ix.last, reason=f"{tb.build_name(index_key)}: {tb.describe(ix)}")


def explicit_warnings(hw, plan):
    """For a CUDA build named by the user: what this machine's driver and GPUs make of it."""
    ix = tb.INDEXES[plan.index]
    nv = hw.nvidia
    if ix.kind != "cuda" or not nv.gpus or not nv.driver:
        return ()
    warnings = []
    if not driver_ok(ix, nv.driver_tuple, hw.windows_driver):
        warnings.append(f"{ix.label} needs NVIDIA driver {driver_needed(ix, hw.windows_driver)} or newer; "
                        f"this machine has {nv.driver}, so PyTorch would fall back to the CPU "
                        "(`apsi pkg install torch-auto` picks a build this driver runs)")
    newest = ix.spans[-1]
    linux = hw.system == "Linux"
    missing = [g for g in nv.gpus if g.compute_cap and not cc_served(g.compute_cap, newest, linux)]
    if missing:
        names = ", ".join(g.describe() for g in missing)
        warnings.append(f"the newest PyTorch of {plan.name} has no kernels for {names}; "
                        "`apsi pkg install torch-auto` picks a build that has")
    return tuple(warnings)


def cc_served(cc, span, linux):
    """Whether a GPU of compute capability `cc` (major, minor) has kernels in `span`."""
    for arch in span.archs:
        major, minor = (int(p) for p in arch.split("."))
        if cc[0] == major and cc[1] >= minor:
            return True
    if span.ptx and linux:
        return cc >= tuple(int(p) for p in span.ptx.split("."))
    return False


def driver_ok(index, driver, windows):
    need = index.driver_windows if windows else index.driver_linux
    if need == tb.WINDOWS_UNLISTED:
        need = index.driver_linux
    return need is None or (driver is not None and driver >= version_tuple(need))


def driver_needed(index, windows):
    need = index.driver_windows if windows else index.driver_linux
    return index.driver_linux if need == tb.WINDOWS_UNLISTED else need


def choose(hw):
    """The Plan for this Hardware."""
    nv = hw.nvidia
    if nv.status in ("ok", "driver-only") and nv.driver:
        return _nvidia(hw)
    if nv.status == "not-loaded":
        return Plan(index=None, reason="NVIDIA driver installed but not loaded → no build chosen",
                    stop=f"{nv.note}. Then run `apsi pkg install torch-auto` again, or name a build "
                         "yourself (`apsi pkg install torch-cuda`, or `apsi pkg install torch` for CPU).")
    if nv.status in ("timeout", "error"):
        return Plan(index=None, reason="NVIDIA driver did not answer → no build chosen",
                    stop=f"{nv.note}. Or name a build yourself (e.g. `apsi pkg install torch-cuda`, "
                         "or `apsi pkg install torch` for CPU).")
    if hw.amd:
        return _amd(hw)
    if hw.intel:
        ix = tb.INDEXES["xpu"]
        names = ", ".join(g.describe() for g in hw.intel)
        return Plan(index="xpu", requirement=tb.requirement(ix.first, None), first=ix.first,
                    reason=f"{names} → torch-xpu: {tb.describe(ix)}")
    if hw.system == "Darwin":
        what = "Apple silicon (MPS)" if hw.apple_mps else "an Intel Mac (CPU only)"
        plan = Plan(index="cpu", requirement=f"torch>={tb.MIN_TORCH}", first=tb.MIN_TORCH,
                    default_index=True, reason="")
        return _with_reason(plan, f"macOS on {what} → {plan.summary}")
    plan = explicit("cpu")
    return _with_reason(plan, f"no NVIDIA, AMD or Intel GPU found → {plan.summary}")


def _with_reason(plan, reason, warnings=()):
    return Plan(**{**plan.__dict__, "reason": reason, "warnings": tuple(warnings)})


def _nvidia(hw):
    nv = hw.nvidia
    driver, windows, linux = nv.driver_tuple, hw.windows_driver, hw.system == "Linux"
    known = [g for g in nv.gpus if g.compute_cap]
    warnings = [f"{g.name}: its compute capability is unknown, so only the driver was checked"
                for g in nv.gpus if not g.compute_cap]
    if not nv.gpus:
        warnings.append("nvidia-smi listed no GPU models, so only the driver version was checked")
    top = max(known, key=lambda g: g.compute_cap) if known else None
    best = None
    for rank, ix in enumerate(reversed(tb.CUDA)):           # oldest CUDA first: rank grows with CUDA
        if not driver_ok(ix, driver, windows):
            continue
        for i in range(len(ix.spans) - 1, -1, -1):            # newest PyTorch first
            span = ix.spans[i]
            served = [g for g in known if cc_served(g.compute_cap, span, linux)]
            if known and not served:
                continue
            score = (top in served if top else True, len(served), span.last is None, rank)
            if best is None or score > best[0]:
                first = span.first
                for prev in reversed(ix.spans[:i]):
                    if all(cc_served(g.compute_cap, prev, linux) for g in served):
                        first = prev.first
                    else:
                        break
                best = (score, ix, first, span.last, served)
            break
    seen = _nvidia_seen(hw)
    if best is None:
        plan = explicit("cpu")
        oldest = tb.CUDA[-1]
        if not driver_ok(oldest, driver, windows):
            why = (f"driver {nv.driver} is older than every CUDA build needs ({oldest.label} needs "
                   f"{driver_needed(oldest, windows)} or newer)")
            fix = "update the NVIDIA driver to use the GPU, then run `apsi pkg install torch-auto` again"
        else:
            why = "no CUDA build this driver runs has kernels for these GPUs"
            fix = "a newer driver opens newer builds"
        return _with_reason(plan, f"{seen} → {plan.summary}", [f"{why}: installing the CPU build; {fix}"])
    _, ix, first, last, served = best
    left_out = [g for g in known if g not in served]
    for g in left_out:
        others = _who_serves(g, driver, windows, linux)
        hint = f" ({others} would serve it, but not {top.name})" if others else ""
        warnings.append(f"{g.describe()} has no kernels in {tb.build_name(ix.key)}; PyTorch will not "
                        f"be able to use it{hint}")
    plan = Plan(index=ix.key, requirement=tb.requirement(first, last), first=first, last=last)
    return _with_reason(plan, f"{seen} → {plan.summary}", warnings)


def _who_serves(gpu, driver, windows, linux):
    for ix in tb.CUDA:
        if driver_ok(ix, driver, windows) and any(cc_served(gpu.compute_cap, s, linux) for s in ix.spans):
            return tb.build_name(ix.key)
    return None


def _nvidia_seen(hw):
    nv = hw.nvidia
    counts = {}
    for g in nv.gpus:
        counts[g.describe()] = counts.get(g.describe(), 0) + 1
    gpus = " + ".join(f"{n}× {d}" if n > 1 else d for d, n in counts.items()) or "NVIDIA GPU"
    where = " (WSL)" if hw.wsl else ""
    return f"{gpus}, driver {nv.driver}{where}"


def _amd(hw):
    names = ", ".join(g.describe() for g in hw.amd)
    if hw.system != "Linux":
        plan = explicit("cpu")
        return _with_reason(plan, f"{names} → {plan.summary}",
                            ["PyTorch's ROCm builds are for Linux only: installing the CPU build"])
    archs = {g.arch for g in hw.amd}
    for ix in tb.ROCM:
        if archs <= set(ix.gfx):
            plan = Plan(index=ix.key, requirement=tb.requirement(ix.first, ix.last), first=ix.first,
                        last=ix.last)
            return _with_reason(plan, f"{names} → {plan.summary}")
    for ix in tb.ROCM:
        if archs & set(ix.gfx):
            missing = ", ".join(sorted(archs - set(ix.gfx)))
            plan = Plan(index=ix.key, requirement=tb.requirement(ix.first, ix.last), first=ix.first,
                        last=ix.last)
            return _with_reason(plan, f"{names} → {plan.summary}",
                                [f"{missing} has no kernels in {ix.label}; PyTorch will not use it"])
    plan = explicit("cpu")
    return _with_reason(plan, f"{names} → {plan.summary}",
                        [f"no ROCm build Apsi knows has kernels for {', '.join(sorted(archs))}: "
                         "installing the CPU build; `apsi pkg install torch --index-url URL` takes any "
                         "index"])


def installed_key(torch_info):
    """The index key of an installed build ('cu126', 'cpu', 'rocm6.2', 'xpu') from its version.py fields."""
    version = torch_info.get("version") or ""
    local = version.partition("+")[2]
    if torch_info.get("cuda"):
        return "cu" + "".join(torch_info["cuda"].split(".")[:2])
    if torch_info.get("hip"):
        return local or "rocm"
    if torch_info.get("xpu") or local == "xpu":
        return "xpu"
    return local or "cpu"


def suitability(hw, plan, torch_info):
    """(suits, sentence): whether an installed PyTorch fits this machine, judged against the plan."""
    key = installed_key(torch_info)
    version = torch_info.get("version", "?")
    if plan.index is None:
        return True, f"PyTorch {version} is installed; no better choice could be made"
    want = tb.INDEXES[plan.index]
    if key.startswith("cu") and hw.nvidia.gpus:
        ix = tb.INDEXES.get(key)
        if ix is None:
            return True, f"PyTorch {version} ({key}) is not in Apsi's table; kept as it is"
        if not driver_ok(ix, hw.nvidia.driver_tuple, hw.windows_driver):
            return False, (f"PyTorch {version} needs NVIDIA driver {driver_needed(ix, hw.windows_driver)} "
                           f"or newer, this machine has {hw.nvidia.driver}")
        span = _span_for(ix, version)
        linux = hw.system == "Linux"
        missing = [g for g in hw.nvidia.gpus if g.compute_cap and span
                   and not cc_served(g.compute_cap, span, linux)]
        if missing and want.kind == "cuda":
            names = ", ".join(g.describe() for g in missing)
            return False, f"PyTorch {version} has no kernels for {names}"
        return True, f"PyTorch {version} ({ix.label}) suits this machine"
    if want.kind == "cpu":
        return True, f"PyTorch {version} suits this machine"
    if key == want.key or (want.kind == "rocm" and key.startswith("rocm")) or key == "xpu" == want.kind:
        return True, f"PyTorch {version} suits this machine"
    what = "the CPU build" if key == "cpu" else key
    return False, f"PyTorch {version} is {what}, but this machine has a GPU that {plan.name} would use"


def _span_for(ix, version):
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version).release[:2]
    except InvalidVersion:
        return None
    for span in ix.spans:
        lo = tuple(int(p) for p in span.first.split("."))
        hi = tuple(int(p) for p in span.last.split(".")) if span.last else (999, 0)
        if lo <= v <= hi:
            return span
    return None
