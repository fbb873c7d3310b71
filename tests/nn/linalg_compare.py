"""Helpers shared by the linear-algebra comparisons with torch.autograd (torch imported lazily, so
a module using them still runs its NumPy/SciPy checks without torch)."""

import numpy as np

from apsi_layers import nn


def as_list(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def weights(outs, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(o.data if hasattr(o, "data") else o)) for o in outs]


def scalar_nn(f, ws):
    def loss(*xs):
        return sum(nn.sum(o * w) for o, w in zip(as_list(f(*xs)), ws, strict=True))
    return loss


def scalar_t(f, ws):
    import torch

    def loss(*xs):
        return sum((o * torch.as_tensor(w)).sum() for o, w in zip(as_list(f(*xs)), ws, strict=True))
    return loss


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def tol_for(xs, scale):
    """1e-10 relative, times the condition number of the square inputs."""
    mats = [x for x in xs if x.ndim >= 2 and x.shape[-1] == x.shape[-2]]
    kappa = max([np.linalg.cond(m).max() for m in mats], default=1.0)
    return 1e-10 * scale * max(kappa, 1.0)


def assert_grads_match(name, f, tf, xs, ws, tol):
    """nn.grad of sum(f(*xs) * ws) against torch.autograd's of sum(tf(*xs) * ws), each argument."""
    import torch

    grads = nn.grad(scalar_nn(f, ws), argnums=tuple(range(len(xs))))(*[nn.array(x) for x in xs])
    grads = grads if len(xs) > 1 else (grads,)
    txs = [torch.tensor(x, requires_grad=True) for x in xs]
    tgrads = torch.autograd.grad(scalar_t(tf, ws)(*txs), txs)
    for i, (g, tg) in enumerate(zip(grads, tgrads, strict=True)):
        assert rel(g.data, tg.numpy()) < tol, f"{name}: gradient of argument {i}"
