"""Softmax cross-entropy over int labels and binary cross-entropy from logits, means over the batch."""

from .. import losses


def softmax_cross_entropy(logits, labels):
    return losses.cross_entropy(logits, labels)


def bce_with_logits(logits, targets):
    return losses.bce(logits, targets)
