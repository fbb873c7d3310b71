"""The PyTorch wheel indexes torch-auto chooses from: plain data, to be updated when PyTorch changes.

For each index (a folder under the index base, https://download.pytorch.org/whl by default):
- the CUDA version, and the oldest NVIDIA driver that runs it on Linux and on Windows (and WSL),
- which PyTorch versions it carries (first..last; last None while PyTorch still publishes there), and
  for each range the GPU architectures (compute capabilities) its kernels were built for, on Linux
  x86_64 / Windows and on Linux aarch64. A GPU runs a kernel built for the same major version and an
  equal or lower minor one (8.0 code runs on 8.6, 8.7 and 8.9); "+PTX" on the newest one lets newer
  GPUs compile it at run time (Linux builds only).

Sources (read December 2026; docs/pkg.md lists them with what is not verified):
- driver minimums: NVIDIA, "CUDA Compatibility", section Minor Version Compatibility
  (docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html): an application built
  with any CUDA 11.x / 12.x / 13.x runs on a driver of at least 450 / 525 / 580 of the same family;
  11.x needs 450.80.02 (Linux) / 452.39 (Windows). PyTorch's wheels carry their own CUDA runtime, so
  this is the rule that applies to them. 12.x: 525.60.13 (Linux) / 528.33 (Windows), from the CUDA 12
  release notes' minor-version table (not re-read here). 13.x on Windows: not listed; 580 is used.
- architectures: PyTorch's RELEASE.md "PyTorch CUDA Support Matrix" (one matrix for 2.12-2.14, PR
  #197555; aarch64 rows from PR #182849; CUDA 12.6 and 12.8 added to the aarch64 builds for 2.9, PR
  #162364) and the release RFCs (#172663 for 2.11, #178665 for 2.12,
  #190355 for 2.14); Volta in cu128 for 2.8-2.10 and its removal in 2.11 (#172352).
- versions per index: RELEASE.md "Release Compatibility Matrix" (stable/experimental CUDA and the
  stable ROCm of each release); cu128 removed in 2.12 (#178665); CUDA 12.6 removed in 2.15, so 2.14
  is the last CUDA 12 release (RFC #190385).
- ROCm architectures: PYTORCH_ROCM_ARCH in PyTorch's .ci/docker/manywheel/build.sh; gfx950, gfx1150
  and gfx1151 with ROCm 7 (PR #167299).
"""

from dataclasses import dataclass

DEFAULT_INDEX_BASE = "https://download.pytorch.org/whl"
MIN_TORCH = "2.3"          # Apsi's torch backend needs at least this; older builds count as absent

_OLD = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")            # Maxwell … Hopper
_TURING_UP = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")          # Turing … Blackwell
_VOLTA_UP = ("7.0",) + _TURING_UP
_ARM_12 = ("8.0", "9.0")                                           # Linux aarch64 (Grace Hopper …)
_ARM_128 = ("8.0", "9.0", "10.0", "12.0")
_ARM_13 = ("8.0", "9.0", "10.0", "11.0", "12.0")                   # 11.0: Jetson Thor

# Minimum drivers by CUDA major version (minor-version compatibility), (Linux, Windows).
DRIVER_MINIMUM = {11: ("450.80.02", "452.39"), 12: ("525.60.13", "528.33"), 13: ("580", "580")}


@dataclass(frozen=True)
class Span:
    """PyTorch versions first..last (None: still published) built for `archs`."""
    first: str
    last: str | None
    archs: tuple
    ptx: str | None = None          # the arch also shipped as PTX (Linux wheels only)
    arm: tuple | None = None        # archs of the Linux aarch64 wheels; None: no aarch64 CUDA wheel


@dataclass(frozen=True)
class Index:
    key: str                        # the index folder: "cu126"
    kind: str                       # "cuda", "cpu", "rocm", "xpu"
    label: str                      # "CUDA 12.6"
    spans: tuple
    cuda_major: int | None = None
    gfx: tuple = ()                 # ROCm: GPU architectures it has kernels for

    @property
    def first(self):
        return self.spans[0].first

    @property
    def last(self):
        return self.spans[-1].last

    def driver_needed(self, windows):
        if self.cuda_major is None:
            return None
        return DRIVER_MINIMUM[self.cuda_major][1 if windows else 0]


CUDA = (
    Index("cu132", "cuda", "CUDA 13.2", (Span("2.12", None, _TURING_UP, ptx="12.0", arm=_ARM_13),),
          cuda_major=13),
    Index("cu130", "cuda", "CUDA 13.0", (Span("2.9", None, _TURING_UP, ptx="12.0", arm=_ARM_13),),
          cuda_major=13),
    Index("cu129", "cuda", "CUDA 12.9", (Span("2.8", "2.8", _VOLTA_UP),), cuda_major=12),
    Index("cu128", "cuda", "CUDA 12.8",
          (Span("2.7", "2.7", _TURING_UP, arm=_ARM_128), Span("2.8", "2.10", _VOLTA_UP, arm=_ARM_128),
           Span("2.11", "2.11", _TURING_UP, arm=_ARM_128)), cuda_major=12),
    Index("cu126", "cuda", "CUDA 12.6", (Span("2.6", "2.8", _OLD), Span("2.9", "2.14", _OLD, arm=_ARM_12)),
          cuda_major=12),                                 # aarch64 cu126 wheels from 2.9 (PR #162364)
    Index("cu124", "cuda", "CUDA 12.4", (Span("2.4", "2.6", _OLD),), cuda_major=12),
    Index("cu118", "cuda", "CUDA 11.8", (Span("2.3", "2.7", _OLD),), cuda_major=11),
)

CPU = Index("cpu", "cpu", "CPU", (Span(MIN_TORCH, None, ()),))

# ROCm: Linux x86_64 only. Newest first; torch-rocm means the first.
_GFX_6 = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102",
          "gfx1200", "gfx1201")
_GFX_7 = _GFX_6 + ("gfx950", "gfx1150", "gfx1151")
ROCM = (
    Index("rocm7.2", "rocm", "ROCm 7.2", (Span("2.11", "2.13", ()),), gfx=_GFX_7),
    Index("rocm7.1", "rocm", "ROCm 7.1", (Span("2.10", "2.10", ()),), gfx=_GFX_7),
    Index("rocm6.4", "rocm", "ROCm 6.4", (Span("2.8", "2.9", ()),), gfx=_GFX_6),
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
    "torch-cuda": Build("torch-cuda", "cu126", help="CUDA 12.6: Maxwell to Hopper, driver 525.60+"),
    "torch-cu118": Build("torch-cu118", "cu118", help="CUDA 11.8 (PyTorch 2.3-2.7), driver 450.80+"),
    "torch-cu124": Build("torch-cu124", "cu124", help="CUDA 12.4 (PyTorch 2.4-2.6), driver 525.60+"),
    "torch-cu126": Build("torch-cu126", "cu126", help="the same as torch-cuda"),
    "torch-cu128": Build("torch-cu128", "cu128", help="CUDA 12.8 (PyTorch 2.7-2.11), driver 525.60+"),
    "torch-cu129": Build("torch-cu129", "cu129", help="CUDA 12.9 (PyTorch 2.8), driver 525.60+"),
    "torch-cu130": Build("torch-cu130", "cu130", help="CUDA 13.0: Turing (RTX 20) or newer, driver 580+"),
    "torch-cu132": Build("torch-cu132", "cu132", help="CUDA 13.2: Turing (RTX 20) or newer, driver 580+"),
    "torch-rocm": Build("torch-rocm", "rocm7.2", help="AMD GPUs on Linux (ROCm 7.2)"),
    "torch-rocm7.1": Build("torch-rocm7.1", "rocm7.1", help="AMD GPUs, ROCm 7.1 (PyTorch 2.10)"),
    "torch-rocm6.4": Build("torch-rocm6.4", "rocm6.4", help="AMD GPUs, ROCm 6.4 (PyTorch 2.8-2.9)"),
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
    if index_key == ROCM[0].key:
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


def version_key(version):
    """'2.14' -> (2, 14); None (still published) sorts after every version."""
    return (999,) if version is None else _key(version)


# torchvision / torchaudio releases paired with a PyTorch minor version, as pytorch.org's compatibility
# table pairs them: torchvision 0.(m+15) (0.27 with 2.12, 0.29 with 2.14); torchaudio the same number as
# PyTorch up to 2.11, which is torchaudio's last release: it is built against PyTorch's stable ABI and
# runs with 2.11 and every later PyTorch (docs.pytorch.org/audio/2.11.0/installation.html), so a newer
# PyTorch pairs with torchaudio 2.11.
FAMILY = ("torchvision", "torchaudio")
TORCHAUDIO_LAST = (2, 11)


def family_pin(name, torch_version):
    """The requirement for a family member paired with `torch_version` ('2.7.0+cu128')."""
    major, minor = (int(p) for p in torch_version.split("+")[0].split(".")[:2])
    if name == "torchvision":
        return f"torchvision==0.{minor + 15}.*"
    major, minor = min((major, minor), TORCHAUDIO_LAST)
    return f"torchaudio=={major}.{minor}.*"


def family_pairs(name, member_version, torch_version):
    """Whether an installed family member's version is the one paired with torch_version."""
    want = family_pin(name, torch_version).split("==")[1].rstrip("*").rstrip(".")
    public = member_version.split("+")[0]
    if name == "torchaudio" and _release(want) == TORCHAUDIO_LAST:
        # built against the stable ABI: any torchaudio from 2.11 up to this PyTorch's own number runs
        return TORCHAUDIO_LAST <= _release(public)[:2] <= _release(torch_version)[:2]
    return public == want or public.startswith(want + ".")


def family_builds_match(name, member_version, torch_version):
    """Whether a family member's build tag (+cu126, +cpu, …) goes with PyTorch's. Each release is built
    for one PyTorch build, except torchaudio from 2.11.1 on, which accepts any CUDA of the same major
    version (pytorch/audio#4226): 2.11.1+cu130 runs with PyTorch +cu132."""
    tag, torch_tag = member_version.partition("+")[2], torch_version.partition("+")[2]
    if not tag or not torch_tag or tag == torch_tag:
        return True
    if name == "torchaudio" and _release(member_version) >= (2, 11, 1):
        return _cuda_major(tag) is not None and _cuda_major(tag) == _cuda_major(torch_tag)
    return False


def _release(version):
    parts = []
    for p in version.split("+")[0].split("."):
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts)


def _cuda_major(tag):
    """'cu132' -> 13, 'cu118' -> 11; None for tags that are not CUDA builds."""
    digits = tag[2:]
    return int(digits[:-1]) if tag.startswith("cu") and digits.isdigit() and len(digits) >= 2 else None
