"""fit's named losses on torch: mse, mae and huber as torch.nn.functional's fused kernels.

cross_entropy, bce and vae already reach F.cross_entropy / F.binary_cross_entropy_with_logits through
the op set (layers/losses.py); the three elementwise losses are written there with op-set arithmetic
(three kernels each), so here they become F.mse_loss, F.l1_loss and F.huber_loss, with the same
meaning (the mean over every element; huber's delta 1). Masks (`keep`) and several outputs are
handled as in layers/losses.py; a function given as loss= runs as it is.
"""

import torch
import torch.nn.functional as F

from apsi_layers.layers import losses

FUNCTIONAL = {"mse": F.mse_loss, "mae": F.l1_loss, "huber": F.huber_loss}


def loss_value(ops, loss, pred, target, keep=None, lead=1, weight=None):
    """The batch loss, as layers.losses.loss_value computes it, with F's kernels where there are any
    (weighted losses are the op-set formula: F's reductions have no per-row weights)."""
    plain = keep is None and weight is None and isinstance(pred, torch.Tensor)
    if plain and isinstance(loss, str) and loss == "cross_entropy":
        # the common classifier's loss without the general path's five Python calls per step (the
        # same F.cross_entropy: layers/losses.py's _cross_entropy on the op set)
        return ops.softmax_cross_entropy(pred, target)
    fn = FUNCTIONAL.get(loss) if isinstance(loss, str) and weight is None else None
    if fn is None:
        return losses.loss_value(ops, loss, pred, target, keep, lead, weight)
    if isinstance(pred, list | tuple):              # several outputs: the sum of their losses
        total = None
        for p, t in zip(pred, target, strict=True):
            v = _one(ops, fn, loss, p, t, keep, lead)
            total = v if total is None else total + v
        return total
    return _one(ops, fn, loss, pred, target, keep, lead)


def _one(ops, fn, name, pred, target, keep, lead):
    pred = losses._select(ops, pred, keep, lead)
    if not isinstance(target, torch.Tensor) or tuple(pred.shape) != tuple(target.shape):
        return losses.ELEMENTWISE[name](ops, pred, target)       # broadcasting: the op-set formula
    dtype = torch.result_type(pred, target)                      # F.huber_loss keeps the lower dtype
    return fn(pred.to(dtype), target.to(dtype))
