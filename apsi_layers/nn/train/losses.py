"""Losses: each is `fn(pred, target) => scalar`, the mean over the batch; any such function is a loss."""

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd.foreign import Foreign
from ..autograd.ops import abs, exp, softplus, where
from ..autograd.reduce import log_softmax, mean
from ..autograd.reduce import sum as tsum
from ..autograd.shape import take_along
from ..autograd.tensor import as_tensor
from ..numlib.creation import labels_array


def _pair(fn, pred, target):
    pred = as_tensor(pred, fn, "pred")
    target = as_tensor(target, fn, "target")
    if pred.shape != target.shape:
        raise ApsiError(f"{fn}: pred has shape {pred.shape} but target has shape {target.shape}; "
                        "they must match (reshape one of them)")
    return pred, target


def mse(pred, target):
    """Mean squared error."""
    try:
        pred, target = _pair("mse", pred, target)
    except Foreign:
        return foreign.call("mse", pred, target)
    d = pred - target
    return mean(d * d)


def mae(pred, target):
    """Mean absolute error."""
    try:
        pred, target = _pair("mae", pred, target)
    except Foreign:
        return foreign.call("mae", pred, target)
    return mean(abs(pred - target))


def huber(pred=None, target=None, delta=1.0):
    """Huber loss (torch's HuberLoss): 0.5 d^2 where |d| < delta, else delta (|d| - delta/2).
    huber(delta=2.0) alone returns the loss function with that delta."""
    if pred is None or (target is None and isinstance(pred, int | float)):
        d = delta if pred is None else pred
        return lambda p, t: huber(p, t, delta=d)
    if not delta > 0:
        raise ApsiError(f"huber: delta must be positive, got {delta!r}")
    try:
        pred, target = _pair("huber", pred, target)
    except Foreign:
        return foreign.call("huber", pred, target, delta=delta)
    d = pred - target
    a = abs(d)
    return mean(where(a.data < delta, 0.5 * d * d, delta * (a - 0.5 * delta)))


def cross_entropy(logits, labels, label_smoothing=0.0):
    """Softmax cross-entropy of logits [..., classes] against int labels [...], mean over labels.
    label_smoothing=e mixes the one-hot target with the uniform distribution (as torch does)."""
    try:
        logits = as_tensor(logits, "cross_entropy", "logits")
    except Foreign:
        return foreign.call("cross_entropy", logits, labels, label_smoothing=label_smoothing)
    if logits.ndim < 1:
        raise ApsiError("cross_entropy: logits need a class axis (last), got a scalar")
    classes = logits.shape[-1]
    labels = labels_array(labels, classes, "cross_entropy")
    if labels.shape != logits.shape[:-1]:
        raise ApsiError(f"cross_entropy: labels have shape {labels.shape} but logits {logits.shape} "
                        f"need labels of shape {logits.shape[:-1]} (one class index per row)")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ApsiError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    logp = log_softmax(logits, axis=-1)
    nll = -mean(take_along(logp, labels[..., None], axis=-1))
    if label_smoothing == 0.0:
        return nll
    uniform = -mean(logp)                     # mean over rows of the mean over classes
    return (1.0 - label_smoothing) * nll + label_smoothing * uniform


def bce(logits, targets):
    """Binary cross-entropy from logits (targets in [0, 1]): softplus(x) - x*y, stable for any x."""
    try:
        logits, targets = _pair("bce", logits, targets)
    except Foreign:
        return foreign.call("bce", logits, targets)
    return mean(softplus(logits) - logits * targets)


def vae(recon, x, mu, logvar, beta=1.0, recon_loss="bce"):
    """VAE loss: reconstruction (bce from logits, or "mse") summed over features, plus beta times
    KL(N(mu, exp(logvar)) || N(0, 1)) summed over latents; both averaged over the batch (axis 0)."""
    try:
        recon, x = _pair("vae", recon, x)
        mu, logvar = _pair("vae", mu, logvar)
    except Foreign:
        return foreign.call("vae", recon, x, mu, logvar, beta=beta, recon_loss=recon_loss)
    if recon.shape[:1] != mu.shape[:1]:
        raise ApsiError(f"vae: recon {recon.shape} and mu {mu.shape} must have the same batch size")
    if recon_loss == "bce":
        rec = softplus(recon) - recon * x
    elif recon_loss == "mse":
        rec = (recon - x) * (recon - x)
    else:
        raise ApsiError(f'vae: recon_loss must be "bce" or "mse", not {recon_loss!r}')
    n = recon.shape[0] if recon.ndim else 1
    kl = -0.5 * tsum(1.0 + logvar - mu * mu - exp(logvar))
    return tsum(rec) / n + beta * kl / n
