"""The named losses of fit, on the op set (so both backends compute them the same way).

Each is the mean over the batch. `keep` (an int index tensor over the rows of the leading `lead`
axes, or None) restricts the loss to the positions a mask marks: graph nodes in the training set,
real (unpadded) sequence steps. `weight` (a float tensor, one weight per row of the selected batch,
or None) weighs the loss as Keras's "sum_over_batch_size" reduction does: each element's loss times
its row's weight, summed, divided by the number of elements (not by the sum of the weights).
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


def _rows(ops, w, like):
    """Row weights [P] shaped to broadcast over `like` ([P, ...])."""
    return ops.reshape(w, (w.shape[0],) + (1,) * (len(like.shape) - 1))


def _weighted_mean(ops, values, w):
    return ops.mean(values * _rows(ops, w, values))


def _weighted(name):
    """The named loss with row weights: per-element values times the row's weight, then the mean."""
    def elements(ops, pred, target):
        d = pred - target
        if name == "mse":
            return d * d
        a = ops.abs(d)
        if name == "mae":
            return a
        q = ops.minimum(a, 1.0)
        return q * q * 0.5 + (a - q) * 1.0

    def loss(ops, pred, target, w):
        if name == "cross_entropy":
            return ops.softmax_cross_entropy(pred, target, weights=w)
        if name == "bce":                    # softplus(x) - x t, as bce_with_logits, per element
            return _weighted_mean(ops, ops.softplus(pred) - pred * target, w)
        return _weighted_mean(ops, elements(ops, pred, target), w)
    return loss


WEIGHTED = {name: _weighted(name) for name in ELEMENTWISE}


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


def loss_value(ops, loss, pred, target, keep=None, lead=1, weight=None):
    """The loss of one batch: `loss` a name of NAMES or a function fn(pred, target); `weight`: one
    weight per row (after `keep`), or None for the plain mean."""
    if not isinstance(loss, str):
        return _function_loss(ops, loss(pred, target), _batch(pred), weight)
    if loss == "vae":
        return vae_loss(ops, pred, target)

    def one(p, t):
        p = _select(ops, p, keep, lead)
        return ELEMENTWISE[loss](ops, p, t) if weight is None else WEIGHTED[loss](ops, p, t, weight)
    if isinstance(pred, list | tuple):              # several outputs: the sum of their losses
        total = None
        for p, t in zip(pred, target, strict=True):
            v = one(p, t)
            total = v if total is None else total + v
        return total
    return one(pred, target)


def _batch(pred):
    first = pred[0] if isinstance(pred, list | tuple) else pred
    return first.shape[0] if len(getattr(first, "shape", ())) else None


def _function_loss(ops, value, batch, weight):
    """What a loss function gave: one number, or one number per sample ([B], Keras's per-sample
    losses) that fit reduces as Keras does: the mean, or with weights sum(w * loss) / B. Only values
    of known types go on: NumPy or torch would read array protocols from any other object."""
    from apsi_layers.nn.autograd import foreign
    from apsi_layers.nn.autograd.tensor import Tensor

    if type(value) is Tensor or (foreign.TYPES and isinstance(value, foreign.TYPES)):
        shape = tuple(value.shape)
        if shape == () and weight is None:
            return value
        if shape == (batch,):
            return ops.mean(value) if weight is None else ops.mean(value * weight)
        what = f"a tensor of shape {list(shape)}"
    elif type(value) in (int, float) and weight is None:
        return value
    else:
        what = show(value, True)
    if weight is not None:
        raise ApsiError(f"fit: the loss function returned {what}; with sample_weight= or class_weight= "
                        f"it must return one loss per sample (shape [{batch}]), which fit weighs, e.g. "
                        "loss=fn(pred, target) => mean((pred - target) ** 2, axis=1)")
    raise ApsiError(f"fit: the loss function returned {what}; it must return one number, e.g. "
                    f"loss=fn(pred, target) => mean((pred - target) ** 2) (or one per sample, shape "
                    f"[{batch}], which fit averages)")
