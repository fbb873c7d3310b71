"""Mini-batches as NumPy index arrays, and what each batch's loss covers. Shared by the backends, so
the same seed visits the same samples in the same order on NumPy and on torch."""

import numpy as np


def seeds(seed):
    """(shuffle seed, dropout/sampling seed): two independent streams from fit's seed."""
    a, b = np.random.SeedSequence(seed).generate_state(2)
    return int(a), int(b)


def epoch_batches(n, batch_size, shuffle_rng, graph):
    """The index arrays of one epoch: shuffled mini-batches, or all rows at once for a graph (every
    node needs its neighbours)."""
    if graph is not None:
        return [np.arange(n)]
    order = shuffle_rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def plain_batches(n, batch_size, graph):
    if graph is not None or batch_size is None or batch_size >= n:
        return [np.arange(n)]
    return [np.arange(i, min(i + batch_size, n)) for i in range(0, n, batch_size)]


def rows(arrays, idx, full):
    """The batch's rows of each array (the arrays themselves when the batch is everything); a column
    (a mapped file, a dataset: apsi_layers/data) reads them."""
    return [a.take(idx) if hasattr(a, "source") else (a if full else a[idx]) for a in arrays]


def loss_positions(mask, targets, idx, full):
    """(keep, lead, targets): where a mask restricts the loss, the flat indices of the positions it
    keeps over its `lead` leading axes and the targets at those positions; else (None, 1, targets)."""
    if mask is None:
        return None, 1, targets
    m = mask if full else mask[idx]
    lead = m.ndim
    if any(t.shape[:lead] != m.shape for t in targets):
        return None, 1, targets           # the mask is for the layers (padding), not for the loss
    keep = np.flatnonzero(m.reshape(-1))
    picked = [t.reshape((-1,) + t.shape[lead:])[keep] for t in targets]
    return keep, lead, picked


def kept_count(mask, targets, idx, full):
    """How many loss positions a batch keeps: the mask's true entries where it restricts the loss (it
    covers the targets' leading axes), else the batch's rows. A batch that keeps none is skipped, and
    the epoch's loss is the mean over the kept positions (semi-supervised data with few labels)."""
    if mask is None:
        return len(idx)
    m = mask if full else mask[idx]
    if any(t.shape[:m.ndim] != m.shape for t in (targets if full else [t[idx] for t in targets])):
        return len(idx)
    return int(np.count_nonzero(m))
