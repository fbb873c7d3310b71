"""fit and predict on torch: the model's layers on the torch op set, torch autograd and torch.optim.

The same plan and the same batches as the NumPy loop (layers/training/batches.py: one seed gives the
same shuffling on both backends), with what makes torch fast: the data moves to the device once and
batches are gathered there; the loss stays on the device and is read once per epoch (one sync), which
is also when a NaN or infinite loss is found and named by epoch and step.
"""

import math
import time

import numpy as np
import torch

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record
from apsi_layers.backends.numpy.loop import replace_states
from apsi_layers.backends.torch.ops import NumpyStreamOps, TorchOps
from apsi_layers.layers.context import Ctx, Graph
from apsi_layers.layers.training.batches import epoch_batches, kept_count, plain_batches, seeds
from apsi_layers.layers.training.finite import NonFiniteError, check_trained, constant_loss
from apsi_layers.layers.training.progress import progress
from apsi_layers.nn import tree
from apsi_layers.nn.tensor import Tensor

from . import convert, devices, nn_dispatch, precision, view
from .compiled import Forward
from .losses import loss_value
from .optim import TorchOptimizer


class Setup:
    """Device, precision, op set and the data on the device: what fit and predict share."""

    def __init__(self, plan, fn):
        nn_dispatch.install()
        try:
            self.device = devices.select(torch, plan.device or "auto")
            self.precision = precision.resolve(torch, plan.precision or "fp32", self.device)
        except ApsiError as e:                  # the messages name the option; say whose option it is
            raise ApsiError(f"{fn}: {e.message}") from None
        # fp64 promises NumPy's numbers, random draws included; other precisions draw on the device
        ops = NumpyStreamOps if self.precision.name == "fp64" else TorchOps
        self.ops = ops(self.device, self.precision.dtype)
        self.graph = Graph(self.ops, *plan.graph) if plan.graph is not None else None
        # custom and lambda layers' torch versions: chosen once, for the step, val= and predict alike
        self.model = view.torch_view(plan.model)

    def tensor(self, a):
        """A NumPy array on the device: floats in the weights' dtype, ints and booleans as they are."""
        return convert.host_to_device(a, self.device, self.precision.dtype)

    def autocast(self):
        return precision.autocast(torch, self.precision, self.device)


def _x(plan, xs):
    return xs if plan.several_inputs else xs[0]


def _y(plan, ys):
    return ys if plan.several_outputs else ys[0]


def fit_loop(plan):
    t0 = time.perf_counter()
    s = Setup(plan, "fit")
    ops = s.ops
    names = [n for n, _ in tree.named_leaves(plan.params)] if tree.leaves(plan.params) else []
    leaves = [t for _, t in convert.leaves_to_torch(plan.params, s.device, s.precision.dtype)]
    train = [i for i, n in enumerate(names) if not convert.is_state(n) and leaves[i].is_floating_point()]
    for i in train:
        leaves[i].requires_grad_(True)
    weights = [leaves[i] for i in train]
    opt = TorchOptimizer(plan.opt, weights, plan.schedule) if weights else None
    scaler = precision.scaler(torch, s.precision, s.device)
    shuffle_seed, noise_seed = seeds(plan.seed)
    shuffle = np.random.default_rng(shuffle_seed)
    noise = ops.rng(noise_seed)
    data = plan.data
    xs = [s.tensor(a) for a in data.inputs]
    ys = [s.tensor(a) for a in data.targets]
    mask = None if data.mask is None else s.tensor(data.mask)
    model, loss = s.model, plan.loss
    state_idx = [i for i in range(len(leaves)) if i not in set(train)]
    trees = _TreeCache(plan.params)

    def objective(params, xb, yb, maskb, keep, lead):
        ctx = Ctx(ops, training=True, rng=noise, graph=s.graph, mask=maskb)
        with s.autocast():
            out = model.apply(params, _x(plan, xb), ctx)
            value = loss_value(ops, loss, out, _y(plan, yb), keep, lead)
        if not isinstance(loss, str) and not (isinstance(value, torch.Tensor) and value.requires_grad):
            raise constant_loss(loss)
        new_state = []
        if ctx.updates and state_idx:
            new_leaves = tree.leaves(replace_states(params, ctx.updates))
            new_state = [new_leaves[i] for i in state_idx]
        return value, new_state

    forward = Forward(torch, objective, compile=bool(plan.compile))
    graph = plan.graph
    steps_per_epoch = len(epoch_batches(data.n, plan.batch_size, np.random.default_rng(0), graph))
    show = progress(plan.verbose, plan.epochs, steps_per_epoch)
    history, val_history, step = [], [], 0
    # a graph trains on every node at once: the loss positions are the same each step, found once
    fixed = _loss_positions(mask, ys) if graph is not None else None
    show.start()
    try:
        with precision.matmul_mode(torch, s.precision):
            for epoch in range(1, plan.epochs + 1):
                batches = epoch_batches(data.n, plan.batch_size, shuffle, graph)
                order = torch.as_tensor(np.concatenate(batches)).to(s.device)
                losses, sizes, start = [], [], 0
                for idx in batches:
                    full = graph is not None            # a graph trains on every node at once
                    rows = None if full else order[start:start + len(idx)]
                    start += len(idx)
                    weight = kept_count(data.mask, data.targets, idx, full)      # on the host: no sync
                    if weight == 0:
                        show.step(None)
                        continue
                    xb = [x if full else x.index_select(0, rows) for x in xs]
                    yb = [y if full else y.index_select(0, rows) for y in ys]
                    maskb = None if mask is None else (mask if full else mask.index_select(0, rows))
                    keep, lead, yb = fixed if fixed is not None else _loss_positions(maskb, yb)
                    value = _step(plan, opt, scaler, forward, trees, leaves, weights, state_idx, step,
                                  (xb, yb, maskb, keep, lead))
                    losses.append(value)
                    sizes.append(weight)
                    step += 1
                    show.step(None)
                history.append(_epoch_loss(losses, sizes, epoch, step))
                val = _val_loss(plan, s, leaves) if plan.val is not None else None
                if val is not None:
                    val_history.append(val)
                show.epoch(epoch, history[-1], val)
    finally:
        show.close()
    trained = convert.to_nn(plan.params, leaves) if leaves else plan.params
    check_trained(tree.named_leaves(trained))
    return Record(params=trained, history=history, val_history=val_history,
                  device=devices.name(s.device), backend="torch", steps=step,
                  seconds=time.perf_counter() - t0)


class _TreeCache:
    """The parameter tree over the current leaves, rebuilt only when a leaf was replaced.

    The optimizer updates the weights in place, so most steps see the same tensors and can reuse the
    tree (rebuilding its records each step is the largest Python cost of a small model's step); batch
    norm's running statistics are new tensors after each step and make a new tree. The cached tree
    holds its leaves, so their ids cannot be reused by other tensors while it is kept. Under
    torch.compile the tree is rebuilt inside the traced function (the compiled graph has no Python)."""

    def __init__(self, like):
        self.like = like
        self.ids = None
        self.tree = None

    def __call__(self, current):
        if not current:
            return self.like
        ids = [id(t) for t in current]
        if ids != self.ids:
            self.tree, self.ids = convert.rebuild(self.like, current), ids
        return self.tree


def _step(plan, opt, scaler, forward, trees, leaves, weights, state_idx, step, batch):
    """One optimizer step; returns the batch loss as a device scalar (no sync)."""
    if opt is not None:
        opt.set_lr()
        opt.zero_grad()
    value, new_state = forward(trees(leaves), *batch)
    if opt is not None:
        (scaler.scale(value) if scaler is not None else value).backward()
        if plan.clip is not None:
            if scaler is not None:
                scaler.unscale_(opt.torch)
            torch.nn.utils.clip_grad_norm_(weights, plan.clip)
        opt.step(scaler)
    for i, t in zip(state_idx, new_state):
        leaves[i] = t.detach().to(leaves[i].dtype)
    return value.detach()


def _loss_positions(maskb, yb):
    """As layers' batches.loss_positions, on the device: where a mask covers the targets' leading axes,
    the loss is restricted to the positions it marks."""
    if maskb is None:
        return None, 1, yb
    lead = maskb.ndim
    if any(tuple(y.shape[:lead]) != tuple(maskb.shape) for y in yb):
        return None, 1, yb
    keep = torch.nonzero(maskb.reshape(-1)).reshape(-1)
    picked = [y.reshape((-1,) + tuple(y.shape[lead:])).index_select(0, keep) for y in yb]
    return keep, lead, picked


def _epoch_loss(losses, sizes, epoch, step):
    """The epoch's mean loss, read from the device once; a NaN or infinite step stops training."""
    # stacked in the loss's own dtype and made float64 on the host (MPS has no float64)
    values = convert.to_host(torch.stack([v.detach() for v in losses]))
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        what = "NaN" if math.isnan(values[k]) else "infinite"
        overall = step - len(values) + k + 1
        raise NonFiniteError(f"fit: the loss became {what} at epoch {epoch}, step {k + 1} (step {overall} "
                        "overall); training stopped and no parameters were returned. Lower the learning "
                        "rate (e.g. opt=adam(lr=1e-4)) or clip gradients with clip=1.0")
    return float(np.dot(values, sizes) / np.sum(sizes))


def _val_loss(plan, s, leaves):
    params = convert.rebuild(plan.params, leaves) if leaves else plan.params
    data = plan.val
    xs = [s.tensor(a) for a in data.inputs]
    ys = [s.tensor(a) for a in data.targets]
    mask = None if data.mask is None else s.tensor(data.mask)
    values, weights = [], []
    with torch.no_grad(), s.autocast():
        for idx in plain_batches(data.n, plan.batch_size, s.graph):
            sl = slice(int(idx[0]), int(idx[-1]) + 1)
            maskb = None if mask is None else mask[sl]
            keep, lead, yb = _loss_positions(maskb, [y[sl] for y in ys])
            # as on NumPy: the mean over the kept positions of the whole validation set
            weight = len(idx) if keep is None else int(np.count_nonzero(data.mask[sl]))
            if weight == 0:
                continue
            ctx = Ctx(s.ops, training=False, graph=s.graph, mask=maskb)
            out = s.model.apply(params, _x(plan, [x[sl] for x in xs]), ctx)
            values.append(loss_value(s.ops, plan.loss, out, _y(plan, yb), keep, lead))
            weights.append(weight)
    # one read from the device; weighted in float64 on the host
    return float(np.dot(convert.to_host(torch.stack(values)), weights)) / sum(weights)


def predict_loop(plan):
    s = Setup(plan, "predict")
    data = plan.data
    params = convert.to_torch(plan.params, s.device, s.precision.dtype) if tree.leaves(plan.params) \
        else plan.params
    xs = [s.tensor(a) for a in data.inputs]
    mask = None if data.mask is None else s.tensor(data.mask)
    outs = []
    with torch.no_grad(), s.autocast():
        for idx in plain_batches(data.n, plan.batch_size or 1024, s.graph):
            sl = slice(int(idx[0]), int(idx[-1]) + 1)
            ctx = Ctx(s.ops, training=False, graph=s.graph, mask=None if mask is None else mask[sl])
            y = s.model.apply(params, _x(plan, [x[sl] for x in xs]), ctx)
            outs.append(tree.leaves(s.model.present(y, s.ops)))
    columns = [torch.cat([o[i] for o in outs]) if len(outs) > 1 else outs[0][i] for i in range(len(outs[0]))]
    result = [Tensor(s.ops.to_numpy(c).astype(np.float64)) for c in columns]
    return result if plan.several_outputs or len(result) > 1 else result[0]
