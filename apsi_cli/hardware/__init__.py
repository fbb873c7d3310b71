"""What compute hardware this machine has, read without importing torch.

    from apsi_cli import hardware
    hw = hardware.detect()          # a Hardware: OS, NVIDIA driver and GPUs, AMD, Intel, Apple

Every probe is cheap (a few small processes with a timeout, a few files under /proc and /sys) and never
raises: what could not be read is reported in the dataclasses (`status`, `note`). Tests and unusual
machines can steer it with environment variables:

    APSI_DETECT_TIMEOUT       seconds to wait for nvidia-smi / rocminfo (default 10)
    APSI_WSL_NVIDIA_SMI       where WSL keeps nvidia-smi (default /usr/lib/wsl/lib/nvidia-smi)
    APSI_NVIDIA_PROC_VERSION  the kernel module's version file (default /proc/driver/nvidia/version)
"""

import os
import platform

from . import nvidia, others
from .model import GPU, Hardware, NvidiaInfo, version_tuple

__all__ = ["GPU", "NvidiaInfo", "Hardware", "detect", "detect_timeout", "version_tuple"]


def detect_timeout():
    try:
        return max(0.05, float(os.environ.get("APSI_DETECT_TIMEOUT", "10")))
    except ValueError:
        return 10.0


def detect(timeout=None):
    """Read this machine's GPUs and drivers. Never raises; takes at most a few timeouts."""
    timeout = detect_timeout() if timeout is None else timeout
    system, machine = platform.system(), platform.machine()
    wsl = system == "Linux" and others.is_wsl()
    nv = nvidia.detect(timeout=timeout)
    if nv.source.startswith(nvidia.wsl_nvidia_smi()):
        wsl = wsl or system == "Linux"
    amd = others.detect_amd(timeout) if system == "Linux" else ()
    intel = others.detect_intel() if system == "Linux" else ()
    mps = system == "Darwin" and machine == "arm64"
    return Hardware(system=system, machine=machine, wsl=wsl, nvidia=nv, amd=amd, intel=intel,
                    apple_mps=mps)
