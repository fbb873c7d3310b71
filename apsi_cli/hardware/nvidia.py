"""The NVIDIA driver and GPUs, from nvidia-smi (or the kernel module's version file).

Order of questions:
1. `nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader`
2. the same without `compute_cap` (drivers before ~510 do not know the field); the compute capability
   is then guessed from the model name where the model is known
3. plain `nvidia-smi` (the banner: driver version, CUDA version, GPU names)
4. /proc/driver/nvidia/version (Linux: the driver version only)
nvidia-smi is looked up on PATH, then where WSL keeps it (/usr/lib/wsl/lib/nvidia-smi).
"""

import os
import re
import shutil

from . import tools
from .model import GPU, NvidiaInfo

QUERY = "--query-gpu=name,driver_version,compute_cap,memory.total"
QUERY_OLD = "--query-gpu=name,driver_version,memory.total"
NOT_LOADED = "couldn't communicate with the nvidia driver"

# Compute capability by model name, for drivers too old to report it. Only GPUs such drivers run.
_CC_BY_NAME = [
    (r"\bK80\b", (3, 7)), (r"\bK40|\bK20|GTX 7[0-9]{2}\b|GTX TITAN( X| Black|$)", (3, 5)),
    (r"GTX 9[0-9]{2}\b|GTX TITAN X\b|\bM40\b|\bM60\b|\bM4\b|Quadro M", (5, 2)),
    (r"GTX 750|\bM10\b", (5, 0)),
    (r"\bP100\b", (6, 0)), (r"GTX 10[0-9]{2}|TITAN Xp?\b|\bP40\b|\bP4\b|Quadro P", (6, 1)),
    (r"\bV100\b|TITAN V\b|Quadro GV100", (7, 0)),
    (r"RTX 20[0-9]{2}|GTX 16[0-9]{2}|TITAN RTX|\bT4\b|Quadro RTX|\bT[0-9]{3,4}\b", (7, 5)),
    (r"\bA100\b|\bA30\b", (8, 0)), (r"RTX 30[0-9]{2}|\bA[0-9]{1,2}\b|RTX A[0-9]{4}", (8, 6)),
]


def wsl_nvidia_smi():
    return os.environ.get("APSI_WSL_NVIDIA_SMI", "/usr/lib/wsl/lib/nvidia-smi")


def proc_version_file():
    return os.environ.get("APSI_NVIDIA_PROC_VERSION", "/proc/driver/nvidia/version")


def find_nvidia_smi():
    found = shutil.which("nvidia-smi")
    if found:
        return found
    wsl = wsl_nvidia_smi()
    if os.path.isfile(wsl) and os.access(wsl, os.X_OK):
        return wsl
    return None


def detect(timeout=10.0):

    exe = find_nvidia_smi()
    if exe is None:
        return _from_proc() or NvidiaInfo()
    q = tools.run([exe, QUERY, "--format=csv,noheader"], timeout)
    if q.timed_out:
        fallback = _from_proc()
        note = (f"nvidia-smi did not answer within {timeout:g} s (a hung driver or GPU?); "
                "run `nvidia-smi` to see what it says, or reboot")
        if fallback:
            return NvidiaInfo(status="timeout", driver=fallback.driver, source=fallback.source, note=note)
        return NvidiaInfo(status="timeout", source=exe, note=note)
    if q.missing:
        return _from_proc() or NvidiaInfo()
    if NOT_LOADED in q.out.lower():
        return _not_loaded(exe)
    if q.returncode == 0:
        gpus, driver = _parse_query(q.out, with_cc=True)
        if gpus:
            return NvidiaInfo(status="ok", driver=driver, gpus=gpus, source=f"{exe} --query-gpu",
                              cuda_driver_api=_banner_cuda(exe, timeout))
    elif "compute_cap" in q.out:
        old = tools.run([exe, QUERY_OLD, "--format=csv,noheader"], timeout)
        if old.returncode == 0:
            gpus, driver = _parse_query(old.out, with_cc=False)
            if gpus:
                return NvidiaInfo(status="ok", driver=driver, gpus=gpus, source=f"{exe} --query-gpu",
                                  cuda_driver_api=_banner_cuda(exe, timeout))
    banner = tools.run([exe], timeout)
    if banner.returncode == 0:
        info = parse_banner(banner.out, exe)
        if info is not None:
            return info
    if banner.out and NOT_LOADED in banner.out.lower():
        return _not_loaded(exe)
    fallback = _from_proc()
    if fallback:
        return fallback
    last = (q.out.strip().splitlines() or ["no output"])[-1]
    return NvidiaInfo(status="error", source=exe,
                      note=f"nvidia-smi failed (exit code {q.returncode}): {last}")


def _not_loaded(exe):

    proc = _from_proc()
    return NvidiaInfo(status="not-loaded", driver=proc.driver if proc else None, source=exe,
                      note="an NVIDIA driver is installed but not loaded (nvidia-smi cannot talk to it): "
                           "reboot, or on Linux load it with `sudo modprobe nvidia`; after a driver "
                           "update a reboot is usually what is missing")


def _parse_query(text, with_cc):

    gpus, driver = [], None
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != (4 if with_cc else 3):
            continue
        name, driver = cells[0], cells[1]
        cc, source = None, ""
        if with_cc:
            cc, source = _cc(cells[2]), "nvidia-smi"
        if cc is None:
            cc = cc_from_name(name)
            source = "name" if cc else ""
        gpus.append(GPU(name=name, vendor="nvidia", compute_cap=cc, compute_cap_source=source,
                        memory_mib=_mib(cells[-1])))
    return tuple(gpus), driver


def _cc(text):
    m = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _mib(text):
    m = re.match(r"(\d+)\s*MiB", text.strip())
    return int(m.group(1)) if m else None


def cc_from_name(name):
    for pattern, cc in _CC_BY_NAME:
        if re.search(pattern, name):
            return cc
    return None


_BANNER_DRIVER = re.compile(r"Driver Version:\s*([0-9.]+)")
_BANNER_CUDA = re.compile(r"CUDA Version:\s*([0-9.]+)")
_BANNER_GPU = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|")
_BANNER_MEM = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")


def parse_banner(text, exe="nvidia-smi"):
    """Driver, CUDA version and GPU names from plain nvidia-smi output, or None."""

    m = _BANNER_DRIVER.search(text)
    if not m:
        return None
    cuda = _BANNER_CUDA.search(text)
    gpus, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        g = _BANNER_GPU.match(line)
        if not g:
            continue
        mem = _BANNER_MEM.search(lines[i + 1]) if i + 1 < len(lines) else None
        name = g.group(2).strip()
        cc = cc_from_name(name)
        gpus.append(GPU(name=name, vendor="nvidia", compute_cap=cc, compute_cap_source="name" if cc else "",
                        memory_mib=int(mem.group(2)) if mem else None))
    return NvidiaInfo(status="ok" if gpus else "driver-only", driver=m.group(1),
                      cuda_driver_api=cuda.group(1) if cuda else None, gpus=tuple(gpus), source=exe)


def _banner_cuda(exe, timeout):
    """The newest CUDA the driver runs, from the banner; only for the report, so a short wait."""
    r = tools.run([exe], min(timeout, 5.0))
    if r.returncode == 0:
        m = _BANNER_CUDA.search(r.out)
        return m.group(1) if m else None
    return None


def _from_proc():

    path = proc_version_file()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"Kernel Module(?: for [^ ]+)?\s+([0-9]+\.[0-9.]+)", text)
    if not m:
        return None
    return NvidiaInfo(status="driver-only", driver=m.group(1), source=path,
                      note="the NVIDIA kernel module is loaded but nvidia-smi is missing or failed, "
                           "so the GPUs' models are unknown")
