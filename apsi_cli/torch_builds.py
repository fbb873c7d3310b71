"""The PyTorch wheel indexes torch-auto chooses from: plain data, to be updated when PyTorch changes.

For each index (a folder under the index base, https://download.pytorch.org/whl by default):
- the CUDA version, and the oldest NVIDIA driver that runs it on Linux and on Windows (and WSL),
- which PyTorch versions it carries, and for each range of versions the GPU architectures (compute
  capabilities) its kernels were built for. A GPU runs a kernel built for the same major version and an
  equal or lower minor one (8.6 code runs on 8.9); "+PTX" on the newest one lets newer GPUs compile it
  at run time (Linux builds only).

Sources (checked December 2026):
- driver minimums: NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding Driver
  Versions"; the GA release of each CUDA minor version is used (later updates of the same minor version
  run on it through CUDA's minor-version compatibility). 12.8 GA 570.26 / 570.65, 12.8 Update 1
  570.124.06 / 572.61, 12.9 GA 575.51.03 / 576.02, 13.0 GA 580.65.06, 13.2 GA 595.45.04 (Linux). NVIDIA
  lists no Windows driver for 13.x toolkits (it stopped bundling one); WINDOWS_UNLISTED marks those and
  the Linux number is used.
- architectures: PyTorch's RELEASE.md "PyTorch CUDA Support Matrix" and the release RFCs
  (pytorch/pytorch#172663 for 2.11, #178665 and PR #182849 for 2.12, #190355 for 2.14, PR #197555:
  2.12-2.14 share one matrix); Volta in cu128 for 2.8-2.10 and its removal in 2.11 (#172352);
  2.7's cu128 without Volta and older.
- versions per index: pytorch.org "previous versions" (2.4-2.6 cu124, 2.6-2.7 cu118 last, 2.8 cu129,
  2.9 cu130), the 2.12 RFC (cu128 removed, cu132 added).
"""

from dataclasses import dataclass

DEFAULT_INDEX_BASE = "https://download.pytorch.org/whl"
MIN_TORCH = "2.3"          # Apsi's torch backend needs at least this; older builds count as absent

_OLD = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")            # Maxwell … Hopper
_TURING_UP = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")          # Turing … Blackwell
_VOLTA_UP = ("7.0",) + _TURING_UP
WINDOWS_UNLISTED = "linux"


@dataclass(frozen=True)
class Span:
    """PyTorch versions first..last (None: still published) built for `archs`."""
    first: str
    last: str | None
    archs: tuple
    ptx: str | None = None          # the arch also shipped as PTX (Linux wheels only)


@dataclass(frozen=True)
class Index:
    key: str                        # the index folder: "cu126"
    kind: str                       # "cuda", "cpu", "rocm", "xpu"
    label: str                      # "CUDA 12.6"
    spans: tuple
    driver_linux: str | None = None
    driver_windows: str | None = None
    gfx: tuple = ()                 # ROCm: GPU architectures it has kernels for

    @property
    def first(self):
        return self.spans[0].first

    @property
    def last(self):
        return self.spans[-1].last


CUDA = (
    Index("cu132", "cuda", "CUDA 13.2", (Span("2.12", None, _TURING_UP, ptx="12.0"),),
          driver_linux="595.45.04", driver_windows=WINDOWS_UNLISTED),
    Index("cu130", "cuda", "CUDA 13.0", (Span("2.9", None, _TURING_UP, ptx="12.0"),),
          driver_linux="580.65.06", driver_windows=WINDOWS_UNLISTED),
    Index("cu129", "cuda", "CUDA 12.9", (Span("2.8", "2.8", _VOLTA_UP),),
          driver_linux="575.51.03", driver_windows="576.02"),
    Index("cu128", "cuda", "CUDA 12.8",
          (Span("2.7", "2.7", _TURING_UP), Span("2.8", "2.10", _VOLTA_UP), Span("2.11", "2.11", _TURING_UP)),
          driver_linux="570.26", driver_windows="570.65"),
    Index("cu126", "cuda", "CUDA 12.6", (Span("2.6", None, _OLD),),
          driver_linux="560.28.03", driver_windows="560.76"),
    Index("cu124", "cuda", "CUDA 12.4", (Span("2.4", "2.6", _OLD),),
          driver_linux="550.54.14", driver_windows="551.61"),
    Index("cu118", "cuda", "CUDA 11.8", (Span("2.3", "2.7", _OLD),),
          driver_linux="520.61.05", driver_windows="520.06"),
)

CPU = Index("cpu", "cpu", "CPU", (Span(MIN_TORCH, None, ()),))

# ROCm: Linux only. Not verified against a machine; the gfx list is the one PyTorch's ROCm wheels target.
ROCM = (
    Index("rocm6.4", "rocm", "ROCm 6.4", (Span("2.8", None, ()),),
          gfx=("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101",
               "gfx1102", "gfx1200", "gfx1201")),
)

XPU = Index("xpu", "xpu", "Intel XPU", (Span("2.5", None, ()),))

INDEXES = {ix.key: ix for ix in CUDA + ROCM + (CPU, XPU)}


@dataclass(frozen=True)
class Build:
    """A name `apsi pkg install` understands that means one PyTorch build."""
    name: str
    index: str | None               # key in INDEXES; None: torch-auto decides
    extras: tuple = ()              # other pip packages installed with it
    help: str = ""


BUILDS = {
    "torch-auto": Build("torch-auto", None, help="reads the machine and picks the build"),
    "torch-cuda": Build("torch-cuda", "cu126", help="GTX 16 / RTX 20, 30, 40 series, driver 560+"),
    "torch-cu118": Build("torch-cu118", "cu118", help="GTX 10 series, or driver 520+"),
    "torch-cu124": Build("torch-cu124", "cu124", help="driver 550+"),
    "torch-cu126": Build("torch-cu126", "cu126", help="the same as torch-cuda"),
    "torch-cu128": Build("torch-cu128", "cu128", help="RTX 50 series, or driver 570+"),
    "torch-cu129": Build("torch-cu129", "cu129", help="driver 575+"),
    "torch-cu130": Build("torch-cu130", "cu130", help="driver 580+, Turing (RTX 20) or newer"),
    "torch-cu132": Build("torch-cu132", "cu132", help="driver 595+, Turing (RTX 20) or newer"),
    "torch-rocm": Build("torch-rocm", "rocm6.4", help="AMD GPUs on Linux"),
    "torch-xpu": Build("torch-xpu", "xpu", help="Intel GPUs"),
    "torch": Build("torch", "cpu", help="the CPU build (on macOS it includes MPS)"),
    "ai": Build("ai", None, extras=("onnxruntime", "transformers"),
                help="torch-auto + ONNX Runtime + Transformers"),
    "ai-gpu": Build("ai-gpu", "cu126", extras=("onnxruntime-gpu", "cupy-cuda12x", "transformers"),
                    help="the CUDA 12.6 build + ONNX Runtime GPU + CuPy + Transformers"),
}


def build_name(index_key):
    """The name users type for an index: cu126 is torch-cuda, cpu is torch."""
    if index_key == "cu126":
        return "torch-cuda"
    if index_key == "cpu":
        return "torch"
    if index_key.startswith("rocm"):
        return "torch-rocm"
    return f"torch-{index_key}"


def next_minor(version):
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}"


def requirement(first, last):
    """The pip requirement for PyTorch first..last (last None: no upper bound)."""
    low = max((first, MIN_TORCH), key=_key)
    return f"torch>={low}" + (f",<{next_minor(last)}" if last else "")


def describe(index, first=None, last=None):
    """'PyTorch ≥ 2.6 + CUDA 12.6' or 'PyTorch 2.4–2.6 + CUDA 12.4' (default: every version it carries)."""
    if first is None:
        first, last = index.first, index.last
    first = max((first, MIN_TORCH), key=_key)
    what = "the CPU build" if index.kind == "cpu" else index.label
    if last is None:
        return f"PyTorch ≥ {first} + {what}"
    if last == first:
        return f"PyTorch {first} + {what}"
    return f"PyTorch {first}–{last} + {what}"


def _key(version):
    return tuple(int(p) for p in version.split("."))
