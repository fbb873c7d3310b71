"""Torch versions of nn's functions, so Apsi code written with `use nn` runs on torch tensors.

An Apsi-written loss, `activation(fn)` or `lambda_layer(fn)` calls nn's functions (mean, exp,
softmax, mse, ...). Under fit(backend="torch") they receive torch tensors; nn/autograd/foreign.py hands those
calls to the versions below, which keep nn's meaning (argument names, axis lists, shape checks).
`install()` registers them; the torch backend calls it once when it loads.
"""

import torch
import torch.nn.functional as F

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd import foreign
from apsi_layers.nn.autograd.tensor import Tensor

from .nn_args import binary as _binary
from .nn_args import like as _like
from .nn_args import ref as _ref
from .ops import TorchOps


def _axis(axis, x):
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(axis) if isinstance(axis, list | tuple) else axis


def _reduction(fn):
    def op(x, axis=None, keepdims=False):
        return fn(x, dim=_axis(axis, x), keepdim=bool(keepdims))
    return op


def _arg(fn):
    def op(x, axis=None, keepdims=False):
        if axis is None:
            out = fn(x.reshape(-1))
            return out.reshape((1,) * x.ndim) if keepdims else out
        return fn(x, dim=axis, keepdim=bool(keepdims))
    return op


def _clip(x, lo=None, hi=None):
    return torch.clamp(x, lo, hi)


def _where(cond, a, b):
    ref = _ref(cond, a, b)
    c = cond if isinstance(cond, torch.Tensor) else torch.as_tensor(
        cond.data if type(cond) is Tensor else cond, device=ref.device)
    a = a if isinstance(a, int | float) else _like(a, ref)
    b = b if isinstance(b, int | float) else _like(b, ref)
    return torch.where(c.to(torch.bool), a, b)


def _shape_args(shape):
    shape = shape[0] if len(shape) == 1 else shape
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(n) for n in shape)


def _reshape(x, *shape):
    return x.reshape(_shape_args(shape))


def _transpose(x, axes=None):
    return x.permute(*(reversed(range(x.ndim)) if axes is None else axes))


def _take_along(x, idx, axis=-1):
    return torch.take_along_dim(x, _like(idx, x).long() if not isinstance(idx, torch.Tensor) else idx, axis)


def _join(fn):
    def op(xs, axis=0):
        ref = _ref(*xs)
        return fn([_like(x, ref) for x in xs], dim=axis)
    return op


def _pair(fn, pred, target):
    target = _like(target, pred)
    if pred.shape != target.shape:
        raise ApsiError(f"{fn}: pred has shape {tuple(pred.shape)} but target has shape "
                        f"{tuple(target.shape)}; they must match (reshape one of them)")
    return target


def _mse(pred, target):
    return F.mse_loss(pred, _pair("mse", pred, target))


def _mae(pred, target):
    return F.l1_loss(pred, _pair("mae", pred, target))


def _huber(pred, target, delta=1.0):
    return F.huber_loss(pred, _pair("huber", pred, target), delta=delta)


def _cross_entropy(logits, labels, label_smoothing=0.0):
    labels = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(
        labels.data if type(labels) is Tensor else labels, device=logits.device)
    labels = labels.long()
    c = logits.shape[-1]
    if tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise ApsiError(f"cross_entropy: labels have shape {tuple(labels.shape)} but logits "
                        f"{tuple(logits.shape)} need labels of shape {tuple(logits.shape[:-1])}")
    return F.cross_entropy(logits.reshape(-1, c), labels.reshape(-1), label_smoothing=label_smoothing)


def _bce(logits, targets):
    return F.binary_cross_entropy_with_logits(logits, _pair("bce", logits, targets))


def _vae(recon, x, mu, logvar, beta=1.0, recon_loss="bce"):
    x = _pair("vae", recon, x)
    if recon_loss == "bce":
        rec = F.binary_cross_entropy_with_logits(recon, x, reduction="sum")
    elif recon_loss == "mse":
        rec = F.mse_loss(recon, x, reduction="sum")
    else:
        raise ApsiError(f'vae: recon_loss must be "bce" or "mse", not {recon_loss!r}')
    n = recon.shape[0] if recon.ndim else 1
    kl = -0.5 * torch.sum(1.0 + logvar - mu * mu - torch.exp(logvar))
    return rec / n + beta * kl / n


# the layers' torch op set where nn's function means the same thing (one torch vocabulary)
SHARED = ("exp", "log", "sqrt", "abs", "tanh", "sigmoid", "softplus", "relu", "gelu", "softmax",
          "log_softmax")

IMPLS = {
    **{name: getattr(TorchOps, name) for name in SHARED},
    "neg": torch.neg, "log1p": torch.log1p, "sin": torch.sin, "cos": torch.cos,
    "add": _binary(torch.add), "sub": _binary(torch.sub), "mul": _binary(torch.mul),
    "div": _binary(torch.div), "pow": _binary(torch.pow), "maximum": _binary(torch.maximum),
    "minimum": _binary(torch.minimum), "matmul": _binary(torch.matmul),
    "clip": _clip, "where": _where,
    "sum": _reduction(torch.sum), "mean": _reduction(torch.mean), "max": _reduction(torch.amax),
    "min": _reduction(torch.amin), "logsumexp": _reduction(torch.logsumexp),
    "argmax": _arg(torch.argmax), "argmin": _arg(torch.argmin),
    "reshape": _reshape, "expand_dims": lambda x, axis: x.unsqueeze(axis), "transpose": _transpose,
    "broadcast_to": lambda x, shape: x.broadcast_to(_shape_args((shape,))),
    "take_along": _take_along, "concat": _join(torch.cat), "stack": _join(torch.stack),
    "mse": _mse, "mae": _mae, "huber": _huber, "cross_entropy": _cross_entropy, "bce": _bce,
    "vae": _vae,
}


def _with_linalg():
    from .linalg_impls import LINALG_IMPLS  # nn's linear algebra (issue 19)
    from .linalg_more_impls import MORE_IMPLS  # and NumPy's/SciPy's others (issue 35)

    IMPLS.update(LINALG_IMPLS)
    IMPLS.update(MORE_IMPLS)


_with_linalg()


def install():
    """Let nn's functions accept torch tensors (idempotent)."""
    from .nn_numlib import NUMLIB_IMPLS  # numlib (issue 19)
    from .nn_toolbox import TOOLBOX_IMPLS  # statistics, special functions, sequences (issue 35)

    IMPLS.update(NUMLIB_IMPLS)
    IMPLS.update(TOOLBOX_IMPLS)
    if torch.Tensor not in foreign.TYPES:
        foreign.register((torch.Tensor,), IMPLS, "torch")
