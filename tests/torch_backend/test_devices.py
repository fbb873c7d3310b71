"""devices() and device selection, with the GPU paths driven through fakes of torch.cuda, mps and xpu."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from apsi_lang.errors import ApsiError  # noqa: E402
from apsi_layers.backends.torch import devices, precision  # noqa: E402

GIB = 2 ** 30


def rows(records):
    return [(r.name, r.kind, r.detail) for r in records]


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)


@pytest.fixture
def two_nvidia(no_gpu, monkeypatch):
    cards = [SimpleNamespace(name="NVIDIA GeForce RTX 4090", total_memory=int(23.6 * GIB), major=8),
             SimpleNamespace(name="NVIDIA GeForce GTX 1080", total_memory=8 * GIB, major=6)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(cards))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: cards[i])
    monkeypatch.setattr(torch.version, "cuda", "12.6")


def test_cpu_only_lists_numpy_and_torch_cpu(no_gpu):
    found = rows(devices.devices())
    assert [r[:2] for r in found] == [("numpy", "cpu"), ("cpu", "cpu")]
    numpy_detail = found[0][2]
    assert numpy_detail.startswith("NumPy ") and numpy_detail.endswith(" threads")
    assert ", float64, " in numpy_detail
    assert found[1][2] == f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads"
    assert rows(devices.devices(with_torch=False)) == found[:1]


def test_nvidia_gpus_are_listed_as_the_issue_shows(two_nvidia):
    found = rows(devices.devices())
    assert found[2:] == [("cuda:0", "cuda", "NVIDIA GeForce RTX 4090, 23.6 GiB, bf16 yes"),
                         ("cuda:1", "cuda", "NVIDIA GeForce GTX 1080, 8.0 GiB, bf16 no")]


def test_amd_gpus_are_cuda_devices_of_kind_rocm(two_nvidia, monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2")
    assert [r[:2] for r in rows(devices.devices())[2:]] == [("cuda:0", "rocm"), ("cuda:1", "rocm")]
    assert all(r[2].endswith("bf16 yes") for r in rows(devices.devices())[2:])


def test_apple_and_intel_gpus(no_gpu, monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: True)
    monkeypatch.setattr(torch.xpu, "device_count", lambda: 1)
    arc = SimpleNamespace(name="Intel(R) Arc(TM) A770 Graphics", total_memory=16 * GIB)
    monkeypatch.setattr(torch.xpu, "get_device_properties", lambda i: arc)
    found = rows(devices.devices())
    assert [r[:2] for r in found[2:]] == [("mps", "mps"), ("xpu:0", "xpu")]
    assert found[3][2] == "Intel(R) Arc(TM) A770 Graphics, 16.0 GiB, bf16 yes"
    assert devices.select(torch, "auto") == torch.device("mps")        # MPS before XPU
    assert devices.select(torch, "xpu") == torch.device("xpu", 0)
    assert devices.select(torch, "mps") == torch.device("mps")


def test_auto_prefers_cuda_then_mps_then_xpu_then_cpu(two_nvidia, monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert devices.select(torch, "auto") == torch.device("cuda", 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert devices.select(torch, "auto") == torch.device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: True)
    monkeypatch.setattr(torch.xpu, "device_count", lambda: 2)
    assert devices.select(torch, "auto") == torch.device("xpu", 0)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: False)
    assert devices.select(torch, "auto") == torch.device("cpu")


def test_explicit_devices(two_nvidia):
    assert devices.select(torch, "cpu") == torch.device("cpu")
    assert devices.select(torch, "cuda") == torch.device("cuda", 0)
    assert devices.select(torch, "cuda:1") == torch.device("cuda", 1)
    assert devices.select(torch, "CUDA:1") == torch.device("cuda", 1)
    with pytest.raises(ApsiError, match=r'device="cuda:2": PyTorch sees 2 CUDA/ROCm GPUs \(cuda:0, cuda:1\)'):
        devices.select(torch, "cuda:2")
    assert devices.name(torch.device("cuda", 1)) == "cuda:1" and devices.name(torch.device("cpu")) == "cpu"


def test_missing_gpus_say_what_to_do(no_gpu):
    with pytest.raises(ApsiError) as e:
        devices.select(torch, "cuda")
    assert e.value.message.startswith('device="cuda": PyTorch sees no CUDA/ROCm GPU')
    assert "CPU-only build" in e.value.message and "apsi pkg install torch-auto" in e.value.message
    with pytest.raises(ApsiError, match='^device="mps": PyTorch sees no Apple MPS GPU'):
        devices.select(torch, "mps")
    with pytest.raises(ApsiError, match='^device="xpu:0": PyTorch sees no Intel XPU GPU'):
        devices.select(torch, "xpu:0")


def test_a_gpu_build_without_a_gpu(no_gpu, monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", "12.6")
    with pytest.raises(ApsiError) as e:
        devices.select(torch, "cuda:0")
    assert e.value.message.startswith('device="cuda:0": PyTorch sees no CUDA/ROCm GPU')
    assert "nvidia-smi" in e.value.message


@pytest.mark.parametrize("bad", ["tpu", "cuda:x", "cpu:1", "gpu", "", 3])
def test_unknown_devices(bad):
    with pytest.raises(ApsiError, match="device"):
        devices.select(torch, bad)


def test_precisions():
    cpu = torch.device("cpu")
    assert precision.resolve(torch, "fp64", cpu).dtype == torch.float64
    p = precision.resolve(torch, "bf16", cpu)
    assert (p.dtype, p.autocast, p.scale_loss) == (torch.float32, torch.bfloat16, False)
    p = precision.resolve(torch, "fp16", cpu)
    assert (p.dtype, p.autocast, p.scale_loss) == (torch.float32, torch.float16, True)
    assert precision.resolve(torch, "tf32", cpu).tf32
    with pytest.raises(ApsiError, match='^precision="fp64" is not supported on Apple MPS'):
        precision.resolve(torch, "fp64", torch.device("mps"))
    assert precision.resolve(torch, "fp32", torch.device("mps")).dtype == torch.float32
    with pytest.raises(ApsiError, match="precision='fp8' is not one of fp64, fp32, tf32, bf16, fp16"):
        precision.resolve(torch, "fp8", cpu)


def test_tf32_is_switched_on_for_the_fit_only():
    p = precision.resolve(torch, "tf32", torch.device("cpu"))
    before = torch.get_float32_matmul_precision()
    with precision.matmul_mode(torch, p):
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32
    assert torch.get_float32_matmul_precision() == before


@pytest.mark.parametrize("name", ["fp32", "bf16", "fp16"])
def test_other_precisions_switch_tf32_off_for_the_fit(name):
    """PyTorch leaves cudnn.allow_tf32 on by default (and a user may have set "high"): fp32 convolutions
    and matrix products ran in TF32 on Ampere and newer (issue 16)."""
    p = precision.resolve(torch, name, torch.device("cpu"))
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.allow_tf32 = True
    try:
        with precision.matmul_mode(torch, p):
            assert torch.get_float32_matmul_precision() == "highest"
            assert not torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32
    finally:
        torch.set_float32_matmul_precision(before[0])
        torch.backends.cudnn.allow_tf32 = before[1]


def test_without_torch_the_message_says_how_to_install(monkeypatch):
    import sys

    from apsi_layers.backends.torch import runtime

    monkeypatch.setitem(sys.modules, "torch", None)       # `import torch` now raises ImportError
    with pytest.raises(ApsiError) as e:
        runtime.load_torch()
    assert e.value.message.startswith('backend="torch" needs PyTorch')
    assert "apsi pkg install torch-auto" in e.value.message
    assert rows(devices.devices()) == rows(devices.devices(with_torch=False))


@pytest.mark.filterwarnings("ignore::UserWarning")      # a CPU-only build warns that CUDA is absent
@pytest.mark.parametrize("kind", ["cuda", "xpu"])
def test_autocast_and_loss_scaling_target_the_chosen_gpu(kind):
    gpu = torch.device(kind, 0)
    bf16 = precision.resolve(torch, "bf16", gpu)
    cast = precision.autocast(torch, bf16, gpu)
    assert (cast.device, cast.fast_dtype) == (kind, torch.bfloat16)
    fp16 = precision.resolve(torch, "fp16", gpu)
    cast = precision.autocast(torch, fp16, gpu)
    assert (cast.device, cast.fast_dtype) == (kind, torch.float16)
    scaler = precision.scaler(torch, fp16, gpu)
    assert isinstance(scaler, torch.amp.GradScaler) and scaler._device == kind
    assert precision.scaler(torch, bf16, gpu) is None                     # bf16 needs no loss scaling
    assert isinstance(precision.autocast(torch, precision.resolve(torch, "fp32", gpu), gpu),
                      type(__import__("contextlib").nullcontext()))


def test_fit_and_torch_module_go_to_the_selected_gpu(two_nvidia, monkeypatch):
    """With two (fake) NVIDIA GPUs, fit and torch_module ask for cuda:1 and move the data and weights
    there; the fake stops at the first transfer, which names the device it was asked for."""
    from apsi_lang import permissions
    from apsi_layers.backends.torch import module
    from apsi_layers.layers import fit, mlp

    asked = []

    def fake(real):
        def move(data, *a, device=None, **k):
            if device is not None and torch.device(device).type == "cuda":
                asked.append(str(device))
                raise RuntimeError("fake GPU: no kernels here")
            return real(data, *a, device=device, **k)
        return move

    monkeypatch.setattr(torch, "as_tensor", fake(torch.as_tensor))
    monkeypatch.setattr(torch.Tensor, "to", fake(torch.Tensor.to))
    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset({"python"})))
    try:
        net = mlp(2, 1)
        with pytest.raises(RuntimeError, match="fake GPU"):
            fit(net, net.init(seed=0), [[1.0, 2.0]], [1.0], loss="mse", verbose=False, backend="torch",
                device="cuda:1")
        with pytest.raises(RuntimeError, match="fake GPU"):
            module.torch_module(net, net.init(seed=0), device="cuda")
    finally:
        permissions.set_current(before)
    assert asked[0] == "cuda:1" and asked[-1] == "cuda:0"
