"""The PyTorch backend of `use layers`: the same layer code run on the torch op set with torch autograd.

Modules, each with one job (only the ones that need torch import it, and only when called):
    runtime.py    importing torch, with the message that says how to install it
    devices.py    devices() and device selection ("auto", "cpu", "cuda:1", "mps", "xpu")
    precision.py  fp64/fp32/tf32/bf16/fp16: weight dtype, autocast, loss scaling
    convert.py    parameter trees: nn tensors <-> torch tensors
    losses.py     named losses on torch.nn.functional's kernels (mse, mae, huber)
    optim.py      nn optimizers and schedules -> torch.optim
    compiled.py   torch.compile with the eager fallback
    backend.py    the registry's entry (backends/registry.py): session, predict, exports, check
    loop.py       TorchSession (fit's state for the shared loop, layers/training/driver.py), predict
    module.py     torch_module(net, params) -> ApsiModule, params_from_torch(net, m)
    check.py      check_torch(): every layer on both backends in float64
    nn_dispatch.py  torch versions of nn's functions, for Apsi-written losses and lambda layers
"""
