"""torch-auto's choice: hardware in, one PyTorch build out, with one line of reasoning. Pure functions.

NVIDIA: among the CUDA indexes this driver runs (CUDA's minor-version compatibility: any 12.x build on
a 12.x-era driver, …), take one whose kernels cover every GPU; if none covers them all, one that covers
the most capable GPU, with a warning naming the ones left out. Between several that qualify, the one
that reaches the newest PyTorch wins (cu126 reaches 2.14, cu128 stopped at 2.11), then the newest CUDA.
Linux aarch64 uses the aarch64 wheels' own architecture lists; Jetson boards before Thor have no build
on PyTorch's index. AMD (Linux): the ROCm index whose gfx list holds the GPUs and reaches the newest
PyTorch. Intel Arc / Data Center / Core Ultra GPUs: the XPU index. macOS: PyPI's default build (MPS on
Apple silicon). Everything else: the CPU build.
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
    missing = [g for g in nv.gpus if g.compute_cap and not cc_served(g.compute_cap, newest, linux, hw.arm)]
    if missing:
        names = ", ".join(g.describe() for g in missing)
        warnings.append(f"the newest PyTorch of {plan.name} has no kernels for {names}; "
                        "`apsi pkg install torch-auto` picks a build that has")
    return tuple(warnings)


def cc_served(cc, span, linux, arm=False):
    """Whether a GPU of compute capability `cc` (major, minor) has kernels in `span` (on aarch64: in
    its aarch64 wheels)."""
    archs = span.arm if arm else span.archs
    if archs is None:
        return False
    for arch in archs:
        major, minor = (int(p) for p in arch.split("."))
        if cc[0] == major and cc[1] >= minor:
            return True
    if span.ptx and linux and (not arm or span.ptx in archs):
        return cc >= tuple(int(p) for p in span.ptx.split("."))
    return False


def driver_ok(index, driver, windows):
    need = index.driver_needed(windows)
    return need is None or (driver is not None and driver >= version_tuple(need))


def driver_needed(index, windows):
    return index.driver_needed(windows)


def choose(hw):
    """The Plan for this Hardware."""
    if hw.override_error:
        return Plan(index=None, reason="an override is malformed → no build chosen",
                    stop=f"{hw.override_error}.")
    nv = hw.nvidia
    if nv.status in ("ok", "driver-only") and nv.driver:
        return _nvidia(hw)
    if nv.status in ("not-loaded", "mismatch", "timeout", "no-devices", "error"):
        what = {"not-loaded": "NVIDIA driver installed but not loaded",
                "mismatch": "NVIDIA driver updated but not yet running (version mismatch)",
                "timeout": "nvidia-smi did not answer", "no-devices": "NVIDIA driver sees no GPU",
                "error": "NVIDIA driver could not be read"}[nv.status]
        fix = f" Fix: {nv.fix}." if nv.fix else ""
        return Plan(index=None, reason=f"{what} → no build chosen",
                    stop=f"{nv.note}.{fix} Then run `apsi pkg install torch-auto` again, or name a build "
                         "yourself (`apsi pkg install torch-cuda`, or `apsi pkg install torch` for CPU).")
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


def _cuda_key(ix):
    return tuple(int(p) for p in ix.label.split()[-1].split("."))


def _nvidia(hw):
    nv = hw.nvidia
    driver, windows, linux, arm = nv.driver_tuple, hw.windows_driver, hw.system == "Linux", hw.arm
    known = [g for g in nv.gpus if g.compute_cap]
    warnings = [f"{g.name}: its compute capability is unknown, so only the driver was checked"
                for g in nv.gpus if not g.compute_cap]
    if not nv.gpus:
        why = ("APSI_CUDA_DRIVER_VERSION is set, so nvidia-smi was not asked" if nv.source ==
               "APSI_CUDA_DRIVER_VERSION" else "nvidia-smi listed none")
        warnings.append(f"no GPU models are known ({why}), so only the driver version was checked; "
                        "APSI_GPU_COMPUTE_CAPABILITY tells Apsi what they are")
    if nv.lost:
        warnings.append(f"{nv.note}; the choice is for the GPUs that answered. Reboot to recover it")
    seen = _nvidia_seen(hw)
    top = max(known, key=lambda g: g.compute_cap) if known else None
    if hw.jetson and not (top and top.compute_cap >= (11, 0)):
        plan = explicit("cpu")
        return _with_reason(plan, f"{seen} → {plan.summary}", warnings + [
            f"{hw.jetson}: PyTorch's own CUDA wheels run on Jetson Thor (JetPack 7) and newer only; "
            "for Orin and Xavier, NVIDIA publishes PyTorch wheels built for each JetPack release "
            "(install one with `apsi pkg install torch --index-url URL`): installing the CPU build"])
    best = None
    for ix in tb.CUDA:
        if not driver_ok(ix, driver, windows):
            continue
        for i in range(len(ix.spans) - 1, -1, -1):            # every span, newest first
            span = ix.spans[i]
            if arm and span.arm is None:
                continue
            served = [g for g in known if cc_served(g.compute_cap, span, linux, arm)]
            if known and not served:
                continue
            score = (top in served if top else True, len(served), tb.version_key(span.last), _cuda_key(ix))
            if best is None or score > best[0]:
                first = span.first
                for prev in reversed(ix.spans[:i]):
                    if all(cc_served(g.compute_cap, prev, linux, arm) for g in served) and \
                            not (arm and prev.arm is None):
                        first = prev.first
                    else:
                        break
                best = (score, ix, first, span.last, served)
            # no break: an older span may cover more of the GPUs (cu128 2.8-2.10 has Volta, 2.11 not)
    if best is None:
        plan = explicit("cpu")
        return _with_reason(plan, f"{seen} → {plan.summary}", warnings + [_no_build(hw, top)])
    _, ix, first, last, served = best
    left_out = [g for g in known if g not in served]
    for g in left_out:
        others = _who_serves(g, driver, windows, linux, arm)
        hint = f" ({others} would serve it, but not {top.name})" if others else ""
        warnings.append(f"{g.describe()} has no kernels in {tb.build_name(ix.key)}; PyTorch will not "
                        f"be able to use it{hint}")
    plan = Plan(index=ix.key, requirement=tb.requirement(first, last), first=first, last=last)
    return _with_reason(plan, f"{seen} → {plan.summary}", warnings)


def _no_build(hw, top):
    """Why no CUDA build fits, and what would change that."""
    nv, linux, arm = hw.nvidia, hw.system == "Linux", hw.arm
    if top is not None and not any(cc_served(top.compute_cap, s, linux, arm) for ix in tb.CUDA
                                   for s in ix.spans):
        if top.compute_cap[0] <= 3:
            return (f"no PyTorch CUDA build (PyTorch {tb.MIN_TORCH} or newer) has kernels for "
                    f"{top.describe()}: Kepler GPUs were dropped, and their last driver is R470, so "
                    "no driver update changes this: installing the CPU build")
        return (f"no PyTorch CUDA build has kernels for {top.describe()}"
                f"{' in its Linux aarch64 wheels' if arm else ''}: installing the CPU build")
    oldest = tb.CUDA[-1]
    if not driver_ok(oldest, nv.driver_tuple, hw.windows_driver):
        return (f"driver {nv.driver} is older than every CUDA build needs ({oldest.label} needs "
                f"{driver_needed(oldest, hw.windows_driver)} or newer): installing the CPU build; "
                "update the NVIDIA driver to use the GPU, then run `apsi pkg install torch-auto` again")
    return ("no CUDA build this driver runs has kernels for these GPUs: installing the CPU build; "
            "a newer driver opens newer builds (CUDA 13 needs 580 or newer)")


def _who_serves(gpu, driver, windows, linux, arm=False):
    for ix in tb.CUDA:
        if driver_ok(ix, driver, windows) and any(cc_served(gpu.compute_cap, s, linux, arm)
                                                  for s in ix.spans):
            return tb.build_name(ix.key)
    return None


def _counted(gpus):
    """'2× AMD Instinct MI300X (gfx942) + Radeon RX 7900 XTX (gfx1100)'"""
    counts = {}
    for g in gpus:
        counts[g.describe()] = counts.get(g.describe(), 0) + 1
    return " + ".join(f"{n}× {d}" if n > 1 else d for d, n in counts.items())


def _nvidia_seen(hw):
    nv = hw.nvidia
    gpus = _counted(nv.gpus) or "NVIDIA GPU"
    where = " (WSL)" if hw.wsl else ""
    return f"{gpus}, driver {nv.driver}{where}"


def _amd(hw):
    names = _counted(hw.amd)
    if hw.system != "Linux":
        plan = explicit("cpu")
        return _with_reason(plan, f"{names} → {plan.summary}",
                            ["PyTorch's ROCm builds are for Linux only: installing the CPU build"])
    archs = {g.arch for g in hw.amd}
    for whole in (True, False):                 # ROCM is newest first: the first match reaches furthest
        for ix in tb.ROCM:
            if (archs <= set(ix.gfx)) if whole else (archs & set(ix.gfx)):
                plan = Plan(index=ix.key, requirement=tb.requirement(ix.first, ix.last), first=ix.first,
                            last=ix.last)
                missing = _counted([g for g in hw.amd if g.arch not in ix.gfx])
                warnings = [] if whole else [f"{missing} has no kernels in {ix.label}: PyTorch cannot use "
                                             "it, and may fail if a program does; HIP_VISIBLE_DEVICES "
                                             "(the numbers of the other GPUs) hides it"]
                return _with_reason(plan, f"{names} → {plan.summary}", warnings)
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
                   and not cc_served(g.compute_cap, span, linux, hw.arm)]
        if missing and want.kind == "cuda":
            names = ", ".join(g.describe() for g in missing)
            return False, f"PyTorch {version} has no kernels for {names}"
        return True, f"PyTorch {version} ({ix.label}) suits this machine"
    if want.kind == "cpu":
        return True, f"PyTorch {version} suits this machine"
    have = tb.INDEXES.get(key)
    if have is not None and have.kind == "rocm" and hw.amd:
        missing = [g for g in hw.amd if g.arch not in have.gfx]
        if missing:
            return False, f"PyTorch {version} ({have.label}) has no kernels for {_counted(missing)}"
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
