"""torch-auto's choice for every real machine in tests/fixtures/nvidia-smi, and detection's edge cases."""

import time

import pytest

from apsi_cli.packages import hardware, torch_builds, torch_choice
from apsi_cli.packages.hardware import GPU, Hardware, NvidiaInfo, others

from . import helpers

# fixture -> (index chosen, pip requirement, reasoning line); the messages are checked below.
EXPECTED = {
    "a100x2-driver580": ("cu132", "torch>=2.12",
                         "2× NVIDIA A100-SXM4-80GB (compute 8.0), driver 580.65.06 → "
                         "torch-cu132: PyTorch ≥ 2.12 + CUDA 13.2"),
    "gtx1080-driver535": ("cu126", "torch>=2.6,<2.15",
                          "NVIDIA GeForce GTX 1080 (compute 6.1), driver 535.183.01 → "
                          "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "gtx970-driver470": ("cu118", "torch>=2.3,<2.8",
                         "NVIDIA GeForce GTX 970 (compute 5.2 from its name), driver 470.256.02 → "
                         "torch-cu118: PyTorch 2.3–2.7 + CUDA 11.8"),
    "h100-driver535": ("cu126", "torch>=2.6,<2.15",
                       "NVIDIA H100 80GB HBM3 (compute 9.0), driver 535.183.01 → "
                       "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "h100-driver550": ("cu126", "torch>=2.6,<2.15",
                       "NVIDIA H100 80GB HBM3 (compute 9.0), driver 550.54.15 → "
                       "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "mixed-rtx5090-gtx1080-driver575": ("cu128", "torch>=2.7,<2.12",
                                        "NVIDIA GeForce RTX 5090 (compute 12.0) + NVIDIA GeForce GTX 1080 "
                                        "(compute 6.1), driver 575.57.08 → "
                                        "torch-cu128: PyTorch 2.7–2.11 + CUDA 12.8"),
    "rtx3060-driver525": ("cu126", "torch>=2.6,<2.15",
                          "NVIDIA GeForce RTX 3060 (compute 8.6), driver 525.147.05 → "
                          "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "rtx4090-driver560": ("cu126", "torch>=2.6,<2.15",
                          "NVIDIA GeForce RTX 4090 (compute 8.9), driver 560.35.03 → "
                          "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "rtx5090-driver575": ("cu128", "torch>=2.7,<2.12",          # cu128 reaches 2.11, cu129 only 2.8
                          "NVIDIA GeForce RTX 5090 (compute 12.0), driver 575.57.08 → "
                          "torch-cu128: PyTorch 2.7–2.11 + CUDA 12.8"),
    "rtx5090-driver570": ("cu128", "torch>=2.7,<2.12",
                          "NVIDIA GeForce RTX 5090 (compute 12.0), driver 570.124.04 → "
                          "torch-cu128: PyTorch 2.7–2.11 + CUDA 12.8"),
    "t4-driver550": ("cu126", "torch>=2.6,<2.15",
                     "Tesla T4 (compute 7.5), driver 550.90.07 → torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "one-gpu-lost": ("cu126", "torch>=2.6,<2.15",
                     "NVIDIA A100-SXM4-80GB (compute 8.0), driver 550.54.15 → "
                     "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"),
    "kepler-k80-driver470": ("cpu", "torch>=2.3",
                             "2× Tesla K80 (compute 3.7 from its name), driver 470.256.02 → "
                             "torch: PyTorch ≥ 2.3 + the CPU build"),
    "gh200-driver570": ("cu126", "torch>=2.9,<2.15",            # cu126's aarch64 wheels start with 2.9
                        "NVIDIA GH200 480GB (compute 9.0), driver 570.124.06 → "
                        "torch-cuda: PyTorch 2.9–2.14 + CUDA 12.6"),
    "jetson-thor": ("cu132", "torch>=2.12",
                    "NVIDIA Thor (compute 11.0), driver 580.00 → torch-cu132: PyTorch ≥ 2.12 + CUDA 13.2"),
    "jetson-orin": ("cpu", "torch>=2.3",
                    "Orin (nvgpu) (compute 8.7 from its name), driver 540.4.0 → "
                    "torch: PyTorch ≥ 2.3 + the CPU build"),
}

# fixture -> (nvidia status, what the stop message starts with): machines where nothing is chosen.
STOPS = {
    "driver-not-loaded": ("not-loaded", "an NVIDIA driver is installed but not loaded"),
    "nvml-mismatch": ("mismatch", "the NVIDIA driver was updated but the old one still runs (kernel module "
                                  "550.54.15, libraries 560.35)"),
    "no-devices": ("no-devices", "NVIDIA driver 550.54.15 is loaded but nvidia-smi found no GPU"),
    "hang-after-field": ("timeout", "nvidia-smi did not answer within 1 s after rejecting the compute_cap "
                                    "field"),
    "garbage": ("error", "nvidia-smi answered (exit code 0) with output Apsi cannot read"),
    "binary": ("error", "nvidia-smi answered (exit code 0) with output Apsi cannot read"),
}


def test_every_fixture_has_an_expectation():
    names = {p.name for p in helpers.FIXTURES.iterdir() if p.is_dir()}
    assert names == set(EXPECTED) | set(STOPS)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_choice_for_fixture(machine, fixture):
    machine(fixture)
    hw = hardware.detect()
    plan = torch_choice.choose(hw)
    index, requirement, reason = EXPECTED[fixture]
    assert (plan.index, plan.requirement, plan.reason) == (index, requirement, reason)
    assert plan.stop is None


@pytest.mark.parametrize("fixture", sorted(STOPS))
def test_machines_where_nothing_is_chosen(machine, monkeypatch, fixture):
    machine(fixture)
    monkeypatch.setenv("APSI_DETECT_TIMEOUT", "1")
    start = time.monotonic()
    hw = hardware.detect()
    assert time.monotonic() - start < helpers.HUNG / 2     # the 1 s timeout ended it, not the tool (60 s)
    status, says = STOPS[fixture]
    plan = torch_choice.choose(hw)
    assert hw.nvidia.status == status and plan.index is None
    assert plan.stop.startswith(says), plan.stop
    assert "apsi pkg install torch-auto" in plan.stop and "Fix: " in plan.stop
    assert hw.gpus == () and "foo" not in plan.stop and "\x00" not in plan.stop


def test_nvml_mismatch_without_the_module_version(machine, monkeypatch):
    machine("nvml-mismatch")
    monkeypatch.setenv("APSI_NVIDIA_SYS_VERSION", "/nonexistent/version")    # no kernel module file
    plan = torch_choice.choose(hardware.detect())
    assert plan.stop.startswith("the NVIDIA driver was updated but the old one still runs (libraries "
                                "560.35); nvidia-smi and CUDA refuse to work until it is replaced. "
                                "Fix: reboot")


def test_fixture_details_read_from_nvidia_smi(machine):
    machine("a100x2-driver580")
    nv = hardware.detect().nvidia
    assert nv.status == "ok" and nv.driver == "580.65.06" and nv.cuda_driver_api == "13.0"
    assert [(g.name, g.compute_cap, g.memory_mib) for g in nv.gpus] == [
        ("NVIDIA A100-SXM4-80GB", (8, 0), 81920)] * 2


def test_old_driver_retries_without_compute_cap(machine):
    machine("gtx970-driver470")
    hw = hardware.detect()
    assert hw.nvidia.status == "ok"
    assert hw.nvidia.gpus[0].compute_cap == (5, 2) and hw.nvidia.gpus[0].compute_cap_source == "name"
    assert torch_choice.choose(hw).warnings == ()      # 470 runs CUDA 11.8 (minor-version compatibility)


@pytest.mark.parametrize("name, cc", [
    ("NVIDIA GeForce GTX 750 Ti", (5, 0)),     # Maxwell, although a GTX 7xx
    ("NVIDIA GeForce GTX 780 Ti", (3, 5)),
    ("NVIDIA GeForce GTX TITAN X", (5, 2)),    # Maxwell, not the Kepler GTX TITAN
    ("NVIDIA GeForce GTX TITAN Black", (3, 5)),
    ("NVIDIA GeForce GTX 680", (3, 0)),
    ("Tesla K40m", (3, 5)),
    ("Tesla K80", (3, 7)),
    ("NVIDIA GeForce GTX 970", (5, 2)),
    ("NVIDIA GeForce GTX 1080 Ti", (6, 1)),
    ("Quadro K2200", None),                    # Quadro K is Kepler or Maxwell: not guessed
])
def test_compute_capability_from_the_model_name(name, cc):
    from apsi_cli.packages.hardware import nvidia

    assert nvidia.cc_from_name(name) == cc


def test_a_maxwell_gtx_750_ti_on_470_gets_cu118_not_the_kepler_message(machine, tmp_path):
    # the driver predates compute_cap, so the model name decides: a GTX 7xx that is no Kepler
    bindir = machine(None)
    (tmp_path / "q.csv").write_text("NVIDIA GeForce GTX 750 Ti, 470.256.02, 2048 MiB\n")
    helpers._write_exe(bindir / "nvidia-smi", f"""#!/bin/sh
case "$*" in
  *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.'; exit 2 ;;
  *--query-gpu*) /bin/cat '{tmp_path / "q.csv"}' ;;
  *) exit 1 ;;
esac
""")
    plan = torch_choice.choose(hardware.detect())
    assert (plan.index, plan.warnings) == ("cu118", ())
    assert plan.reason.startswith("NVIDIA GeForce GTX 750 Ti (compute 5.0 from its name), driver 470.256.02")


def test_kepler_is_told_no_build_exists_not_to_update_the_driver(machine):
    machine("kepler-k80-driver470")
    plan = torch_choice.choose(hardware.detect())
    assert plan.warnings == ("no PyTorch CUDA build (PyTorch 2.3 or newer) has kernels for Tesla K80 "
                             "(compute 3.7 from its name): Kepler GPUs were dropped, and their last driver "
                             "is R470, so no driver update changes this: installing the CPU build",)


def test_mixed_gpus_warn_about_the_one_left_out(machine):
    machine("mixed-rtx5090-gtx1080-driver575")
    plan = torch_choice.choose(hardware.detect())
    assert plan.warnings == ("NVIDIA GeForce GTX 1080 (compute 6.1) has no kernels in torch-cu128; PyTorch "
                             "will not be able to use it (torch-cuda would serve it, but not NVIDIA GeForce "
                             "RTX 5090)",)


def test_one_lost_gpu_is_named_not_the_healthy_one(machine):
    machine("one-gpu-lost")
    hw = hardware.detect()
    assert [g.name for g in hw.nvidia.gpus] == ["NVIDIA A100-SXM4-80GB"]
    assert hw.nvidia.lost == ("GPU 0000:41:00.0",)
    (warning,) = torch_choice.choose(hw).warnings
    assert warning == ("nvidia-smi cannot reach GPU 0000:41:00.0 (lost: it fell off the bus or hung); the "
                       "choice is for the GPUs that answered. Reboot to recover it")


def test_jetson_orin_gets_the_cpu_build_and_where_to_look(machine):
    machine("jetson-orin")
    hw = hardware.detect()
    assert hw.jetson == "NVIDIA Jetson AGX Orin Developer Kit" and hw.nvidia.driver == "540.4.0"
    (warning,) = torch_choice.choose(hw).warnings
    assert warning.startswith("NVIDIA Jetson AGX Orin Developer Kit: PyTorch's own CUDA wheels run on "
                              "Jetson Thor (JetPack 7) and newer only")


def test_detection_as_a_whole_takes_one_timeout(machine, monkeypatch):
    bindir = machine("hang")
    helpers.hanging_nvidia_smi(bindir / "rocminfo")
    monkeypatch.setenv("APSI_DETECT_TIMEOUT", "2")
    start = time.monotonic()
    hw = hardware.detect()
    # one timeout and not one per tool (>= 4 s): the other 2 s is room for a loaded machine
    assert time.monotonic() - start < 2 * 2
    assert hw.nvidia.status == "timeout" and hw.amd == ()


def test_sys_module_version_is_read_first(machine, monkeypatch, tmp_path):
    machine(None)
    (tmp_path / "version").write_text("550.54.15\n")
    monkeypatch.setenv("APSI_NVIDIA_SYS_VERSION", str(tmp_path / "version"))
    nv = hardware.detect().nvidia
    assert (nv.status, nv.driver, nv.source) == ("driver-only", "550.54.15", str(tmp_path / "version"))


def test_overrides_for_ci_without_a_gpu(machine, monkeypatch):
    machine(None)
    monkeypatch.setenv("APSI_CUDA_DRIVER_VERSION", "550.54.15")
    monkeypatch.setenv("APSI_GPU_COMPUTE_CAPABILITY", "8.9")
    hw = hardware.detect()
    assert hw.overrides == ("APSI_CUDA_DRIVER_VERSION=550.54.15", "APSI_GPU_COMPUTE_CAPABILITY=8.9")
    plan = torch_choice.choose(hw)
    assert plan.reason == ("GPU 0 (compute 8.9 given), driver 550.54.15 → "
                           "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6")
    monkeypatch.delenv("APSI_GPU_COMPUTE_CAPABILITY")
    plan = torch_choice.choose(hardware.detect())             # the driver alone: CUDA 12.x, no CUDA 13
    assert (plan.index, plan.warnings) == ("cu126", (
        "no GPU models are known (APSI_CUDA_DRIVER_VERSION is set, so nvidia-smi was not asked), so only "
        "the driver version was checked; APSI_GPU_COMPUTE_CAPABILITY tells Apsi what they are",))
    monkeypatch.setenv("APSI_GPU_COMPUTE_CAPABILITY", "8.9")
    monkeypatch.delenv("APSI_CUDA_DRIVER_VERSION")
    plan = torch_choice.choose(hardware.detect())
    assert plan.index is None and "set APSI_CUDA_DRIVER_VERSION too" in plan.stop
    monkeypatch.setenv("APSI_AMD_GPU_ARCHITECTURE", "gfx1151")
    monkeypatch.delenv("APSI_GPU_COMPUTE_CAPABILITY")
    plan = torch_choice.choose(hardware.detect())
    assert plan.index == "rocm7.2" and plan.reason.startswith("AMD GPU gfx1151 (gfx1151) → torch-rocm:")


def test_given_capabilities_and_the_module_version_need_no_nvidia_smi(machine, monkeypatch, tmp_path):
    machine("hang")                                   # nvidia-smi would hang: it must not be asked
    (tmp_path / "version").write_text("535.183.01\n")
    monkeypatch.setenv("APSI_NVIDIA_SYS_VERSION", str(tmp_path / "version"))
    monkeypatch.setenv("APSI_GPU_COMPUTE_CAPABILITY", "9.0,9.0")
    monkeypatch.setenv("APSI_DETECT_TIMEOUT", "30")   # asking nvidia-smi would take all of it
    start = time.monotonic()
    hw = hardware.detect()
    assert time.monotonic() - start < 30 / 2
    assert hw.nvidia.source == f"{tmp_path / 'version'} + APSI_GPU_COMPUTE_CAPABILITY"
    assert torch_choice.choose(hw).reason == ("GPU 0 (compute 9.0 given) + GPU 1 (compute 9.0 given), "
                                              "driver 535.183.01 → torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6")


@pytest.mark.parametrize("name, value", [("APSI_CUDA_DRIVER_VERSION", "latest"),
                                         ("APSI_GPU_COMPUTE_CAPABILITY", "sm_89"),
                                         ("APSI_AMD_GPU_ARCHITECTURE", "navi31")])
def test_malformed_overrides_stop_with_the_expected_form(machine, monkeypatch, name, value):
    machine("rtx4090-driver560")
    monkeypatch.setenv(name, value)
    plan = torch_choice.choose(hardware.detect())
    assert plan.index is None and plan.stop.startswith(f"{name}={value!r} is not")


def test_driver_not_loaded_is_reported_and_stops(machine):
    machine("driver-not-loaded")
    hw = hardware.detect()
    assert hw.nvidia.status == "not-loaded"
    assert "installed but not loaded" in hw.nvidia.note
    plan = torch_choice.choose(hw)
    assert plan.index is None and "sudo modprobe nvidia" in plan.stop
    assert "apsi pkg install torch-auto" in plan.stop


def test_no_nvidia_smi_means_cpu(machine):
    machine(None)
    hw = hardware.detect()
    assert hw.nvidia.status == "absent" and hw.gpus == ()
    plan = torch_choice.choose(hw)
    if hw.system == "Linux":
        assert plan.index == "cpu" and plan.reason.startswith("no NVIDIA, AMD or Intel GPU found → torch:")


def test_hanging_nvidia_smi_times_out_quickly(machine, monkeypatch):
    machine("hang")
    monkeypatch.setenv("APSI_DETECT_TIMEOUT", "0.5")
    start = time.monotonic()
    hw = hardware.detect()
    assert time.monotonic() - start < helpers.HUNG / 2     # the timeout ended it, not the tool (60 s)
    assert hw.nvidia.status == "timeout" and "did not answer within 0.5 s: the driver" in hw.nvidia.note
    plan = torch_choice.choose(hw)
    assert plan.index is None and "apsi pkg install torch-cuda" in plan.stop


def test_wsl_location_is_found_and_windows_driver_numbers_apply(machine, monkeypatch, tmp_path):
    machine(None)
    wsl = helpers.fake_nvidia_smi(tmp_path / "wsl" / "lib" / "nvidia-smi", "rtx5090-driver570")
    monkeypatch.setenv("APSI_WSL_NVIDIA_SMI", str(wsl))
    hw = hardware.detect()
    assert hw.nvidia.status == "ok" and hw.nvidia.source.startswith(str(wsl))
    if hw.system == "Linux":
        assert hw.wsl and hw.windows_driver
        plan = torch_choice.choose(hw)
        assert plan.index == "cu128" and "driver 570.124.04 (WSL) → torch-cu128" in plan.reason


def test_banner_when_the_query_fails(machine):
    bindir = machine(None)
    helpers.failing_query_nvidia_smi(bindir / "nvidia-smi", "rtx4090-driver560")
    nv = hardware.detect().nvidia
    assert nv.status == "ok" and nv.driver == "560.35.03" and nv.cuda_driver_api == "12.6"
    assert [(g.name, g.compute_cap, g.memory_mib) for g in nv.gpus] == [
        ("NVIDIA GeForce RTX 4090", None, 24564)]
    plan = torch_choice.choose(hardware.detect())
    assert plan.index == "cu126"          # model unknown: driver 560 runs CUDA 12.x, not 13.x
    assert plan.warnings == ("NVIDIA GeForce RTX 4090: its compute capability is unknown, so only the "
                             "driver was checked",)



def test_proc_driver_version_without_nvidia_smi(machine, monkeypatch, tmp_path):
    machine(None)
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  "
                    "Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n")
    monkeypatch.setenv("APSI_NVIDIA_PROC_VERSION", str(proc))
    hw = hardware.detect()
    assert (hw.nvidia.status, hw.nvidia.driver, hw.nvidia.source) == ("driver-only", "550.54.15", str(proc))
    plan = torch_choice.choose(hw)
    assert plan.index == "cu126"
    assert "no GPU models are known (nvidia-smi listed none)" in plan.warnings[0]


def _nv(driver, *ccs, system="Linux"):
    gpus = tuple(GPU(name=f"GPU {a}.{b}", vendor="nvidia", compute_cap=(a, b)) for a, b in ccs)
    return Hardware(system, "x86_64", nvidia=NvidiaInfo(status="ok", driver=driver, gpus=gpus))


@pytest.mark.parametrize("driver, cc, index", [
    ("580.95.05", (7, 0), "cu126"),     # Volta: CUDA 13 has no kernels; cu126 reaches 2.14, cu128 2.10
    ("580.65.06", (8, 9), "cu132"),     # CUDA 13.x runs on any 580 driver; the newest CUDA wins the tie
    ("595.45.04", (12, 1), "cu132"),    # 12.0 code (and PTX) serves 12.1
    ("570.26", (12, 0), "cu128"),       # Blackwell below 580: cu128 (2.11) beats cu129 (2.8)
    ("525.60.13", (8, 6), "cu126"),     # the CUDA 12.x minimum
    ("525.60.12", (8, 6), "cu118"),     # just below it: CUDA 11.8
    ("450.80.02", (7, 5), "cu118"),     # the CUDA 11.x minimum
    ("450.80.01", (7, 5), None),        # below every build: CPU with a warning
    ("560.28.03", (6, 1), "cu126"),     # Pascal on the last index that has it
    ("575.57.08", (12, 0), "cu128"),    # RTX 5090 on 575: cu128 reaches 2.11, cu129 only 2.8
    ("560.35.03", (10, 0), "cu128"),    # B200 below 580: Blackwell needs cu128 or newer
    ("579.99", (8, 9), "cu126"),        # just below 580: no CUDA 13 build runs
    ("580.95.05", (6, 1), "cu126"),     # GTX 1080 on 580: CUDA 13 has no Pascal kernels
    ("580.95.05", (7, 5), "cu132"),     # Turing is the oldest CUDA 13 architecture
    ("580.95.05", (12, 0), "cu132"),    # Blackwell on 580
    ("470.256.02", (8, 6), "cu118"),    # R470 runs CUDA 11.x only (minor-version compatibility)
])
def test_choice_table(driver, cc, index):
    plan = torch_choice.choose(_nv(driver, cc))
    assert plan.index == (index or "cpu")
    if index is None:
        assert plan.warnings[0].startswith("driver 450.80.01 is older than every CUDA build needs (CUDA 11.8 "
                                           "needs 450.80.02 or newer)")


def test_rtx5090_on_575_gets_the_cu128_range_to_2_11():
    plan = torch_choice.choose(_nv("575.57.08", (12, 0)))
    assert (plan.requirement, plan.warnings) == ("torch>=2.7,<2.12", ())
    assert plan.reason == ("GPU 12.0 (compute 12.0), driver 575.57.08 → "
                           "torch-cu128: PyTorch 2.7–2.11 + CUDA 12.8")


def test_mixed_gpus_get_the_newest_release_that_covers_them_all():
    # V100 + RTX 5090 on 575: cu128 dropped Volta in 2.11, but its 2.8-2.10 wheels run on both
    plan = torch_choice.choose(_nv("575.57.08", (12, 0), (7, 0)))
    assert (plan.index, plan.requirement, plan.warnings) == ("cu128", "torch>=2.8,<2.11", ())
    assert plan.reason.endswith("→ torch-cu128: PyTorch 2.8–2.10 + CUDA 12.8")


def test_windows_driver_numbers():
    # CUDA 12.x needs 525.60.13 on Linux but 528.33 on Windows (and WSL)
    assert torch_choice.choose(_nv("527.99", (8, 9))).index == "cu126"
    assert torch_choice.choose(_nv("527.99", (8, 9), system="Windows")).index == "cu118"
    assert torch_choice.choose(_nv("528.33", (8, 9), system="Windows")).index == "cu126"


def test_aarch64_uses_the_aarch64_architecture_lists():
    gpu = (GPU(name="NVIDIA GH200", vendor="nvidia", compute_cap=(9, 0)),)
    hw = Hardware("Linux", "aarch64", nvidia=NvidiaInfo(status="ok", driver="580.65.06", gpus=gpu))
    assert torch_choice.choose(hw).index == "cu132"
    turing = (GPU(name="T4", vendor="nvidia", compute_cap=(7, 5)),)   # no aarch64 wheel has 7.5
    hw = Hardware("Linux", "aarch64", nvidia=NvidiaInfo(status="ok", driver="580.65.06", gpus=turing))
    plan = torch_choice.choose(hw)
    assert plan.index == "cpu" and "in its Linux aarch64 wheels" in plan.warnings[0]


def test_amd_intel_and_macos():
    amd = Hardware("Linux", "x86_64", amd=(GPU(name="Radeon RX 7900 XTX", vendor="amd", arch="gfx1100"),))
    plan = torch_choice.choose(amd)
    assert plan.index == "rocm7.2" and plan.reason == ("Radeon RX 7900 XTX (gfx1100) → torch-rocm: "
                                                       "PyTorch 2.11–2.13 + ROCm 7.2")
    for arch in ("gfx950", "gfx1150", "gfx1151"):
        hw = Hardware("Linux", "x86_64", amd=(GPU(name="AMD", vendor="amd", arch=arch),))
        assert torch_choice.choose(hw).index == "rocm7.2"
    assert torch_choice.explicit("rocm6.4").requirement == "torch>=2.8,<2.10"
    assert torch_choice.explicit("rocm7.1").reason == "torch-rocm7.1: PyTorch 2.10 + ROCm 7.1"
    odd = Hardware("Linux", "x86_64", amd=(GPU(name="Old", vendor="amd", arch="gfx803"),))
    assert torch_choice.choose(odd).index == "cpu"
    win = Hardware("Windows", "AMD64", amd=amd.amd)
    assert "Linux only" in torch_choice.choose(win).warnings[0]
    intel = Hardware("Linux", "x86_64", intel=(GPU(name="Intel GPU 0x56a0", vendor="intel"),))
    assert torch_choice.choose(intel).index == "xpu"
    mac = torch_choice.choose(Hardware("Darwin", "arm64", apple_mps=True))
    assert mac.default_index and mac.reason == ("macOS on Apple silicon (MPS) → torch: PyTorch from the "
                                                "default index (CPU, and MPS on Apple silicon)")


ROCM = "→ torch-rocm: PyTorch 2.11–2.13 + ROCm 7.2"
# fixture in tests/fixtures/rocminfo -> (index, reasoning line, warnings)
AMD_EXPECTED = {
    "mi300x-x2": ("rocm7.2", f"2× AMD Instinct MI300X (gfx942) {ROCM}", ()),
    "mi355x": ("rocm7.2", f"AMD Instinct MI355X (gfx950) {ROCM}", ()),
    "strix-halo": ("rocm7.2", f"AMD Radeon Graphics (gfx1151) {ROCM}", ()),
    "strix-point": ("rocm7.2", f"AMD Radeon 890M Graphics (gfx1150) {ROCM}", ()),
    "rx9070xt": ("rocm7.2", f"AMD Radeon RX 9070 XT (gfx1201) {ROCM}", ()),
    "rx7900xtx-with-igpu": (
        "rocm7.2", f"Radeon RX 7900 XTX (gfx1100) + AMD Radeon Graphics (gfx1036) {ROCM}",
        ("AMD Radeon Graphics (gfx1036) has no kernels in ROCm 7.2: PyTorch cannot use it, and may fail if "
         "a program does; HIP_VISIBLE_DEVICES (the numbers of the other GPUs) hides it",)),
    "rx580": ("cpu", "Radeon RX 580 Series (gfx803) → torch: PyTorch ≥ 2.3 + the CPU build",
              ("no ROCm build Apsi knows has kernels for gfx803: installing the CPU build; `apsi pkg install "
               "torch --index-url URL` takes any index",)),
}


def test_every_rocminfo_fixture_has_an_expectation():
    assert {p.name for p in helpers.ROCMINFO.iterdir() if p.is_dir()} == set(AMD_EXPECTED)


@pytest.mark.parametrize("fixture", sorted(AMD_EXPECTED))
def test_choice_for_amd_machines(machine, fixture):
    bindir = machine(None)
    helpers.fake_rocminfo(bindir / "rocminfo", fixture)
    hw = hardware.detect()
    if hw.system != "Linux":
        pytest.skip("rocminfo is asked on Linux only")
    plan = torch_choice.choose(hw)
    assert (plan.index, plan.reason, plan.warnings) == AMD_EXPECTED[fixture]


def test_rocminfo_parsing():
    text = """ROCk module is loaded
*******
Agent 1
*******
  Name:                    AMD Ryzen 9 7950X
  Marketing Name:          AMD Ryzen 9 7950X
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    gfx1100
  Marketing Name:          Radeon RX 7900 XTX
  Device Type:             GPU
"""
    assert others.parse_rocminfo(text) == [("Radeon RX 7900 XTX", "gfx1100")]


def test_intel_detection_from_sysfs(tmp_path):
    for card, vendor, device in (("card0", "0x8086", "0x56a0"), ("card1", "0x8086", "0x9a49"),
                                 ("card0-DP-1", "0x8086", "0x56a0")):
        d = tmp_path / card / "device"
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
    assert [g.name for g in others.detect_intel(str(tmp_path))] == ["Intel GPU 0x56a0"]


def test_suitability():
    hw = _nv("560.35.03", (8, 9))
    plan = torch_choice.choose(hw)
    assert torch_choice.suitability(hw, plan, {"version": "2.6.0+cu126", "cuda": "12.6"})[0]
    ok, why = torch_choice.suitability(hw, plan, {"version": "2.13.0+cpu"})
    assert not ok and why == ("PyTorch 2.13.0+cpu is the CPU build, but this machine has a GPU that "
                              "torch-cuda would use")
    ok, why = torch_choice.suitability(_nv("470.256.02", (8, 6)), plan, {"version": "2.7.0+cu128",
                                                                         "cuda": "12.8"})
    assert not ok and why == ("PyTorch 2.7.0+cu128 needs NVIDIA driver 525.60.13 or newer, "
                              "this machine has 470.256.02")
    pascal = _nv("580.65.06", (6, 1))
    ok, why = torch_choice.suitability(pascal, torch_choice.choose(pascal), {"version": "2.9.0+cu130",
                                                                             "cuda": "13.0"})
    assert not ok and why == "PyTorch 2.9.0+cu130 has no kernels for GPU 6.1 (compute 6.1)"


def test_an_installed_rocm_build_without_kernels_for_the_gpu_does_not_suit():
    strix = Hardware("Linux", "x86_64", amd=(GPU(name="AMD Radeon Graphics", vendor="amd", arch="gfx1151"),))
    plan = torch_choice.choose(strix)
    ok, why = torch_choice.suitability(strix, plan, {"version": "2.9.1+rocm6.4", "hip": "6.4"})
    assert not ok
    assert why == "PyTorch 2.9.1+rocm6.4 (ROCm 6.4) has no kernels for AMD Radeon Graphics (gfx1151)"
    assert torch_choice.suitability(strix, plan, {"version": "2.10.0+rocm7.1", "hip": "7.1"})[0]


def test_table_is_consistent():
    for ix in torch_builds.INDEXES.values():
        assert ix.spans and all(s.first for s in ix.spans)
        for a, b in zip(ix.spans, ix.spans[1:], strict=False):
            assert a.last is not None and torch_builds.next_minor(a.last) == b.first
    for build in torch_builds.BUILDS.values():
        assert build.index is None or build.index in torch_builds.INDEXES
    assert torch_choice.explicit("cu124").reason == "torch-cu124: PyTorch 2.4–2.6 + CUDA 12.4"
    assert torch_choice.explicit("cu126").reason == "torch-cuda: PyTorch 2.6–2.14 + CUDA 12.6"


def test_explicit_build_warns_about_driver_and_gpus(machine):
    machine("gtx1080-driver535")
    hw = hardware.detect()
    warnings = torch_choice.explicit_warnings(hw, torch_choice.explicit("cu130"))
    assert len(warnings) == 2
    assert warnings[0].startswith(
        "CUDA 13.0 needs NVIDIA driver 580 or newer; this machine has 535.183.01")
    assert "no kernels for NVIDIA GeForce GTX 1080 (compute 6.1)" in warnings[1]
    assert torch_choice.explicit_warnings(hw, torch_choice.explicit("cu118")) == ()


def test_explicit_build_that_fits_has_no_warning(machine):
    machine("rtx4090-driver560")
    hw = hardware.detect()
    assert torch_choice.explicit_warnings(hw, torch_choice.explicit("cu126")) == ()
    assert torch_choice.explicit_warnings(hw, torch_choice.explicit("cpu")) == ()
