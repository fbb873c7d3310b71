"""WSL, AMD GPUs (ROCm) and Intel GPUs (XPU). Apple silicon needs no probe: platform says it."""

import glob
import os
import re
import shutil

from . import tools
from .model import GPU


def is_wsl():
    if os.environ.get("WSL_DISTRO_NAME"):
        return True
    try:
        with open("/proc/sys/kernel/osrelease", encoding="utf-8") as f:
            return "microsoft" in f.read().lower()
    except OSError:
        return False


def detect_amd(deadline):
    """AMD GPUs by gfx architecture, from rocminfo (or rocm_agent_enumerator), within the deadline."""

    exe = shutil.which("rocminfo") or _in_opt_rocm("rocminfo")
    if exe:
        r = tools.run([exe], deadline.remaining())
        if r.returncode == 0:
            return tuple(GPU(name=name, vendor="amd", arch=arch) for name, arch in parse_rocminfo(r.out))
    exe = shutil.which("rocm_agent_enumerator") or _in_opt_rocm("rocm_agent_enumerator")
    if exe:
        r = tools.run([exe], deadline.remaining())
        if r.returncode == 0:
            archs = [a for a in r.out.split() if a.startswith("gfx") and a != "gfx000"]
            return tuple(GPU(name=f"AMD GPU {a}", vendor="amd", arch=a) for a in archs)
    return ()


def _in_opt_rocm(tool):
    path = os.path.join("/opt/rocm/bin", tool)
    return path if os.access(path, os.X_OK) else None


def parse_rocminfo(text):
    """[(marketing name, gfx arch)] for each GPU agent in rocminfo's output."""
    found = []
    for agent in re.split(r"\n\*{5,}\s*\nAgent \d+", text):
        if not re.search(r"Device Type:\s+GPU", agent):
            continue
        arch = re.search(r"^\s*Name:\s+(gfx[0-9a-f]+)", agent, re.M)
        name = re.search(r"Marketing Name:\s+(.+)", agent)
        if arch:
            found.append(((name.group(1).strip() if name else arch.group(1)), arch.group(1)))
    return found


# PCI device-id prefixes of Intel GPUs that PyTorch's XPU build supports: Arc A (DG2), Arc B
# (Battlemage), Data Center GPU Max, and the Arc graphics of Core Ultra (Meteor/Arrow/Lunar Lake).
_XPU_IDS = ("0x56", "0xe2", "0x0bd", "0x7d", "0x64")


def detect_intel(sys_root="/sys/class/drm"):

    gpus = []
    for card in sorted(glob.glob(os.path.join(sys_root, "card[0-9]*"))):
        if "-" in os.path.basename(card):
            continue
        vendor, device = _read(card, "device/vendor"), _read(card, "device/device")
        if vendor == "0x8086" and device and device.lower().startswith(_XPU_IDS):
            gpus.append(GPU(name=f"Intel GPU {device}", vendor="intel"))
    return tuple(gpus)


def _read(card, rel):
    try:
        with open(os.path.join(card, rel), encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def detect_jetson():
    """The board's model when this is an NVIDIA Jetson (its device tree says so), else ""."""
    path = os.environ.get("APSI_JETSON_MODEL_FILE", "/proc/device-tree/model")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            model = f.read().replace("\x00", "").strip()
    except OSError:
        return ""
    return model if "jetson" in model.lower() or "thor" in model.lower() else ""
