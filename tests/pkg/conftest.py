import os
import shutil
import subprocess
import sys

import pytest

from . import helpers

NO_WSL = "/nonexistent/wsl/nvidia-smi"
NO_PROC = "/nonexistent/proc/driver/nvidia/version"
NO_SYS = "/nonexistent/sys/module/nvidia/version"
NO_MODEL = "/nonexistent/proc/device-tree/model"


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """Make this process see a chosen machine: machine("rtx4090-driver560"), machine(None) for no GPU,
    machine("hang") for an nvidia-smi that hangs. Returns the fake bin folder (first on PATH)."""
    if os.name == "nt":
        pytest.skip("the fake nvidia-smi programs are POSIX shell scripts")
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("APSI_WSL_NVIDIA_SMI", NO_WSL)
    monkeypatch.setenv("APSI_NVIDIA_PROC_VERSION", NO_PROC)
    monkeypatch.setenv("APSI_NVIDIA_SYS_VERSION", NO_SYS)
    monkeypatch.setenv("APSI_JETSON_MODEL_FILE", NO_MODEL)
    monkeypatch.setenv("APSI_DETECT_TIMEOUT", "5")
    monkeypatch.delenv("WSL_DISTRO_NAME", raising=False)
    for name in ("APSI_CUDA_DRIVER_VERSION", "APSI_GPU_COMPUTE_CAPABILITY", "APSI_AMD_GPU_ARCHITECTURE"):
        monkeypatch.delenv(name, raising=False)

    def use(fixture):
        """Install the fixture's nvidia-smi, and its kernel-module version, board model and CPU
        architecture where it has them (the architecture only for this process)."""
        smi = bindir / "nvidia-smi"
        if smi.exists():
            smi.unlink()
        if fixture == "hang":
            helpers.hanging_nvidia_smi(smi)
        elif fixture:
            helpers.fake_nvidia_smi(smi, fixture)
            d = helpers.FIXTURES / fixture
            if (d / "module-version").exists():
                monkeypatch.setenv("APSI_NVIDIA_SYS_VERSION", str(d / "module-version"))
            if (d / "device-tree-model").exists():
                monkeypatch.setenv("APSI_JETSON_MODEL_FILE", str(d / "device-tree-model"))
            if (d / "machine").exists():
                import platform

                arch = (d / "machine").read_text().strip()
                monkeypatch.setattr(platform, "machine", lambda: arch)
        return bindir

    return use


@pytest.fixture(scope="session")
def wheels(tmp_path_factory):
    """Stand-in torch wheels and one PEP 503 index per build under a file:// base."""
    root = tmp_path_factory.mktemp("wheels")
    w = {
        "cu126": helpers.make_torch_wheel(root / "w", "2.6.0+cu126", cuda="12.6"),
        "cu128": helpers.make_torch_wheel(root / "w", "2.7.0+cu128", cuda="12.8"),
        "cpu": helpers.make_torch_wheel(root / "w", "2.13.0+cpu"),
        "rocm6.2": helpers.make_torch_wheel(root / "w", "2.5.1+rocm6.2", hip="6.2"),
        "broken": helpers.make_torch_wheel(root / "broken", "2.6.0+cu126", cuda="12.6", broken=True),
        "old": helpers.make_torch_wheel(root / "w", "2.1.0+cpu"),
    }
    fam = root / "family"
    w["tv-cu126"] = helpers.make_wheel(fam, "torchvision", "0.21.0+cu126", requires=["torch==2.6.0"])
    w["ta-cu126"] = helpers.make_wheel(fam, "torchaudio", "2.6.0+cu126", requires=["torch==2.6.0"])
    w["tv-cu128"] = helpers.make_wheel(fam, "torchvision", "0.22.0+cu128", requires=["torch==2.7.0"])
    w["ta-cu128"] = helpers.make_wheel(fam, "torchaudio", "2.7.0+cu128", requires=["torch==2.7.0"])
    w["tv-cpu"] = helpers.make_wheel(fam, "torchvision", "0.28.0+cpu", requires=["torch==2.13.0"])
    # torchaudio's last release, which pairs with PyTorch 2.11 and every later one
    w["ta-cpu"] = helpers.make_wheel(fam, "torchaudio", "2.11.1+cpu", requires=["torch>=2.11"])
    base = root / "whl"
    helpers.make_index(base, "cu126", [w["cu126"], w["tv-cu126"], w["ta-cu126"]])
    helpers.make_index(base, "cu128", [w["cu128"], w["tv-cu128"], w["ta-cu128"]])
    helpers.make_index(base, "cpu", [w["cpu"], w["tv-cpu"], w["ta-cpu"]])
    helpers.make_index(base, "rocm6.2", [w["rocm6.2"]])
    partial = root / "partial"                     # a mirror that lacks cu128
    helpers.make_index(partial, "cu126", [w["cu126"]])
    # what another index offers: a newer torch (a CUDA 13 look-alike), and packages that need torch
    other = root / "other"
    w["cu130"] = helpers.make_torch_wheel(other, "2.99.0+cu130", cuda="13.0")
    w["needs-any"] = helpers.make_wheel(other, "needs-any-torch", "1.0", requires=["torch"])
    w["needs-new"] = helpers.make_wheel(other, "needs-new-torch", "1.0", requires=["torch>=2.99"])
    helpers.make_index(root / "pypi", "simple", [w["cu130"], w["needs-any"], w["needs-new"]])
    links = root / "links"
    links.mkdir()
    shutil.copy(helpers.make_torch_wheel(root / "w98", "2.98.0"), links)
    return {"wheel": w, "base": base.as_uri(), "partial": partial.as_uri(), "root": root,
            "pypi": (root / "pypi" / "simple").as_uri(), "links": str(links)}


@pytest.fixture(scope="session")
def venv(tmp_path_factory):
    """A throwaway virtual environment with pip, made once per test session."""
    path = tmp_path_factory.mktemp("venv") / "env"
    python = helpers.make_venv(path)
    cache = tmp_path_factory.mktemp("pip-cache")
    return {"python": python, "site": helpers.site_packages(python), "cache": cache}


@pytest.fixture
def target(venv, wheels, monkeypatch, tmp_path):
    """The venv as Apsi's Python, with no torch in it, isolated from this machine's pip settings."""
    helpers.remove_torch(venv["site"])
    helpers.remove_dists(venv["site"], ("torchvision", "torchaudio", "needs_any_torch", "needs_new_torch",
                                       "needs_torch_26"))
    env = helpers.isolated_pip_env(venv["cache"])
    for k in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        if k.startswith("PIP_"):
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("APSI_PYTHON", str(venv["python"]))
    monkeypatch.setenv("APSI_TORCH_INDEX", wheels["base"])
    monkeypatch.delenv("APSI_FAKE_TORCH_GPUS", raising=False)
    monkeypatch.chdir(tmp_path)

    class Target:
        python = venv["python"]
        site = venv["site"]

        @staticmethod
        def pip_install(wheel):
            helpers.install_wheel(venv["site"], wheel)

        @staticmethod
        def torch():
            return helpers.torch_in(venv["python"], env=dict(os.environ))

        @staticmethod
        def apsi(*args, env=None):
            """Run `apsi ARGS` as a separate process, the way a user does."""
            r = subprocess.run([sys.executable, "-m", "apsi", *args], capture_output=True, text=True,
                               env={**os.environ, **(env or {})}, timeout=300)
            r.all = r.stdout + r.stderr
            return r

    return Target
