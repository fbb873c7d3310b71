"""fit's session and predict on the NumPy backend: the model's layers on the NumPy op set, nn's autodiff and
nn's optimizers. One step: slice the batch, run forward and backward on a fresh tape (freed when the
step ends, so memory stays flat), clip, update the trainable leaves, put new running statistics in."""

import copy
import math

import numpy as np

from apsi_layers import nn
from apsi_layers.layers.base import RESERVED
from apsi_layers.layers.context import Ctx, Graph
from apsi_layers.layers.losses import loss_value
from apsi_layers.layers.training.batches import loss_positions, plain_batches, rows, seeds
from apsi_layers.layers.training.finite import check_trained, constant_loss
from apsi_layers.layers.training.state import NnState, replace_states
from apsi_layers.layers.training.weights import position_weights, weight_keep
from apsi_layers.nn.autograd import tree
from apsi_layers.nn.autograd.nonfinite import NonFiniteError
from apsi_layers.nn.autograd.tensor import Tensor
from apsi_layers.nn.train.optim import checked_lr
from apsi_layers.nn.train.optim_inplace import InPlace


class _NonFinite(Exception):
    def __init__(self, value):
        self.value = value


def opset():
    from apsi_layers.backends.numpy.ops import OPSET

    return OPSET


def split_state(params):
    """(names, leaves, indices of trainable leaves): leaves under a field named `state` are running
    statistics, updated by the layers, never by the optimizer."""
    named = tree.named_leaves(params) if tree.leaves(params) else []
    names = [n for n, _ in named]
    leaves = [Tensor(np.array(v.data)) for _, v in named]
    train = [i for i, n in enumerate(names) if RESERVED not in n.split(".")]
    return names, leaves, train


def _tensor(a):
    return Tensor(a)


class NumpySession(NnState):
    """fit's state on the NumPy backend, for the shared loop (layers/training/driver.py)."""

    backend = "numpy"
    device = "cpu"          # where it computes, as torch's sessions and serve_model's /info say it

    def __init__(self, plan):
        self.plan = plan
        self.ops = ops = opset()
        self.names, self.leaves_, self.train = split_state(plan.params)
        self.noise = ops.rng(seeds(plan.seed)[1])
        self.graph = Graph(ops, *plan.graph) if plan.graph is not None else None
        self.opt = plan.opt
        self.step_fn = nn.value_and_grad(self._objective, has_aux=True)
        # the optimizer updates the loop's own copy of the parameters in place (nn/train/optim_inplace.py)
        trainable = [self.leaves_[i] for i in self.train]
        self.inplace = InPlace(self.opt) if InPlace.supports(self.opt, trainable) else None
        # fit's schedule= first, then an lr given as a function: checked here, so its message is fit's
        self.schedule = plan.schedule if plan.schedule is not None else (
            self.opt.lr if callable(self.opt.lr) else None)

    @property
    def steps(self):
        """Optimizer steps so far (opt=r.opt continues the count, and the schedule with it)."""
        return self.opt.steps

    def _objective(self, trainable, xb, yb, maskb, keep, lead, wb):
        plan, ops = self.plan, self.ops
        full = list(self.leaves_)
        for j, i in enumerate(self.train):
            full[i] = trainable[j]
        params = tree.unflatten_like(plan.params, full) if full else plan.params
        ctx = Ctx(ops, training=True, rng=self.noise, graph=self.graph, mask=maskb)
        out = plan.model.apply(params, xb if plan.several_inputs else xb[0], ctx)
        value = loss_value(ops, plan.loss, out, yb if plan.several_outputs else yb[0], keep, lead, wb)
        if not isinstance(plan.loss, str) and not (type(value) is Tensor and value.tape is not None):
            raise constant_loss(plan.loss)
        v = float(np.asarray(value.data if type(value) is Tensor else value))
        if not math.isfinite(v):
            raise _NonFinite(v)
        return value, (ctx, params)

    sums = None           # the epoch's (Σ loss · weight, Σ weight) so far: a mid-epoch checkpoint's

    def partial_state(self):
        return list(self.sums)

    def set_partial(self, state):
        self.sums = [float(state[0]), int(state[1])]

    def train_epoch(self, epoch, batches, on_step):
        data = self.plan.data
        sums = self.sums = self.sums or [0.0, 0]       # (a resumed epoch starts from its sums)
        full = self.graph is not None                 # a graph trains on every node at once
        for k, idx in enumerate(batches, 1):
            keep, lead, ys = loss_positions(data.mask, rows(data.targets, idx, full), idx, full)
            weight = len(idx) if keep is None else len(keep)
            if weight == 0:             # the mask keeps no sample of this batch: nothing to learn
                on_step(None)
                continue
            v = self._step(epoch, k, idx, full, keep, lead, ys)
            sums[0] += v * weight
            sums[1] += weight
            on_step(v)
        self.sums = None
        return sums[0] / sums[1]

    def _step(self, epoch, k, idx, full, keep, lead, ys):
        plan, data, ops = self.plan, self.plan.data, self.ops
        xb = [Tensor(a) for a in rows(data.inputs, idx, full)]
        yb = [Tensor(a) for a in ys]
        maskb = None if data.mask is None else Tensor(data.mask if full else data.mask[idx])
        keep_t = None if keep is None else ops.indices(keep)
        wb = _batch_weights(data.weights, data.mask, idx, full, weight_keep(plan.loss, keep), lead)
        trainable = [self.leaves_[i] for i in self.train]
        try:
            (value, (ctx, used)), grads = self.step_fn(trainable, xb, yb, maskb, keep_t, lead, wb)
            if plan.clip is not None:
                grads = tree.clip_by_global_norm(grads, plan.clip)
            lr = self.lr_override if self.lr_override is not None else (
                None if self.schedule is None else _lr(self.schedule, self.steps))
            self.last_lr = lr
            if self.inplace is not None and trainable:
                self.inplace.step(trainable, grads, lr=lr)
                new = trainable
            else:
                new = self.opt.step(trainable, grads, lr=lr) if trainable else []
        except _NonFinite as e:
            raise NonFiniteError(_nan_message(e.value, epoch, k, self.steps + 1)) from None
        except NonFiniteError as e:
            raise NonFiniteError(_nan_message(float("nan"), epoch, k, self.steps + 1, e.message)) from None
        for j, i in enumerate(self.train):
            self.leaves_[i] = new[j]
        if ctx.updates:
            _take_states(self.names, self.leaves_, self.train, replace_states(used, ctx.updates))
        if not trainable:
            self.opt.steps += 1                 # (no optimizer step ran: count the step anyway)
        return float(value.data)

    def val_loss(self):
        return _val_loss(self.plan, self.ops, self.leaves_, self.graph)

    def outputs(self, data):
        """The model's raw outputs (evaluation mode) for `data`, one array per output."""
        params = tree.unflatten_like(self.plan.params, self.leaves_) if self.leaves_ else self.plan.params
        outs = []
        for idx in plain_batches(data.n, self.plan.batch_size, self.graph):
            full = len(idx) == data.n
            xb = [Tensor(a) for a in rows(data.inputs, idx, full)]
            maskb = None if data.mask is None else Tensor(data.mask if full else data.mask[idx])
            y = self.plan.model.apply(params, xb if self.plan.several_inputs else xb[0],
                                      Ctx(self.ops, training=False, graph=self.graph, mask=maskb))
            outs.append([t.data for t in (y if isinstance(y, list | tuple) else [y])])
        return [np.concatenate(parts) for parts in zip(*outs, strict=True)]

    def leaves(self):
        return [np.array(v.data, dtype=np.float64 if v.data.dtype.kind == "f" else v.data.dtype)
                for v in self.leaves_]

    def set_leaves(self, arrays):
        self.leaves_ = [Tensor(np.array(a)) for a in arrays]

    last_lr = lr_override = None

    def set_lr(self, lr):
        """reduce_lr's rate for the steps from now on (there is no schedule then)."""
        self.lr_override = float(lr)

    def current_lr(self):
        """The rate of the last step (a schedule is not called again: it may print or count)."""
        if self.last_lr is not None:
            return float(self.last_lr)
        return float(self.opt.lr) if not callable(self.opt.lr) else float("nan")

    def optimizer(self):
        return copy.deepcopy(self.opt)

    def trained(self, check=True):
        if check:
            check_trained((self.names[i], v.data) for i, v in enumerate(self.leaves_))
        if not self.leaves_:
            return self.plan.params
        return tree.unflatten_like(self.plan.params, [Tensor(np.array(v.data)) for v in self.leaves_])


def _batch_weights(weights, mask, idx, full, keep, lead):
    """The batch's loss-position weights as a constant tensor, or None when the fit is unweighted."""
    if weights is None:
        return None
    return Tensor(position_weights(weights if full else weights[idx],
                                   None if mask is None else (mask if full else mask[idx]), keep, lead))


def _lr(schedule, step):
    return checked_lr(schedule(step), step, "fit")


def _take_states(names, leaves, train, new_tree):
    trainable = set(train)
    for i, (_, v) in enumerate(tree.named_leaves(new_tree)):
        if i not in trainable:
            leaves[i] = Tensor(np.array(v.data))


def _nan_message(value, epoch, k, step, detail=None):
    what = "NaN" if math.isnan(value) else "infinite"
    cause = f" ({detail})" if detail else ""
    return (f"fit: the loss became {what} at epoch {epoch}, step {k} (step {step} overall){cause}; training "
            f"stopped and no parameters were returned. Lower the learning rate (e.g. opt=adam(lr=1e-4)) "
            f"or clip gradients with clip=1.0")


def _val_loss(plan, ops, leaves, graph):
    params = tree.unflatten_like(plan.params, leaves) if leaves else plan.params
    data = plan.val
    total, count = 0.0, 0
    for idx in plain_batches(data.n, plan.batch_size, graph):
        full = len(idx) == data.n
        xb = [_tensor(a) for a in rows(data.inputs, idx, full)]
        # a validation mask works as in training: for the layers (padding) and, where it covers the
        # targets, for the loss; the mean is over the kept positions of the whole validation set
        keep, lead, ys = loss_positions(data.mask, rows(data.targets, idx, full), idx, full)
        weight = len(idx) if keep is None else len(keep)
        if weight == 0:
            continue
        maskb = None if data.mask is None else Tensor(data.mask if full else data.mask[idx])
        out = plan.model.apply(params, xb if plan.several_inputs else xb[0],
                               Ctx(ops, training=False, graph=graph, mask=maskb))
        yb = [_tensor(a) for a in ys]
        value = loss_value(ops, plan.loss, out, yb if plan.several_outputs else yb[0],
                           None if keep is None else ops.indices(keep), lead,
                           _batch_weights(data.weights, data.mask, idx, full, weight_keep(plan.loss, keep),
                                          lead))
        total += float(np.asarray(value.data if type(value) is Tensor else value)) * weight
        count += weight
    return total / count


def predict_numpy(plan):
    ops = opset()
    data = plan.data
    graph = Graph(ops, *plan.graph) if plan.graph is not None else None
    outs = []
    for idx in plain_batches(data.n, plan.batch_size or 1024, graph):
        full = len(idx) == data.n
        xb = [_tensor(a) for a in rows(data.inputs, idx, full)]
        maskb = None if data.mask is None else Tensor(data.mask if full else data.mask[idx])
        ctx = Ctx(ops, training=False, graph=graph, mask=maskb)
        y = plan.model.apply(plan.params, xb if plan.several_inputs else xb[0], ctx)
        outs.append(plan.model.present(y, ops))
    if len(outs) == 1:
        return outs[0]
    if isinstance(outs[0], list | tuple):
        return [Tensor(np.concatenate([o[i].data for o in outs])) for i in range(len(outs[0]))]
    return Tensor(np.concatenate([o.data for o in outs]))
