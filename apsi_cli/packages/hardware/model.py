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
            guess = {"name": " from its name", "APSI_GPU_COMPUTE_CAPABILITY": " given"}.get(
                self.compute_cap_source, "")
            return f"{self.name} (compute {self.compute_cap_text}{guess})"
        if self.arch:
            return f"{self.name} ({self.arch})"
        return self.name


@dataclass(frozen=True)
class NvidiaInfo:
    # "ok": driver and GPUs read; "driver-only": a driver version but no GPU list;
    # "not-loaded": a driver is installed but not running; "mismatch": the loaded kernel module and the
    # driver's libraries are different versions (updated without a reboot); "no-devices": the driver
    # runs but sees no GPU; "timeout": nvidia-smi hung; "error": nvidia-smi failed in another way (or an
    # override is malformed); "absent": no NVIDIA driver found.
    status: str = "absent"
    driver: str | None = None
    cuda_driver_api: str | None = None    # "CUDA Version" from nvidia-smi's banner: the newest it runs
    gpus: tuple = ()
    source: str = ""                      # the command or file the answer came from
    note: str = ""                        # a sentence for the user when status is not "ok"
    fix: str = ""                         # what to do about it
    lost: tuple = ()                      # GPUs nvidia-smi reported lost or unreadable (bus ids/lines)

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
    jetson: str = ""                      # the Jetson board's model, when this is one
    overrides: tuple = ()                 # ("APSI_CUDA_DRIVER_VERSION=550.54.15", …) in effect
    override_error: str = ""              # a malformed override: nothing is chosen until it is fixed

    @property
    def arm(self):
        """Linux on 64-bit ARM: PyTorch's aarch64 wheels, with their own architecture lists."""
        return self.system == "Linux" and self.machine.lower() in ("aarch64", "arm64")

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
