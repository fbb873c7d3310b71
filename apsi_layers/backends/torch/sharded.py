"""fit on several processes (distributed=true): DistributedDataParallel over torchrun's process group.

The sharding is chosen so that N processes with batch_size b train exactly as one process with
batch_size b × N (docs/distributed.md):
- every rank draws the same permutation (the same seed) and cuts the same global batches of b × N rows;
  rank r takes rows [r·b, (r+1)·b) of each, so the last, shorter batch leaves the last ranks fewer rows
  or none;
- rank r's loss (the mean over its kept positions k_r) is weighted by k_r · N / K, K the global batch's
  kept positions (known on every rank, which all hold the whole data), so DDP's average of the
  gradients is the gradient of the global batch's mean;
- a rank with nothing kept still joins the gradient all-reduce: it runs another rank's share with weight 0;
- the epoch's loss is one all-reduce at the end of the epoch of Σ k_r · loss_r per step, over K.
Batch norm's running statistics are kept per rank while an epoch runs (as DDP without SyncBatchNorm) and
averaged over the ranks after it, so r.params is the same tree on every rank.

distributed="fsdp" keeps this sharding of the data and shards the weights too (FSDP2's fully_shard):
each rank holds a slice of every weight and of its optimizer state; the whole weights are gathered
for each forward and backward, and each gradient is reduce-scattered (averaged, as DDP's all-reduce),
so the numbers are those of DDP. Whole tensors are gathered for what needs them (validation, outputs,
checkpoints, the result), on every rank at once: the gathers are collectives.
"""

import torch

from apsi_lang.errors import ApsiError
from apsi_layers import distributed
from apsi_layers.layers.training.batches import kept_count
from apsi_layers.nn.autograd import tree

from . import convert


class Objective(torch.nn.Module):
    """The weights as a module's parameters, whose forward is the session's objective: what DDP needs
    to hook the gradient all-reduce into backward."""

    def __init__(self, weights, objective):
        super().__init__()
        self.weights = torch.nn.ParameterList(weights)
        self.objective = objective

    def forward(self, params, *batch):
        return self.objective(params, *batch)


class Gathered(Objective):
    """FSDP: the module's parameters are this rank's slices between steps; during forward and backward
    FSDP puts the gathered whole weights in their place, and the tree the objective sees is rebuilt
    over them (the states, running statistics, come from the tree passed in)."""

    def __init__(self, weights, objective, like, train):
        super().__init__(weights, objective)
        self.like, self.train = like, train

    def forward(self, params, *batch):
        leaves = tree.leaves(params)
        for k, i in enumerate(self.train):
            leaves[i] = self.weights[k]
        return self.objective(convert.rebuild(self.like, leaves), *batch)


class Shard:
    """This rank's place in the group, and the DDP (or FSDP) wrapper around the session's objective."""

    def __init__(self, device, fsdp=False):
        self.dist = distributed.join(device, fsdp)
        self.rank = self.dist.get_rank()
        self.world = self.dist.get_world_size()
        self.fsdp = fsdp

    def wrap(self, weights, objective, like, train):
        """(the objective to call, the weights the optimizer updates): DDP trains the given tensors;
        FSDP replaces them by sharded ones (DTensors), which the optimizer must hold instead."""
        if not weights:                 # nothing to train: the objective alone, no gradient to share
            return objective, weights
        if self.fsdp:
            from torch.distributed.fsdp import fully_shard

            _no_scalars(like, train, weights)
            module = Gathered(weights, objective, like, train)
            fully_shard(module)         # one group: all the weights gathered at once
            return module, list(module.weights)
        module = Objective(weights, objective)
        # no device_ids: the inputs (a parameter tree, the batch) are already on this rank's device
        return torch.nn.parallel.DistributedDataParallel(module), weights

    def rows(self, idx, plan):
        """(this rank's rows of the global batch `idx`, its weight, the global batch's kept count).
        Rows None: the batch keeps nothing anywhere and is skipped on every rank."""
        data = plan.data
        total = kept_count(data.mask, data.targets, idx, False)
        if total == 0:
            return None, 0.0, 0
        b = plan.batch_size
        mine = idx[self.rank * b:(self.rank + 1) * b]
        kept = kept_count(data.mask, data.targets, mine, False) if len(mine) else 0
        if kept == 0:                   # join the all-reduce with a zero gradient
            return self._stand_in(idx, plan), 0.0, total
        return mine, kept * self.world / total, total

    def _stand_in(self, idx, plan):
        """Rows for a step this rank has no share of (weight 0): another rank's share that keeps a
        loss position (a loss over none would be NaN, and NaN times 0 is NaN), never more than one
        share: a dataset is read one call per step (the whole global batch was an error there)."""
        b, data = plan.batch_size, plan.data
        for r in range(self.world):
            other = idx[r * b:(r + 1) * b]
            if len(other) and kept_count(data.mask, data.targets, other, False):
                return other
        return idx

    def epoch_means(self, contributions, totals, device):
        """The per-step global means: Σ over ranks of k_r · loss_r, over K (one all-reduce)."""
        values = torch.stack(contributions)
        self.dist.all_reduce(values)
        return list(torch.unbind(values / torch.tensor(totals, dtype=values.dtype, device=device)))

    def average(self, tensors):
        """Running statistics: the mean over the ranks (in place), so every rank ends with the same tree."""
        for t in tensors:
            if t.is_floating_point():
                self.dist.all_reduce(t)
                t.div_(self.world)


def _no_scalars(like, train, weights):
    """FSDP cuts each weight along its first axis: a weight with none (a single number) is refused."""
    names = [n for n, _ in tree.named_leaves(like)]
    scalars = [names[i] for i, w in zip(train, weights) if w.ndim == 0]
    if scalars:
        raise ApsiError(f'fit: distributed="fsdp" cannot shard the weight {scalars[0]!r}: it is a single '
                        "number, and FSDP cuts each weight along its first axis; give it the shape [1] "
                        "in the layer's init, or use distributed=true")


# what gloo and NCCL say when a peer is gone (it crashed, was stopped, or never answers)
_PEER_GONE = ("gloo", "nccl", "connection closed", "connection reset", "timed out", "timeout", "socket")


def lost_contact(error, rank, epoch):
    """A collective that failed because another rank stopped: an Apsi message that points at the rank
    that failed first (its own error is printed by that rank); any other error is returned as it is."""
    text = str(error)
    if not any(word in text.lower() for word in _PEER_GONE):
        return error
    return ApsiError(f"fit: rank {rank} lost contact with the other ranks during epoch {epoch} (another "
                     "rank stopped or failed: its error is printed above), so training stopped here too")

