"""The named losses of fit, on the op set (so both backends compute them the same way).

Each is the mean over the batch. `keep` (an int index tensor over the rows of the leading `lead`
axes, or None) restricts the loss to the positions a mask marks: graph nodes in the training set,
real (unpadded) sequence steps.
"""

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


def checked_loss(value):
    """What a loss function written in Apsi returned: one number, a tensor or a plain number. Only
    values of known types go on to NumPy (which would read protocols from any other object)."""
    from apsi_lang.errors import ApsiError
    from apsi_layers.nn import foreign
    from apsi_layers.nn.tensor import Tensor, describe

    if type(value) is Tensor:
        if value.data.size != 1:
            raise ApsiError(f"fit: the loss function must return one number, but it returned a tensor "
                            f"of shape {value.shape}; reduce it, e.g. with mean(...)")
        return value
    if type(value) in (int, float) or (foreign.TYPES and isinstance(value, foreign.TYPES)):
        return value
    raise ApsiError(f"fit: the loss function must return one number (a scalar tensor), but it returned "
                    f"{describe(value)}")


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
        return checked_loss(loss(pred, target))
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
