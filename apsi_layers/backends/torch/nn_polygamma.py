"""polygamma for torch tensors from nn/numlib/special.py's values (issue 35's higher orders): torch's own
kernel is n! zeta(n + 1, x) like SciPy's, wrong at half-integers left of 0 for even n >= 6 (-2.5 at
n = 20: -4.2e8 for -9.18e6) and -inf past n = 170 where the value is finite. The values are computed
on the host in float64; the gradient is the next order, so grad works to any order."""

import torch

from ...nn.numlib.special import polygamma_values


class _Polygamma(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.order = n
        values = polygamma_values(n, x.detach().to("cpu", torch.float64).numpy())
        return torch.as_tensor(values).to(device=x.device, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * polygamma(ctx.order + 1, x), None


def polygamma(n, x):
    if not torch.is_floating_point(x):
        x = x.to(torch.get_default_dtype())
    return _Polygamma.apply(x, n)
