"""The plain dataclasses hardware detection returns."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GPU:
    name: str
    vendor: str                       # "nvidia", "amd", "intel", "apple"
    compute_cap: tuple | None = None  # NVIDIA (major, minor)
    compute_cap_source: str = ""      # "nvidia-smi", or "name" when guessed from the model name
    arch: str = ""                    # AMD gfx name, e.g. "gfx1100"
    memory_mib: int | None = None

    @property
    def compute_cap_text(self):
        if self.compute_cap is None:
            return "unknown"
        return f"{self.compute_cap[0]}.{self.compute_cap[1]}"

    def describe(self):
        if self.vendor == "nvidia":
            guess = " from its name" if self.compute_cap_source == "name" else ""
            return f"{self.name} (compute {self.compute_cap_text}{guess})"
        if self.arch:
            return f"{self.name} ({self.arch})"
        return self.name


@dataclass(frozen=True)
class NvidiaInfo:
    # "ok": driver and GPUs read; "driver-only": a driver version but no GPU list;
    # "not-loaded": a driver is installed but not running; "timeout": nvidia-smi hung;
    # "error": nvidia-smi failed in another way; "absent": no NVIDIA driver found.
    status: str = "absent"
    driver: str | None = None
    cuda_driver_api: str | None = None    # "CUDA Version" from nvidia-smi's banner: the newest it runs
    gpus: tuple = ()
    source: str = ""                      # the command or file the answer came from
    note: str = ""                        # a sentence for the user when status is not "ok"

    @property
    def driver_tuple(self):
        return version_tuple(self.driver)


@dataclass(frozen=True)
class Hardware:
    system: str                           # "Linux", "Windows", "Darwin"
    machine: str                          # "x86_64", "arm64", "AMD64"
    wsl: bool = False
    nvidia: NvidiaInfo = field(default_factory=NvidiaInfo)
    amd: tuple = ()                       # GPU(vendor="amd", arch="gfx…")
    intel: tuple = ()                     # GPU(vendor="intel") that PyTorch's XPU build can use
    apple_mps: bool = False               # Apple silicon: the default macOS build uses it (MPS)

    @property
    def windows_driver(self):
        """NVIDIA's Windows driver numbers apply (Windows itself, or WSL, which uses the Windows driver)."""
        return self.system == "Windows" or self.wsl

    @property
    def gpus(self):
        return self.nvidia.gpus + self.amd + self.intel


def version_tuple(text):
    """'560.35.03' -> (560, 35, 3); None or junk -> None."""
    if not text:
        return None
    parts = []
    for piece in str(text).strip().split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts) or None
