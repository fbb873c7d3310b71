"""fit and predict on the NumPy backend: the model's layers on the NumPy op set, nn's autodiff and
nn's optimizers. One step: slice the batch, run forward and backward on a fresh tape (freed when the
step ends, so memory stays flat), clip, update the trainable leaves, put new running statistics in."""

import math
import time

import numpy as np

from apsi_lang.values import Record
from apsi_layers import nn
from apsi_layers.layers.base import RESERVED
from apsi_layers.layers.context import Ctx, Graph
from apsi_layers.layers.losses import loss_value
from apsi_layers.layers.training.batches import epoch_batches, loss_positions, plain_batches, rows, seeds
from apsi_layers.layers.training.finite import check_trained, constant_loss
from apsi_layers.layers.training.progress import progress
from apsi_layers.nn import tree
from apsi_layers.nn.nonfinite import NonFiniteError
from apsi_layers.nn.optim import checked_lr
from apsi_layers.nn.optim_inplace import InPlace
from apsi_layers.nn.tensor import Tensor


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


def replace_states(value, updates):
    """The tree with each state record that a layer replaced (ctx.set_state) swapped for the new one."""
    hit = updates.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    if isinstance(value, Record):
        return Record(**{k: replace_states(v, updates) for k, v in vars(value).items()})
    if isinstance(value, list | tuple):
        return type(value)(replace_states(v, updates) for v in value)
    return value


def _tensor(a):
    return Tensor(a)


def fit_numpy(plan):
    ops = opset()
    t0 = time.perf_counter()
    names, leaves, train = split_state(plan.params)
    shuffle_seed, noise_seed = seeds(plan.seed)
    shuffle = np.random.default_rng(shuffle_seed)
    noise = ops.rng(noise_seed)
    data = plan.data
    graph = Graph(ops, *plan.graph) if plan.graph is not None else None
    model, loss, opt = plan.model, plan.loss, plan.opt
    template = plan.params

    def objective(trainable, xb, yb, maskb, keep, lead):
        full = list(leaves)
        for j, i in enumerate(train):
            full[i] = trainable[j]
        params = tree.unflatten_like(template, full) if full else template
        ctx = Ctx(ops, training=True, rng=noise, graph=graph, mask=maskb)
        out = model.apply(params, xb if plan.several_inputs else xb[0], ctx)
        value = loss_value(ops, loss, out, yb if plan.several_outputs else yb[0], keep, lead)
        if not isinstance(loss, str) and not (type(value) is Tensor and value.tape is not None):
            raise constant_loss(loss)
        v = float(np.asarray(value.data if type(value) is Tensor else value))
        if not math.isfinite(v):
            raise _NonFinite(v)
        return value, (ctx, params)

    step_fn = nn.value_and_grad(objective, has_aux=True)
    # the optimizer updates the loop's own copy of the parameters in place (nn/optim_inplace.py)
    inplace = InPlace(opt) if InPlace.supports(opt, [leaves[i] for i in train]) else None
    steps_per_epoch = len(epoch_batches(data.n, plan.batch_size, np.random.default_rng(0), graph))
    show = progress(plan.verbose, plan.epochs, steps_per_epoch)
    history, val_history, step = [], [], 0
    # fit's schedule= first, then an lr given as a function: checked here, so its message is fit's
    schedule = plan.schedule if plan.schedule is not None else (opt.lr if callable(opt.lr) else None)
    show.start()
    try:
        for epoch in range(1, plan.epochs + 1):
            total, count = 0.0, 0
            for k, idx in enumerate(epoch_batches(data.n, plan.batch_size, shuffle, graph), 1):
                full = graph is not None
                xb = [_tensor(a) for a in rows(data.inputs, idx, full)]
                keep, lead, ys = loss_positions(data.mask, rows(data.targets, idx, full), idx, full)
                weight = len(idx) if keep is None else len(keep)
                if weight == 0:             # the mask keeps no sample of this batch: nothing to learn
                    show.step(None)
                    continue
                yb = [_tensor(a) for a in ys]
                maskb = None if data.mask is None else Tensor(data.mask if full else data.mask[idx])
                keep_t = None if keep is None else ops.indices(keep)
                trainable = [leaves[i] for i in train]
                try:
                    (value, (ctx, used)), grads = step_fn(trainable, xb, yb, maskb, keep_t, lead)
                    if plan.clip is not None:
                        grads = tree.clip_by_global_norm(grads, plan.clip)
                    lr = None if schedule is None else _lr(schedule, step)
                    if inplace is not None and trainable:
                        inplace.step(trainable, grads, lr=lr)
                        new = trainable
                    else:
                        new = opt.step(trainable, grads, lr=lr) if trainable else []
                except _NonFinite as e:
                    raise NonFiniteError(_nan_message(e.value, epoch, k, step + 1)) from None
                except NonFiniteError as e:
                    raise NonFiniteError(_nan_message(float("nan"), epoch, k, step + 1, e.message)) from None
                for j, i in enumerate(train):
                    leaves[i] = new[j]
                if ctx.updates:
                    _take_states(names, leaves, train, replace_states(used, ctx.updates))
                step += 1
                v = float(value.data)
                total += v * weight
                count += weight
                show.step(v)
            history.append(total / count)
            val = _val_loss(plan, ops, leaves, graph) if plan.val is not None else None
            if val is not None:
                val_history.append(val)
            show.epoch(epoch, history[-1], val)
    finally:
        show.close()
    check_trained((names[i], v.data) for i, v in enumerate(leaves))
    trained = tree.unflatten_like(template, [Tensor(v.data) for v in leaves]) if leaves else template
    return Record(params=trained, history=history, val_history=val_history, device="numpy",
                  backend="numpy", steps=step, seconds=time.perf_counter() - t0)


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
                           None if keep is None else ops.indices(keep), lead)
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
