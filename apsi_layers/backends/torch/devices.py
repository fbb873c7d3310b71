"""devices() and device selection.

`devices()` lists what the backends can run on, one record per device (name, kind, detail). Without
PyTorch, or when the program lacks the `python` permission, only the NumPy entry is listed (the
caller decides; `devices(with_torch=False)`).

`select(spec)` turns fit's `device=` ("auto", "cpu", "cuda", "cuda:1", "mps", "xpu", "xpu:0") into a
torch.device, or an ApsiError that says what is missing and what to do. "auto" prefers CUDA (ROCm
builds answer through torch.cuda too), then Apple MPS, then Intel XPU, then the CPU.
"""

import os

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record

KINDS = ("auto", "cpu", "cuda", "mps", "xpu")


def devices(with_torch=True):
    """[Record(name, kind, detail), ...]: NumPy first, then PyTorch's CPU and its GPUs."""
    out = [_numpy_entry()]
    if with_torch:
        try:
            import torch
        except ImportError:
            return out
        out += torch_devices(torch)
    return out


def _numpy_entry():
    import numpy as np

    detail = f"NumPy {np.__version__}, float64, {_blas_threads()} threads"
    return Record(name="numpy", kind="cpu", detail=detail)


def _blas_threads():
    try:
        from threadpoolctl import threadpool_info

        counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        if counts:
            return int(counts[0])
    except Exception:       # threadpoolctl is optional; any failure falls back to the environment
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def torch_devices(torch):
    detail = f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads"
    out = [Record(name="cpu", kind="cpu", detail=detail)]
    if _cuda_count(torch):
        kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            out.append(Record(name=f"cuda:{i}", kind=kind,
                              detail=f"{p.name}, {_gib(p.total_memory)}, bf16 {_yes(_cuda_bf16(torch, p))}"))
    if _mps_available(torch):
        out.append(Record(name="mps", kind="mps", detail="Apple GPU (Metal), shared memory, no fp64"))
    for i in range(_xpu_count(torch)):
        p = torch.xpu.get_device_properties(i)
        out.append(Record(name=f"xpu:{i}", kind="xpu",
                          detail=f"{p.name}, {_gib(p.total_memory)}, bf16 {_yes(True)}"))
    return out


def _gib(n):
    return f"{n / 2 ** 30:.1f} GiB"


def _yes(flag):
    return "yes" if flag else "no"


def _cuda_bf16(torch, props):
    if getattr(torch.version, "hip", None):
        return True                       # every ROCm GPU PyTorch supports has bf16
    return props.major >= 8               # NVIDIA: Ampere (compute capability 8.0) and newer


def _cuda_count(torch):
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:                     # a broken driver reads as "no GPU" here; select() explains
        return 0


def _mps_available(torch):
    mps = getattr(torch.backends, "mps", None)
    try:
        return bool(mps and mps.is_available())
    except Exception:
        return False


def _xpu_count(torch):
    xpu = getattr(torch, "xpu", None)
    try:
        return xpu.device_count() if xpu is not None and xpu.is_available() else 0
    except Exception:
        return 0


def select(torch, spec="auto"):
    """The torch.device for fit's `device=` value; an ApsiError naming the problem otherwise."""
    if not isinstance(spec, str):
        raise ApsiError(f'device must be a string such as "auto", "cpu", "cuda", "cuda:1", "mps" or '
                        f'"xpu", not {spec!r}')
    text = spec.strip().lower()
    kind, _, index = text.partition(":")
    if kind not in KINDS or (index and not index.isdigit()) or (index and kind in ("auto", "cpu", "mps")):
        raise ApsiError(f'device="{spec}" is not a device: use "auto", "cpu", "cuda", "cuda:N" '
                        f'(N from 0), "mps", "xpu" or "xpu:N"; devices() lists this machine\'s')
    if kind == "auto":
        if _cuda_count(torch):
            return torch.device("cuda", 0)
        if _mps_available(torch):
            return torch.device("mps")
        if _xpu_count(torch):
            return torch.device("xpu", 0)
        return torch.device("cpu")
    if kind == "cpu":
        return torch.device("cpu")
    if kind == "cuda":
        return _indexed(torch, spec, "cuda", int(index or 0), _cuda_count(torch), "CUDA/ROCm GPU",
                        _cuda_fix(torch))
    if kind == "xpu":
        return _indexed(torch, spec, "xpu", int(index or 0), _xpu_count(torch), "Intel XPU GPU",
                        "install PyTorch's XPU build and Intel's GPU driver, or use device=\"auto\"")
    if not _mps_available(torch):
        raise ApsiError(f'device="{spec}": PyTorch sees no Apple MPS GPU (it needs Apple silicon, '
                        'macOS 12.3 or newer and PyTorch\'s macOS build); use device="auto" or "cpu"')
    return torch.device("mps")


def _indexed(torch, spec, kind, index, count, what, fix):
    if count == 0:
        raise ApsiError(f'device="{spec}": PyTorch sees no {what}: {fix}')
    if index >= count:
        names = ", ".join(f"{kind}:{i}" for i in range(count))
        raise ApsiError(f'device="{spec}": PyTorch sees {count} {what}{"s" if count > 1 else ""} '
                        f"({names}); choose one of those")
    return torch.device(kind, index)


def _cuda_fix(torch):
    build = torch.__version__
    if not (getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)):
        return (f"this PyTorch ({build}) is a CPU-only build; install the GPU build with "
                '`apsi pkg install torch-auto` and a current driver, or use device="auto"')
    return ("the GPU build is installed but no GPU answers (check the driver with nvidia-smi or "
            'rocm-smi, and CUDA_VISIBLE_DEVICES); install a current driver, or use device="auto"')


def name(device):
    """'cuda:0', 'cpu', 'mps', 'xpu:0': how fit's result names the device used."""
    if device.type in ("cuda", "xpu"):
        return f"{device.type}:{device.index or 0}"
    return device.type
