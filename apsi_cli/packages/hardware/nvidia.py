"""The NVIDIA driver and GPUs: the kernel module's version file first, then nvidia-smi.

Order of questions, all within one time budget (a Deadline):
1. /sys/module/nvidia/version, else /proc/driver/nvidia/version: the running kernel module's version
   (no process started). It also tells a driver that is loaded from one that is only installed, and
   shows an update that awaits a reboot (its version differs from the libraries').
2. `nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader`
3. the same without `compute_cap` when the driver rejects that field (drivers before ~510); the
   compute capability is then guessed from the model name where the model is known
4. plain `nvidia-smi` (the banner: driver version, CUDA version, GPU names)
nvidia-smi is looked up on PATH, then where WSL keeps it (/usr/lib/wsl/lib/nvidia-smi). Its output is
parsed strictly: a line that is not what was asked for is never taken for a GPU, and output that is not
plain text is described, never printed.
"""

import os
import re
import shutil

from . import tools
from .model import GPU, NvidiaInfo

QUERY = "--query-gpu=name,driver_version,compute_cap,memory.total"
QUERY_OLD = "--query-gpu=name,driver_version,memory.total"
NOT_LOADED = "couldn't communicate with the nvidia driver"
MISMATCH = "driver/library version mismatch"
NO_DEVICES = "no devices were found"
FIELD_REJECTED = "is not a valid field"
_LOST = re.compile(r"(unable to determine the device handle|gpu is lost|gpu has fallen off the bus)", re.I)
_BUS = re.compile(r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")

# Compute capability by model name, for drivers too old to report it. Only GPUs such drivers run.
_CC_BY_NAME = [
    (r"GTX 75[0-9]|GTX 745|\bM10\b", (5, 0)),             # Maxwell, before the Kepler GTX 7xx below
    (r"\bK80\b", (3, 7)), (r"\bK40|\bK20|GTX 7[0-9]{2}\b|GTX TITAN( Black| Z|$)|Tesla K\d", (3, 5)),
    (r"GTX 6[0-9]{2}\b|GRID K\d", (3, 0)),
    (r"GTX 9[0-9]{2}\b|GTX TITAN X\b|\bM40\b|\bM60\b|\bM4\b|Quadro M", (5, 2)),
    (r"\bP100\b", (6, 0)), (r"GTX 10[0-9]{2}|TITAN Xp?\b|\bP40\b|\bP4\b|Quadro P", (6, 1)),
    (r"\bV100\b|TITAN V\b|Quadro GV100", (7, 0)),
    (r"RTX 20[0-9]{2}|GTX 16[0-9]{2}|TITAN RTX|\bT4\b|Quadro RTX|\bT[0-9]{3,4}\b", (7, 5)),
    (r"\bA100\b|\bA30\b", (8, 0)), (r"RTX 30[0-9]{2}|\bA[0-9]{1,2}\b|RTX A[0-9]{4}", (8, 6)),
    (r"\bOrin\b", (8, 7)), (r"\bXavier\b", (7, 2)), (r"\bThor\b", (11, 0)),
]


def wsl_nvidia_smi():
    return os.environ.get("APSI_WSL_NVIDIA_SMI", "/usr/lib/wsl/lib/nvidia-smi")


def proc_version_file():
    return os.environ.get("APSI_NVIDIA_PROC_VERSION", "/proc/driver/nvidia/version")


def sys_version_file():
    return os.environ.get("APSI_NVIDIA_SYS_VERSION", "/sys/module/nvidia/version")


def find_nvidia_smi():
    found = shutil.which("nvidia-smi")
    if found:
        return found
    wsl = wsl_nvidia_smi()
    if os.path.isfile(wsl) and os.access(wsl, os.X_OK):
        return wsl
    return None


def detect(timeout=10.0, deadline=None):
    """NvidiaInfo for this machine; never raises, never takes longer than the deadline."""
    deadline = deadline or tools.Deadline(timeout)
    module = module_version()
    exe = find_nvidia_smi()
    if exe is None:
        return _driver_only(module, "nvidia-smi is not installed") if module else NvidiaInfo()
    q = tools.run([exe, QUERY, "--format=csv,noheader"], deadline.remaining())
    if q.missing:
        return _driver_only(module, "nvidia-smi could not be started") if module else NvidiaInfo()
    state = _state(q, exe, module, deadline)
    if state:
        return state
    gpus, lost, driver, junk = parse_query(q.out, with_cc=True)
    if not gpus and FIELD_REJECTED in q.out.lower():
        q = tools.run([exe, QUERY_OLD, "--format=csv,noheader"], deadline.remaining())
        state = _state(q, exe, module, deadline, after_field=True)
        if state:
            return state
        gpus, lost, driver, junk = parse_query(q.out, with_cc=False)
    if gpus:
        banner = _banner(exe, deadline)
        driver = driver or (banner.driver if banner else None) or (module[0] if module else None)
        return NvidiaInfo(status="ok", driver=driver, gpus=gpus, source=f"{exe} --query-gpu",
                          cuda_driver_api=banner.cuda_driver_api if banner else None,
                          lost=lost, note=_lost_note(lost), fix="reboot to recover it" if lost else "")
    if lost:
        return NvidiaInfo(status="error", driver=driver or (module[0] if module else None), source=exe,
                          lost=lost, note=f"every GPU nvidia-smi knows is lost ({_lost_note(lost)})",
                          fix="reboot; if it happens again, check the GPU's power and cooling")
    b = tools.run([exe], deadline.remaining())
    state = _state(b, exe, module, deadline)
    if state:
        return state
    if b.returncode == 0:
        info = parse_banner(b.out, exe)
        if info is not None:
            return info
    if module:
        return _driver_only(module, "nvidia-smi gave no GPU list")
    said = tools.excerpt(q.out) if not junk and q.returncode else None
    if said:
        note = f"nvidia-smi failed (exit code {q.returncode}): {said}"
    elif q.out.strip():
        note = (f"nvidia-smi answered (exit code {q.returncode}) with output Apsi cannot read "
                f"({len(q.out)} characters that are not the GPU list it asked for)")
    else:
        note = f"nvidia-smi failed (exit code {q.returncode}) without a message"
    return NvidiaInfo(status="error", source=exe, note=note,
                      fix="run `nvidia-smi` to see what it says; reinstalling the NVIDIA driver "
                          "usually repairs it")


def _state(r, exe, module, deadline, after_field=False):
    """The NvidiaInfo for a run that says something definite about the driver (hang, not loaded,
    version mismatch, no GPU), or None."""
    text = (r.out or "").lower()
    if r.timed_out:
        why = (" after rejecting the compute_cap field (drivers before 510 do not know it)"
               if after_field or FIELD_REJECTED in text else "")
        return NvidiaInfo(status="timeout", driver=module[0] if module else None, source=exe,
                          note=f"nvidia-smi did not answer within {deadline.seconds:g} s{why}: the "
                               "driver or a GPU is hung",
                          fix="run `nvidia-smi` to see where it stops, and reboot")
    if MISMATCH in text:
        lib = re.search(r"NVML library version:\s*([0-9.]+)", r.out)
        versions = ([f"kernel module {module[0]}"] if module else []) + \
            ([f"libraries {lib.group(1)}"] if lib else [])
        seen = f" ({', '.join(versions)})" if versions else ""
        return NvidiaInfo(status="mismatch", driver=module[0] if module else None, source=exe,
                          note=f"the NVIDIA driver was updated but the old one still runs{seen}; "
                               "nvidia-smi and CUDA refuse to work until it is replaced",
                          fix="reboot (or unload and reload the nvidia kernel modules)")
    if NOT_LOADED in text:
        return _not_loaded(exe, module)
    if NO_DEVICES in text:
        what = f"NVIDIA driver {module[0]} is loaded" if module else "the NVIDIA driver runs"
        return NvidiaInfo(status="no-devices", driver=module[0] if module else None, source=exe,
                          note=f"{what} but nvidia-smi found no GPU",
                          fix="in a container, start it with the GPUs (`docker run --gpus all …`); "
                              "otherwise check that the GPU is seated and powered (`lspci | grep -i "
                              "nvidia`). In CI without a GPU, set APSI_CUDA_DRIVER_VERSION and "
                              "APSI_GPU_COMPUTE_CAPABILITY, or name a build")
    return None


def _not_loaded(exe, module):
    return NvidiaInfo(status="not-loaded", driver=module[0] if module else None, source=exe,
                      note="an NVIDIA driver is installed but not loaded (nvidia-smi cannot talk to it)",
                      fix="reboot, or on Linux load it with `sudo modprobe nvidia`; after a driver "
                          "update a reboot is usually what is missing")


def _driver_only(module, why):
    version, path = module
    return NvidiaInfo(status="driver-only", driver=version, source=path,
                      note=f"NVIDIA driver {version} is loaded but {why}, so the GPUs' models are unknown",
                      fix="install the driver's utilities (nvidia-smi), or set "
                          "APSI_GPU_COMPUTE_CAPABILITY")


def _lost_note(lost):
    if not lost:
        return ""
    return "nvidia-smi cannot reach " + ", ".join(lost) + " (lost: it fell off the bus or hung)"


_DRIVER = re.compile(r"\d+(\.\d+)+")
_NA = ("[n/a]", "n/a", "[not supported]", "[unknown error]", "")


def parse_query(text, with_cc):
    """(gpus, lost, driver, junk lines) from --query-gpu CSV output. A line counts only when every
    cell has the form asked for; a line about an unreachable GPU is recorded in `lost`."""
    gpus, lost, driver, junk = [], [], None, 0
    width = 4 if with_cc else 3
    for line in (text or "").strip().splitlines():
        if _LOST.search(line):
            bus = _BUS.search(line)
            lost.append(f"GPU {bus.group(1)}" if bus else "a GPU")
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != width or not _gpu_name(cells[0]):
            junk += line.strip() != ""
            continue
        name, drv, mem = cells[0], cells[1], cells[-1]
        if not (_DRIVER.fullmatch(drv) or drv.lower() in _NA) or not _memory_ok(mem):
            junk += 1
            continue
        cc, source = None, ""
        if with_cc:
            if not (_cc(cells[2]) or cells[2].lower() in _NA):
                junk += 1
                continue
            cc, source = _cc(cells[2]), "nvidia-smi" if _cc(cells[2]) else ""
        if cc is None:
            cc = cc_from_name(name)
            source = "name" if cc else ""
        if _DRIVER.fullmatch(drv):
            driver = driver or drv
        gpus.append(GPU(name=name, vendor="nvidia", compute_cap=cc, compute_cap_source=source,
                        memory_mib=_mib(mem)))
    return tuple(gpus), tuple(lost), driver, junk


def _gpu_name(name):
    return 0 < len(name) <= 96 and all(ch.isprintable() for ch in name) and "\ufffd" not in name \
        and sum(ch.isalnum() for ch in name) >= 2 and not name.lower().startswith(("error", "failed"))


def _memory_ok(text):
    return bool(re.fullmatch(r"\d+\s*MiB", text)) or text.lower() in _NA


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


_BANNER_DRIVER = re.compile(r"Driver Version:\s*([0-9]+(?:\.[0-9]+)+)")
_BANNER_CUDA = re.compile(r"CUDA Version:\s*([0-9]+\.[0-9]+)")
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
        if not g or not _gpu_name(g.group(2).strip()):
            continue
        mem = _BANNER_MEM.search(lines[i + 1]) if i + 1 < len(lines) else None
        name = g.group(2).strip()
        cc = cc_from_name(name)
        gpus.append(GPU(name=name, vendor="nvidia", compute_cap=cc, compute_cap_source="name" if cc else "",
                        memory_mib=int(mem.group(2)) if mem else None))
    return NvidiaInfo(status="ok" if gpus else "driver-only", driver=m.group(1),
                      cuda_driver_api=cuda.group(1) if cuda else None, gpus=tuple(gpus), source=exe,
                      note="" if gpus else "nvidia-smi listed no GPU models")


def _banner(exe, deadline):
    """The banner, for the newest CUDA the driver runs (a report detail): only with time to spare."""
    r = tools.run([exe], min(deadline.remaining(), 5.0))
    if r.returncode == 0:
        return parse_banner(r.out, exe)
    return None


def module_version():
    """(version, file) of the running NVIDIA kernel module, or None."""
    sys_file = sys_version_file()
    try:
        with open(sys_file, encoding="ascii", errors="replace") as f:
            text = f.read().strip()
        if _DRIVER.fullmatch(text):
            return text, sys_file
    except OSError:
        pass
    path = proc_version_file()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"Kernel Module(?: for [^ ]+)?\s+([0-9]+\.[0-9.]+)", text)
    return (m.group(1), path) if m else None
