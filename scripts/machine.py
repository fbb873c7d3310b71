"""What a benchmark ran on, printed beside its timings: a ratio means little without the CPU, its
vector extensions, the BLAS each side calls and how busy the machine was (issue 36: the same fit
measured 1.1x on one machine and 2x on another).

    from machine import describe, load_line
    print(describe(torch=True))        # before the timings
    print(load_line("load after"))     # after them

Every probe is best effort: a field it cannot read says "unknown" rather than failing the benchmark.
"""

import os
import platform
from pathlib import Path

# the flags that decide float64 kernel speed: what NumPy's loops and the BLAS can dispatch to
_VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                 "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "sve", "sve2",
                 "asimd")


def _cpuinfo():
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def cpu_model():
    for line in _cpuinfo().splitlines():
        if line.split(":")[0].strip() in ("model name", "Hardware", "Processor"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def vector_extensions():
    for line in _cpuinfo().splitlines():
        if line.split(":")[0].strip() in ("flags", "Features"):
            have = set(line.split(":", 1)[1].split())
            return " ".join(f for f in _VECTOR_FLAGS if f in have) or "none of the listed"
    return "unknown (no /proc/cpuinfo flags)"


def cores():
    total = os.cpu_count() or 0
    if hasattr(os, "sched_getaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        return f"{total} cores, this process may use {len(allowed)} ({_ranges(allowed)})"
    return f"{total} cores"


def _ranges(ids):
    out, start = [], None
    for i, c in enumerate(ids):
        if start is None:
            start = c
        if i + 1 == len(ids) or ids[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def numpy_blas():
    """NumPy's own record of its build (numpy.show_config(mode="dicts"), NumPy >= 1.26) and the SIMD
    levels it found on this CPU; threadpoolctl adds the BLAS's runtime core type and threads."""
    import numpy as np

    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        text = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
        simd = config.get("SIMD Extensions", {}).get("found")
        if simd:
            text += f"; NumPy SIMD found: {' '.join(simd)}"
    except (TypeError, KeyError, AttributeError):
        text = "unknown (numpy.show_config has no dicts mode)"
    return f"NumPy {np.__version__}: {text}{_threadpool()}"


def _threadpool():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ""
    pools = [f"{p.get('internal_api')} {p.get('architecture', '')} {p.get('num_threads')} threads"
             for p in threadpool_info() if p.get("user_api") == "blas"]
    return f"; at run time: {', '.join(pools)}" if pools else ""


def torch_blas():
    """torch's build settings (torch.__config__.show()) reduced to the BLAS and the CPU kernels it
    dispatches to, and its intra-op threads."""
    try:
        import torch
    except ImportError:
        return "torch not installed"
    info = torch.__config__.show()
    settings = dict(item.strip().split("=", 1) for line in info.splitlines() if "BLAS_INFO=" in line
                    for item in line.split(":", 1)[1].split(",") if "=" in item)
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: "unknown")()
    return (f"torch {torch.__version__}: BLAS {settings.get('BLAS_INFO', 'unknown')}, LAPACK "
            f"{settings.get('LAPACK_INFO', 'unknown')}, CPU kernels {capability}, "
            f"{torch.get_num_threads()} threads")


def load_line(label="load"):
    if not hasattr(os, "getloadavg"):
        return f"{label}: unknown"
    one, five, fifteen = os.getloadavg()
    cores = os.cpu_count() or 1
    busy = "  (busy: other processes share the CPU, timings are noisy)" if one > 0.5 * cores else ""
    return f"{label}: {one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min) on {cores} cores{busy}"


def describe(torch=False):
    lines = [f"cpu: {cpu_model()} ({platform.machine()}), {cores()}",
             f"vector extensions: {vector_extensions()}",
             f"numpy: {numpy_blas()}"]
    if torch:
        lines.append(f"torch: {torch_blas()}")
    threads = {v: os.environ[v] for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
               if v in os.environ}
    if threads:
        lines.append(f"thread settings: {threads}")
    lines.append(load_line("load before"))
    return "\n".join(lines)
