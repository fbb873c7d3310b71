"""The named losses of fit, on the op set (so both backends compute them the same way).

Each is the mean over the batch. `keep` (an int index tensor over the rows of the leading `lead`
axes, or None) restricts the loss to the positions a mask marks: graph nodes in the training set,
real (unpadded) sequence steps.
"""

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

NAMES = ("mse", "mae", "huber", "cross_entropy", "bce", "vae")
CLASS_LOSSES = ("cross_entropy",)


def _select(ops, pred, keep, lead):
    if keep is None:
        return pred
    flat = ops.reshape(pred, (-1,) + tuple(pred.shape[lead:]))
    return ops.take(flat, keep, axis=0)


def _mse(ops, pred, target):
    d = pred - target
    return ops.mean(d * d)


def _mae(ops, pred, target):
    return ops.mean(ops.abs(pred - target))


def _huber(ops, pred, target, delta=1.0):
    # 0.5 d^2 inside |d| < delta, delta (|d| - delta / 2) outside, written without a branch
    a = ops.abs(pred - target)
    q = ops.minimum(a, delta)
    return ops.mean(q * q * 0.5 + (a - q) * delta)


def _cross_entropy(ops, pred, target):
    return ops.softmax_cross_entropy(pred, target)


def _bce(ops, pred, target):
    return ops.bce_with_logits(pred, target)


ELEMENTWISE = {"mse": _mse, "mae": _mae, "huber": _huber, "cross_entropy": _cross_entropy, "bce": _bce}


def vae_loss(ops, out, x):
    """Bernoulli reconstruction (bce from logits, summed over features) plus KL(q(z|x) || N(0, 1))
    summed over the latent, both averaged over the batch."""
    recon, mu, logvar = out
    features = 1
    for s in recon.shape[1:]:
        features *= s
    rec = ops.bce_with_logits(recon, x) * float(features)
    kl = ops.sum(logvar + 1.0 - mu * mu - ops.exp(logvar)) * (-0.5 / recon.shape[0])
    return rec + kl


def loss_value(ops, loss, pred, target, keep=None, lead=1):
    """The loss of one batch: `loss` a name of NAMES or a function fn(pred, target)."""
    if not isinstance(loss, str):
        return _one_number(loss(pred, target))
    if loss == "vae":
        return vae_loss(ops, pred, target)
    fn = ELEMENTWISE[loss]
    if isinstance(pred, list | tuple):              # several outputs: the sum of their losses
        total = None
        for p, t in zip(pred, target, strict=True):
            v = fn(ops, _select(ops, p, keep, lead), t)
            total = v if total is None else total + v
        return total
    return fn(ops, _select(ops, pred, keep, lead), target)


def _one_number(value):
    """What a loss function gave, when it is one number (a 0-d tensor or a float). Only values of
    known types go on: NumPy or torch would read array protocols from any other object."""
    from apsi_layers.nn import foreign
    from apsi_layers.nn.tensor import Tensor

    if type(value) is Tensor or (foreign.TYPES and isinstance(value, foreign.TYPES)):
        if tuple(value.shape) == ():
            return value
        what = f"a tensor of shape {list(value.shape)}"
    elif type(value) in (int, float):
        return value
    else:
        what = show(value, True)
    raise ApsiError(f"fit: the loss function returned {what}; it must return one number, e.g. "
                    f"loss=fn(pred, target) => mean((pred - target) ** 2)")
