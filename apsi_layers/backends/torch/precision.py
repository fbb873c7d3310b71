"""fit's `precision=`: the weights' dtype, autocast, loss scaling and TF32, for one device.

    fp64  float64 weights and arithmetic (matches NumPy to rounding; Apple MPS has no float64)
    fp32  float32 weights and arithmetic (the default)
    tf32  float32 weights; matrix products and convolutions on TF32 tensor cores where there are any
    bf16  float32 weights; forward pass under bfloat16 autocast; no loss scaling
    fp16  float32 weights; forward pass under float16 autocast; dynamic loss scaling (GradScaler)
"""

import contextlib
from dataclasses import dataclass

from apsi_lang.errors import ApsiError
from apsi_layers.layers.training.option_checks import PRECISIONS


@dataclass(frozen=True)
class Precision:
    name: str
    dtype: object              # the weights' torch dtype
    autocast: object = None    # the autocast dtype, or None
    scale_loss: bool = False   # GradScaler
    tf32: bool = False


def resolve(torch, name, device):
    """The Precision for `name` on `device`, or an ApsiError."""
    if name not in PRECISIONS:
        raise ApsiError(f"precision={name!r} is not one of {', '.join(PRECISIONS)} "
                        '(fp32 is the default; bf16 is the usual choice on modern GPUs)')
    if name == "fp64" and device.type == "mps":
        raise ApsiError('precision="fp64" is not supported on Apple MPS (the GPU has no float64): use '
                        'precision="fp32" there, or device="cpu" for float64')
    if name == "fp64":
        return Precision(name, torch.float64)
    if name == "bf16":
        return Precision(name, torch.float32, autocast=torch.bfloat16)
    if name == "fp16":
        return Precision(name, torch.float32, autocast=torch.float16, scale_loss=True)
    return Precision(name, torch.float32, tf32=name == "tf32")


def autocast(torch, precision, device):
    """The context the forward pass runs in."""
    if precision.autocast is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=precision.autocast)


@contextlib.contextmanager
def matmul_mode(torch, precision):
    """TF32 on for precision="tf32" and off for every other one, for the duration of a fit; the
    global settings come back after. PyTorch's own default leaves cudnn.allow_tf32 on, so fp32
    convolutions ran in TF32 on Ampere and newer GPUs: fp32 must mean float32."""
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    torch.set_float32_matmul_precision("high" if precision.tf32 else "highest")
    torch.backends.cudnn.allow_tf32 = precision.tf32
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before[0])
        torch.backends.cudnn.allow_tf32 = before[1]


def scaler(torch, precision, device):
    """A GradScaler for fp16 (None otherwise): scales the loss so small float16 gradients survive."""
    if not precision.scale_loss:
        return None
    return torch.amp.GradScaler(device.type)
