"""What `use layers` adds for the torch backend (layers' exports.py merges torch_exports()).

Importing this module does not import torch: each function loads it when called, after checking
the `python` permission (PyTorch runs outside Apsi's sandbox). devices() never fails: without
PyTorch or without the permission it lists the NumPy entry only.
"""

from apsi_lang import permissions


def devices():
    """[{name, kind, detail}, ...]: NumPy, then PyTorch's CPU and GPUs when permitted and installed."""
    from .devices import devices as listing

    return listing(with_torch=permissions.allowed("python"))


def check_torch(device="auto"):
    """Every layer type on NumPy and PyTorch in float64; prints one line per layer and the verdict.
    Stops with an error listing the layers that differ by more than 1e-10."""
    from apsi_lang.errors import ApsiError

    permissions.require("python", what="check_torch")
    from .check import check_torch as run

    result = run(device)
    if not result.ok:
        raise ApsiError(result.summary())


def torch_module(net, params, device="cpu", dtype="float32", seed=0):
    """A torch.nn.Module (ApsiModule) running `net` with a copy of `params` on `device`."""
    permissions.require("python", what="torch_module")
    from .runtime import load_torch

    load_torch("torch_module")
    from .module import torch_module as make

    return make(net, params, device=device, dtype=dtype, seed=seed)


def params_from_torch(net, m):
    """The parameter tree (float64 nn tensors) of a module made by torch_module."""
    permissions.require("python", what="params_from_torch")
    from .runtime import load_torch

    load_torch("params_from_torch")
    from .module import params_from_torch as back

    return back(net, m)


def torch_exports():
    return {"devices": devices, "check_torch": check_torch, "torch_module": torch_module,
            "params_from_torch": params_from_torch}
