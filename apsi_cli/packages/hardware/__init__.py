"""What compute hardware this machine has, read without importing torch.

    from apsi_cli.packages import hardware
    hw = hardware.detect()          # a Hardware: OS, NVIDIA driver and GPUs, AMD, Intel, Apple

Every probe is cheap (a few small processes, a few files under /proc and /sys), never raises, and all
of them together never take longer than one timeout: what could not be read is reported in the
dataclasses (`status`, `note`, `fix`). Containers and CI machines without a GPU say what to assume:

    APSI_CUDA_DRIVER_VERSION      the NVIDIA driver, e.g. 550.54.15 (nvidia-smi is then not asked)
    APSI_GPU_COMPUTE_CAPABILITY   the GPUs' compute capabilities, e.g. 8.9 or 9.0,8.6
    APSI_AMD_GPU_ARCHITECTURE     the AMD GPUs' architectures, e.g. gfx1100 (rocminfo is not asked)

and tests steer the probes with:

    APSI_DETECT_TIMEOUT       seconds all probes together may take (default 10)
    APSI_WSL_NVIDIA_SMI       where WSL keeps nvidia-smi (default /usr/lib/wsl/lib/nvidia-smi)
    APSI_NVIDIA_SYS_VERSION   the kernel module's version (default /sys/module/nvidia/version)
    APSI_NVIDIA_PROC_VERSION  its older version file (default /proc/driver/nvidia/version)
    APSI_JETSON_MODEL_FILE    the board model (default /proc/device-tree/model)
"""

import os
import platform
import re

from . import nvidia, others, tools
from .model import GPU, Hardware, NvidiaInfo, version_tuple

__all__ = ["GPU", "NvidiaInfo", "Hardware", "detect", "detect_timeout", "version_tuple", "OVERRIDES"]

OVERRIDES = ("APSI_CUDA_DRIVER_VERSION", "APSI_GPU_COMPUTE_CAPABILITY", "APSI_AMD_GPU_ARCHITECTURE")


def detect_timeout():
    try:
        return max(0.05, float(os.environ.get("APSI_DETECT_TIMEOUT", "10")))
    except ValueError:
        return 10.0


def detect(timeout=None):
    """Read this machine's GPUs and drivers. Never raises; takes at most one timeout in all."""
    deadline = tools.Deadline(detect_timeout() if timeout is None else timeout)
    system, machine = platform.system(), platform.machine()
    wsl = system == "Linux" and others.is_wsl()
    given = {k: os.environ[k].strip() for k in OVERRIDES if os.environ.get(k, "").strip()}
    error = _check_overrides(given)
    if error:
        return Hardware(system=system, machine=machine, wsl=wsl, override_error=error,
                        overrides=_shown(given))
    module = nvidia.module_version() if "APSI_GPU_COMPUTE_CAPABILITY" in given else None
    if "APSI_CUDA_DRIVER_VERSION" in given:
        nv = NvidiaInfo(status="driver-only", driver=given["APSI_CUDA_DRIVER_VERSION"],
                        source="APSI_CUDA_DRIVER_VERSION",
                        note="the driver version was given by APSI_CUDA_DRIVER_VERSION; no GPU models")
    elif module:            # the GPUs are given: the kernel module's version is all that is missing
        nv = NvidiaInfo(status="driver-only", driver=module[0], source=module[1])
    else:
        nv = nvidia.detect(deadline=deadline)
    if "APSI_GPU_COMPUTE_CAPABILITY" in given:
        nv = _with_capabilities(nv, given["APSI_GPU_COMPUTE_CAPABILITY"])
    if nv.source.startswith(nvidia.wsl_nvidia_smi()):
        wsl = wsl or system == "Linux"
    if "APSI_AMD_GPU_ARCHITECTURE" in given:
        amd = tuple(GPU(name=f"AMD GPU {a}", vendor="amd", arch=a)
                    for a in _split(given["APSI_AMD_GPU_ARCHITECTURE"]))
    else:
        amd = others.detect_amd(deadline) if system == "Linux" and not deadline.spent else ()
    intel = others.detect_intel() if system == "Linux" else ()
    mps = system == "Darwin" and machine == "arm64"
    jetson = others.detect_jetson() if system == "Linux" else ""
    if not jetson and any(re.search(r"\b(Orin|Xavier|Thor)\b|nvgpu", g.name) for g in nv.gpus):
        jetson = "NVIDIA Jetson (" + nv.gpus[0].name + ")"
    return Hardware(system=system, machine=machine, wsl=wsl, nvidia=nv, amd=amd, intel=intel,
                    apple_mps=mps, jetson=jetson, overrides=_shown(given))


def _split(text):
    return [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]


def _shown(given):
    return tuple(f"{k}={v}" for k, v in given.items())


def _check_overrides(given):
    drv = given.get("APSI_CUDA_DRIVER_VERSION")
    if drv is not None and not re.fullmatch(r"\d{3,4}(\.\d+){0,2}", drv):
        return (f"APSI_CUDA_DRIVER_VERSION={drv!r} is not an NVIDIA driver version; give it as "
                "nvidia-smi shows it, e.g. 550.54.15")
    cc = given.get("APSI_GPU_COMPUTE_CAPABILITY")
    if cc is not None and not all(re.fullmatch(r"\d{1,2}\.\d", p) for p in _split(cc)):
        return (f"APSI_GPU_COMPUTE_CAPABILITY={cc!r} is not a list of compute capabilities; give "
                "them as major.minor, e.g. 8.9 or 9.0,8.6")
    gfx = given.get("APSI_AMD_GPU_ARCHITECTURE")
    if gfx is not None and not all(re.fullmatch(r"gfx[0-9a-f]{3,5}", p) for p in _split(gfx)):
        return (f"APSI_AMD_GPU_ARCHITECTURE={gfx!r} is not a list of AMD GPU architectures; give them "
                "as rocminfo names them, e.g. gfx1100 or gfx942,gfx90a")
    return ""


def _with_capabilities(nv, text):
    """The GPUs named by APSI_GPU_COMPUTE_CAPABILITY, in place of the ones detected."""
    gpus = []
    for i, part in enumerate(_split(text)):
        major, minor = (int(p) for p in part.split("."))
        gpus.append(GPU(name=f"GPU {i}", vendor="nvidia",
                        compute_cap=(major, minor), compute_cap_source="APSI_GPU_COMPUTE_CAPABILITY"))
    if not nv.driver:
        return NvidiaInfo(status="error", gpus=tuple(gpus), source="APSI_GPU_COMPUTE_CAPABILITY",
                          note="APSI_GPU_COMPUTE_CAPABILITY is set but no NVIDIA driver version is known "
                               f"({nv.note or 'no driver found'})",
                          fix="set APSI_CUDA_DRIVER_VERSION too (e.g. 550.54.15)")
    return NvidiaInfo(status="ok", driver=nv.driver, cuda_driver_api=nv.cuda_driver_api, gpus=tuple(gpus),
                      source=f"{nv.source} + APSI_GPU_COMPUTE_CAPABILITY")
