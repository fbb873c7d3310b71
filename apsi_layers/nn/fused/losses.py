"""Softmax cross-entropy over int labels and binary cross-entropy from logits: each one op whose
backward is the closed form (softmax minus one-hot; sigmoid minus target), means over the batch."""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd.tensor import Tensor
from ..autograd.xp import sigmoid
from ..numlib.creation import labels_array
from .record import fused, tensor


def _ce_forward(logits, labels, weights, training):
    classes = logits.shape[-1]
    z = logits.reshape(-1, classes)
    lab = labels.reshape(-1)
    n = lab.size
    shift = z - z.max(axis=1, keepdims=True)
    e = np.exp(shift)
    total = e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    each = np.log(total[:, 0]) - shift[rows, lab]
    w = None if weights is None else _per_label(weights, labels.shape)
    loss = (each if w is None else each * w).sum() / n
    saved = (e, total, rows, lab, logits.shape, w) if training else None
    return np.asarray(loss), saved


def _per_label(weights, shape):
    """Row weights [P] spread over the labels [P, ...] they weigh, flattened as the labels are."""
    w = weights.reshape(weights.shape + (1,) * (len(shape) - weights.ndim))
    return np.broadcast_to(w, shape).reshape(-1)


def _ce_backward(g, saved, needs):
    e, total, rows, lab, shape, w = saved
    grad = e / total                                  # softmax (saved e stays as it was: a jacobian
                                                      # runs backward once per output element)
    grad[rows, lab] -= 1.0
    grad *= g / lab.size
    if w is not None:
        grad *= w[:, None]
    return grad.reshape(shape), None, None


_ce = fused("softmax_cross_entropy", _ce_forward, _ce_backward, 3)


def softmax_cross_entropy(logits, labels, weights=None):
    """Mean over the labels of -log softmax(logits)[label]; logits [..., C], int labels [...].
    weights (one per row of labels, or None): each label's loss times its row's weight, summed and
    divided by the number of labels (Keras's "sum_over_batch_size"), not by the sum of weights."""
    logits = tensor(logits, "softmax_cross_entropy", "logits")
    if logits.ndim < 1:
        raise ApsiError("softmax_cross_entropy: logits need a class axis (last), got a scalar")
    lab = labels_array(labels, logits.shape[-1], "softmax_cross_entropy")
    if lab.shape != logits.shape[:-1]:
        raise ApsiError(f"softmax_cross_entropy: labels have shape {lab.shape} but logits "
                        f"{logits.shape} need labels of shape {logits.shape[:-1]}")
    if lab.size == 0:
        raise ApsiError("softmax_cross_entropy: no labels (the batch is empty)")
    w = None if weights is None else tensor(weights, "softmax_cross_entropy", "weights")
    return _ce(logits, Tensor(lab), w)


def _bce_forward(x, t, training):
    loss = np.mean(np.logaddexp(0.0, x) - x * t)
    return np.asarray(loss), ((x, t) if training else None)


def _bce_backward(g, saved, needs):
    x, t = saved
    scale = g / x.size
    gx = (sigmoid(x) - t) * scale if needs[0] else None
    gt = -x * scale if needs[1] else None
    return gx, gt


_bce = fused("bce_with_logits", _bce_forward, _bce_backward, 2)


def bce_with_logits(logits, targets):
    """Mean binary cross-entropy of targets in [0, 1] against logits: softplus(x) - x*t, stable."""
    logits = tensor(logits, "bce_with_logits", "logits")
    targets = tensor(targets, "bce_with_logits", "targets")
    if logits.shape != targets.shape:
        raise ApsiError(f"bce_with_logits: logits have shape {logits.shape} but targets "
                        f"{targets.shape}; they must match")
    return _bce(logits, targets)
