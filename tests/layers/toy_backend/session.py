"""fit's session and predict on the toy backend: float32 leaves, `nn`'s autodiff, nn's optimizer.

The session protocol is layers/training/driver.py's; the shared loop decides batches, histories,
checkpoints and stops. Plain data only (no graph, no mask), so each step is short."""

import copy

import numpy as np

from apsi_layers import nn
from apsi_layers.layers.base import RESERVED
from apsi_layers.layers.context import Ctx
from apsi_layers.layers.losses import loss_value
from apsi_layers.layers.training.batches import plain_batches, seeds
from apsi_layers.layers.training.finite import NonFiniteError, check_trained
from apsi_layers.layers.training.state import NnState
from apsi_layers.nn.autograd import tree
from apsi_layers.nn.autograd.tensor import Tensor

F = np.float32


class Toy32Session(NnState):
    backend = device = "toy32"

    def __init__(self, plan, ops):
        self.plan, self.ops = plan, ops
        named = tree.named_leaves(plan.params) if tree.leaves(plan.params) else []
        self.names = [n for n, _ in named]
        self.leaves_ = [Tensor(np.asarray(v.data, dtype=F)) for _, v in named]
        self.train = [i for i, n in enumerate(self.names) if RESERVED not in n.split(".")]
        self.noise = ops.rng(seeds(plan.seed)[1])
        self.opt = plan.opt
        self.step_fn = nn.value_and_grad(self._objective)
        self.last_lr = None

    @property
    def steps(self):
        return self.opt.steps

    def _params(self, leaves):
        return tree.unflatten_like(self.plan.params, leaves) if leaves else self.plan.params

    def _xs(self, data, idx):
        xs = [self.ops.constant(a[idx]) if a.dtype.kind == "f" else self.ops.indices(a[idx])
              for a in data.inputs]
        return xs if self.plan.several_inputs else xs[0]

    def _ys(self, data, idx):
        ys = [self.ops.constant(a[idx]) if a.dtype.kind == "f" else self.ops.indices(a[idx])
              for a in data.targets]
        return ys if self.plan.several_outputs else ys[0]

    def _objective(self, trainable, xb, yb):
        full = list(self.leaves_)
        for j, i in enumerate(self.train):
            full[i] = trainable[j]
        ctx = Ctx(self.ops, training=True, rng=self.noise)
        out = self.plan.model.apply(self._params(full), xb, ctx)
        return loss_value(self.ops, self.plan.loss, out, yb)

    def train_epoch(self, epoch, batches, on_step):
        total = 0.0
        for k, idx in enumerate(batches, 1):
            trainable = [self.leaves_[i] for i in self.train]
            data = self.plan.data
            value, grads = self.step_fn(trainable, self._xs(data, idx), self._ys(data, idx))
            v = float(value.data)
            if not np.isfinite(v):
                raise NonFiniteError(f"fit: the loss became NaN at epoch {epoch}, step {k}")
            if self.plan.schedule is not None:
                self.last_lr = self.plan.schedule(self.steps)
            new = self.opt.step(trainable, grads, lr=self.last_lr)
            for j, i in enumerate(self.train):
                self.leaves_[i] = Tensor(np.asarray(new[j].data, dtype=F))
            total += v * len(idx)
            on_step(v)
        return total / self.plan.data.n

    def val_loss(self):
        val, total = self.plan.val, 0.0
        for idx in plain_batches(val.n, self.plan.batch_size, None):
            out = self.plan.model.apply(self._params(self.leaves_), self._xs(val, idx),
                                        Ctx(self.ops, training=False))
            total += float(loss_value(self.ops, self.plan.loss, out, self._ys(val, idx)).data) * len(idx)
        return total / val.n

    def outputs(self, data):
        outs = [self.plan.model.apply(self._params(self.leaves_), self._xs(data, idx), Ctx(self.ops, False))
                for idx in plain_batches(data.n, self.plan.batch_size, None)]
        return [np.concatenate([np.asarray(o.data) for o in outs])]

    def leaves(self):
        return [np.array(v.data) for v in self.leaves_]

    def set_leaves(self, arrays):
        self.leaves_ = [Tensor(np.asarray(a, dtype=F)) for a in arrays]

    def set_lr(self, lr):
        self.last_lr = float(lr)

    def current_lr(self):
        return float(self.last_lr if self.last_lr is not None else self.opt.lr)

    def optimizer(self):
        return copy.deepcopy(self.opt)

    def trained(self, check=True):
        if check:
            check_trained((self.names[i], v.data) for i, v in enumerate(self.leaves_))
        return tree.unflatten_like(self.plan.params, [Tensor(np.array(v.data)) for v in self.leaves_]) \
            if self.leaves_ else self.plan.params


def predict(plan, ops):
    """The outputs in float32 (as nn tensors), batch by batch in evaluation mode."""
    params = tree.unflatten_like(plan.params, [Tensor(np.asarray(v.data, dtype=F)) for v in
                                               tree.leaves(plan.params)]) if tree.leaves(plan.params) \
        else plan.params
    outs = []
    for idx in plain_batches(plan.data.n, plan.batch_size or 1024, None):
        xs = [ops.constant(a[idx]) if a.dtype.kind == "f" else ops.indices(a[idx]) for a in plan.data.inputs]
        y = plan.model.apply(params, xs if plan.several_inputs else xs[0], Ctx(ops, training=False))
        outs.append(plan.model.present(y, ops))
    return Tensor(np.concatenate([o.data for o in outs]))
