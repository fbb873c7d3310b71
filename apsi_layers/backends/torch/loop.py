"""fit and predict on torch: the model's layers on the torch op set, torch autograd and torch.optim.

The same plan and the same batches as the NumPy loop (layers/training/batches.py: one seed gives the
same shuffling on both backends), with what makes torch fast: the data moves to the device once and
batches are gathered there; the loss stays on the device and is read once per epoch (one sync), which
is also when a NaN or infinite loss is found and named by epoch and step.
"""

import contextlib
import copy
import math

import numpy as np
import torch

from apsi_lang.errors import ApsiError
from apsi_layers.backends.torch.ops import NumpyStreamOps, TorchOps
from apsi_layers.layers.context import Ctx, Graph
from apsi_layers.layers.training.batches import kept_count, plain_batches, seeds
from apsi_layers.layers.training.finite import NonFiniteError, check_trained, constant_loss
from apsi_layers.layers.training.state import replace_states, restore_opt
from apsi_layers.layers.training.weights import weight_keep
from apsi_layers.nn.autograd import tree
from apsi_layers.nn.autograd.tensor import Tensor

from . import convert, devices, nn_dispatch, precision, view
from .compiled import Forward
from .feed import on_device
from .losses import loss_value
from .optim import TorchOptimizer


class Setup:
    """Device, precision, op set and the data on the device: what fit and predict share."""

    def __init__(self, plan, fn, device=None):
        nn_dispatch.install()
        try:
            self.device = devices.select(torch, device or plan.device or "auto")
            self.precision = precision.resolve(torch, plan.precision or "fp32", self.device)
        except ApsiError as e:                  # the messages name the option; say whose option it is
            raise ApsiError(f"{fn}: {e.message}") from None
        # fp64 promises NumPy's numbers, random draws included; other precisions draw on the device
        ops = NumpyStreamOps if self.precision.name == "fp64" else TorchOps
        self.ops = ops(self.device, self.precision.dtype)
        self.graph = Graph(self.ops, *plan.graph) if plan.graph is not None else None
        # custom and lambda layers' torch versions: chosen once, for the step, val= and predict alike
        self.model = view.torch_view(plan.model)
        self._no_autocast = contextlib.nullcontext() if self.precision.autocast is None else None

    def tensor(self, a):
        """A NumPy array on the device: floats in the weights' dtype, ints and booleans as they are."""
        return convert.host_to_device(a, self.device, self.precision.dtype)

    def autocast(self):
        # without autocast one shared no-op context (reusable): a step need not build one
        return self._no_autocast or precision.autocast(torch, self.precision, self.device)


def _x(plan, xs):
    return xs if plan.several_inputs else xs[0]


def _y(plan, ys):
    return ys if plan.several_outputs else ys[0]


class TorchSession:
    """fit's state on the torch backend, for the shared loop (layers/training/driver.py): the data on
    the device once, batches gathered there, the loss read once per epoch (one sync)."""

    backend = "torch"

    world, rank, writer, shard = 1, 0, True, None

    def __init__(self, plan):
        self.plan = plan
        # distributed: this rank's own device (the plan is frozen: the choice is the session's)
        self.s = s = Setup(plan, "fit", _rank_device(plan.device) if plan.distributed else None)
        self.device = devices.name(s.device)
        if plan.distributed:
            from .sharded import Shard

            self.shard = Shard(s.device, fsdp=plan.distributed == "fsdp")
            # only rank 0 (the writer) shows progress and writes checkpoints (driver.py)
            self.world, self.rank, self.writer = self.shard.world, self.shard.rank, self.shard.rank == 0
        self.names = [n for n, _ in tree.named_leaves(plan.params)] if tree.leaves(plan.params) else []
        self.leaves_ = [t for _, t in convert.leaves_to_torch(plan.params, s.device, s.precision.dtype)]
        self.train = [i for i, n in enumerate(self.names)
                      if not convert.is_state(n) and self.leaves_[i].is_floating_point()]
        for i in self.train:
            if self.shard is not None:         # DDP hooks parameters: the same tensors the tree holds
                self.leaves_[i] = torch.nn.Parameter(self.leaves_[i].detach())
            self.leaves_[i].requires_grad_(True)
        self.weights = [self.leaves_[i] for i in self.train]
        self.state_idx = [i for i in range(len(self.leaves_)) if i not in set(self.train)]
        self.trees = _TreeCache(plan.params)
        # eager: the objective itself (Forward's wrapper is for torch.compile and its fallback)
        self.forward = Forward(torch, self._objective, compile=True) if plan.compile else self._objective
        if self.shard is not None:             # FSDP replaces the weights by this rank's slices
            self.forward, self.weights = self.shard.wrap(self.weights, self.forward, plan.params, self.train)
            for i, w in zip(self.train, self.weights):
                self.leaves_[i] = w
        self.opt = TorchOptimizer(plan.opt, self.weights, plan.schedule) if self.weights else None
        if self.opt is not None and plan.opt._state is not None:     # opt=r.opt: continue its state
            self.opt.load_nn_state(plan.opt.steps, plan.opt._state)
        self.scaler = precision.scaler(torch, s.precision, s.device)
        # each rank draws its own dropout masks (rank 0's stream is the single-process one)
        self.noise = s.ops.rng(seeds(plan.seed)[1] + self.rank)
        data = plan.data
        # small in-memory data goes to the device once; files, datasets and large arrays per batch
        self.xs = [on_device(s, a) for a in data.inputs]
        self.ys = [on_device(s, a) for a in data.targets]
        self.mask = None if data.mask is None else s.tensor(data.mask)
        self.w = None if data.weights is None else s.tensor(data.weights)
        # a graph trains on every node at once: the loss positions are the same each step, found once
        self.fixed = _loss_positions(self.mask, self.ys) if s.graph is not None else None

    @property
    def steps(self):
        return self.opt.steps if self.opt is not None else self._steps

    _steps = 0

    def _objective(self, params, xb, yb, maskb, keep, lead, wb):
        plan, s = self.plan, self.s
        ctx = Ctx(s.ops, training=True, rng=self.noise, graph=s.graph, mask=maskb)
        with s.autocast():
            out = s.model.apply(params, _x(plan, xb), ctx)
            value = loss_value(s.ops, plan.loss, out, _y(plan, yb), keep, lead, wb)
        if not isinstance(plan.loss, str) and not (isinstance(value, torch.Tensor) and value.requires_grad):
            raise constant_loss(plan.loss)
        new_state = []
        if ctx.updates and self.state_idx:
            new_leaves = tree.leaves(replace_states(params, ctx.updates))
            new_state = [new_leaves[i] for i in self.state_idx]
        return value, new_state

    def train_epoch(self, epoch, batches, on_step):
        if self.shard is not None:
            return self._train_shard(epoch, batches, on_step)
        plan, s, data = self.plan, self.s, self.plan.data
        full = s.graph is not None            # a graph trains on every node at once
        losses, sizes = self._sums()
        # the epoch's row indices go to the device at once, split into the batches' views there
        # (one call, not a slice per step)
        order = torch.from_numpy(np.concatenate(batches)).to(device=s.device)
        rows_of = order.split([len(idx) for idx in batches])
        with precision.matmul_mode(torch, s.precision):
            for idx, rows in zip(batches, rows_of, strict=True):
                weight = kept_count(data.mask, data.targets, idx, full)      # on the host: no sync
                if weight == 0:
                    on_step(None)
                    continue
                xb = [x if full else x.index_select(0, rows) for x in self.xs]
                yb = [y if full else y.index_select(0, rows) for y in self.ys]
                maskb = self.mask if self.mask is None or full else self.mask.index_select(0, rows)
                keep, lead, yb = self.fixed if self.fixed is not None else _loss_positions(maskb, yb)
                wb = _weights_at(self.w if self.w is None or full else self.w.index_select(0, rows),
                                 maskb, weight_keep(plan.loss, keep), lead)
                losses.append(_step(plan, self.opt, self.scaler, self.forward, self.trees, self.leaves_,
                                    self.weights, self.state_idx, self.steps,
                                    (xb, yb, maskb, keep, lead, wb)))
                sizes.append(weight)
                if self.opt is None:
                    self._steps += 1
                on_step(None)
        self.sums = None
        return _epoch_loss(losses, sizes, epoch, self.steps)

    sums = None       # the epoch's step losses (device scalars) and weights so far: see partial_state

    def _sums(self):
        """The lists an epoch appends to (a resumed epoch's start with the steps done before)."""
        self.sums = self.sums or ([], [])
        return self.sums

    def partial_state(self):
        """The epoch so far, for a mid-epoch checkpoint: the step losses read from the device (exact:
        a float32 or bfloat16 value is a float64 exactly) with their dtype, and their weights."""
        losses, sizes = self.sums or ([], [])
        dtype = str(losses[0].dtype).replace("torch.", "") if losses else "float32"
        return {"losses": [float(v) for v in losses], "dtype": dtype, "sizes": list(sizes)}

    def set_partial(self, state):
        dtype = getattr(torch, state["dtype"])
        self.sums = ([torch.tensor(v, dtype=dtype, device=self.s.device) for v in state["losses"]],
                     [int(w) if float(w).is_integer() else float(w) for w in state["sizes"]])

    def _train_shard(self, epoch, batches, on_step):
        """One epoch of this rank's share of each global batch (backends/torch/sharded.py)."""
        from .sharded import lost_contact

        try:
            return self._shard_epoch(epoch, batches, on_step)
        except RuntimeError as e:
            raise lost_contact(e, self.rank, epoch) from None

    def _shard_epoch(self, epoch, batches, on_step):
        plan, s, shard = self.plan, self.s, self.shard
        contributions, totals = self._sums()
        with precision.matmul_mode(torch, s.precision):
            for idx in batches:
                mine, weight, total = shard.rows(idx, plan)
                if mine is None:
                    on_step(None)
                    continue
                rows = torch.from_numpy(mine).to(device=s.device)
                xb = [x.index_select(0, rows) for x in self.xs]
                yb = [y.index_select(0, rows) for y in self.ys]
                maskb = None if self.mask is None else self.mask.index_select(0, rows)
                keep, lead, yb = _loss_positions(maskb, yb)
                wb = _weights_at(None if self.w is None else self.w.index_select(0, rows), maskb,
                                 weight_keep(plan.loss, keep), lead)
                value = _step(plan, self.opt, self.scaler, self.forward, self.trees, self.leaves_,
                              self.weights, self.state_idx, self.steps, (xb, yb, maskb, keep, lead, wb),
                              scale=weight)
                # Σ over ranks of kept · loss: weight · total / world is this rank's kept count
                dtype = torch.float64 if value.dtype == torch.float64 else torch.float32
                contributions.append(value.to(dtype) * (weight * total / self.world))
                totals.append(total)
                if self.opt is None:
                    self._steps += 1
                on_step(None)
        self.sums = None
        if self.state_idx:
            shard.average([self.leaves_[i] for i in self.state_idx])
        return _epoch_loss(shard.epoch_means(contributions, totals, s.device), totals, epoch, self.steps)

    def whole(self):
        """The leaves as whole tensors (FSDP's slices gathered: every rank calls this at once)."""
        return [convert.whole(t) for t in self.leaves_]

    def val_loss(self):
        return _val_loss(self.plan, self.s, self.whole())

    def outputs(self, data):
        """The model's raw outputs (evaluation mode) for `data`, one NumPy array per output."""
        plan, s = self.plan, self.s
        params = convert.rebuild(plan.params, self.whole()) if self.leaves_ else plan.params
        xs = [on_device(s, a) for a in data.inputs]
        mask = None if data.mask is None else s.tensor(data.mask)
        outs = []
        with torch.no_grad(), s.autocast():
            for idx in plain_batches(data.n, plan.batch_size, s.graph):
                sl = slice(int(idx[0]), int(idx[-1]) + 1)
                ctx = Ctx(s.ops, training=False, graph=s.graph, mask=None if mask is None else mask[sl])
                y = s.model.apply(params, _x(plan, [x[sl] for x in xs]), ctx)
                outs.append(list(y) if isinstance(y, list | tuple) else [y])
        return [convert.to_host(torch.cat(parts)) for parts in zip(*outs, strict=True)]

    def leaves(self):
        return [convert.to_host(t) for t in self.whole()]

    def set_leaves(self, arrays):
        s = self.s
        with torch.no_grad():
            for i, a in enumerate(arrays):
                t = convert.host_to_device(a, s.device, s.precision.dtype)
                if i in self.train:             # the optimizer holds these tensors
                    self.leaves_[i].copy_(convert.sliced_like(self.leaves_[i], t))
                else:
                    self.leaves_[i] = t

    def opt_state(self):
        if self.opt is None:
            return self.steps, None
        return self.opt.steps, self.opt.nn_state()

    def set_opt_state(self, steps, states):
        if self.opt is not None:
            self.opt.load_nn_state(steps, states)
        else:
            self._steps = steps

    def noise_state(self):
        if isinstance(self.noise, np.random.Generator):          # fp64: NumPy's stream
            return self.noise.bit_generator.state, None
        return None, self.noise.get_state().numpy().copy()

    def set_noise_state(self, meta, array):
        if isinstance(self.noise, np.random.Generator):
            self.noise.bit_generator.state = meta
        else:
            self.noise.set_state(torch.from_numpy(np.array(array, dtype=np.uint8)))

    def current_lr(self):
        """The rate of the last step (a schedule is not called again: it may print or count)."""
        return float(self.opt.torch.param_groups[0]["lr"]) if self.opt is not None else 0.0

    def set_lr(self, lr):
        """reduce_lr's rate for the steps from now on (there is no schedule to overwrite it)."""
        if self.opt is not None:
            for group in self.opt.torch.param_groups:
                group["lr"] = float(lr)

    def optimizer(self):
        out = copy.deepcopy(self.plan.opt)
        steps, states = self.opt_state()
        restore_opt(out, steps, states, [self.names[i] for i in self.train],
                    [tuple(self.leaves_[i].shape) for i in self.train])
        return out

    def trained(self, check=True):
        out = convert.to_nn(self.plan.params, self.whole()) if self.leaves_ else self.plan.params
        if check:
            check_trained(tree.named_leaves(out))
        return out


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


def _step(plan, opt, scaler, forward, trees, leaves, weights, state_idx, step, batch, scale=None):
    """One optimizer step; returns the batch loss as a device scalar (no sync). `scale` weighs the
    loss that is differentiated (a rank's share of a distributed batch), not the loss returned."""
    if opt is not None:
        opt.set_lr()
        opt.zero_grad()
    value, new_state = forward(trees(leaves), *batch)
    if opt is not None:
        objective = value if scale is None else value * scale
        (scaler.scale(objective) if scaler is not None else objective).backward()
        if plan.clip is not None:
            if scaler is not None:
                scaler.unscale_(opt.torch)
            torch.nn.utils.clip_grad_norm_(weights, plan.clip)
        opt.step(scaler)
    for i, t in zip(state_idx, new_state):
        leaves[i] = t.detach().to(leaves[i].dtype)
    return value.detach()


def _rank_device(device):
    """Distributed: each rank on its own GPU, cuda:LOCAL_RANK, where device= leaves the choice open."""
    from apsi_layers import distributed

    if device in (None, "auto", "cuda") and torch.cuda.is_available():
        return f"cuda:{distributed.local_rank() % torch.cuda.device_count()}"
    if device in (None, "auto"):
        return "cpu"            # gloo on the CPU (MPS and XPU have no DDP backend here)
    return device


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


def _weights_at(wb, maskb, keep, lead):
    """The batch's sample weights at its loss positions (as weights.position_weights, on the device)."""
    if wb is None or keep is None:
        return wb
    spread = wb.reshape(tuple(wb.shape) + (1,) * (lead - 1)).expand(tuple(maskb.shape))
    return spread.reshape(-1).index_select(0, keep)


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
    xs = [on_device(s, a) for a in data.inputs]
    ys = [on_device(s, a) for a in data.targets]
    mask = None if data.mask is None else s.tensor(data.mask)
    w = None if data.weights is None else s.tensor(data.weights)
    values, weights = [], []
    with torch.no_grad(), s.autocast():
        for idx in plain_batches(data.n, plan.batch_size, s.graph):
            sl = slice(int(idx[0]), int(idx[-1]) + 1)
            maskb = None if mask is None else mask[sl]
            keep, lead, yb = _loss_positions(maskb, [y[sl] for y in ys])
            wb = _weights_at(None if w is None else w[sl], maskb, weight_keep(plan.loss, keep), lead)
            # as on NumPy: the mean over the kept positions of the whole validation set
            weight = len(idx) if keep is None else int(np.count_nonzero(data.mask[sl]))
            if weight == 0:
                continue
            ctx = Ctx(s.ops, training=False, graph=s.graph, mask=maskb)
            out = s.model.apply(params, _x(plan, [x[sl] for x in xs]), ctx)
            values.append(loss_value(s.ops, plan.loss, out, _y(plan, yb), keep, lead, wb))
            weights.append(weight)
    # one read from the device; weighted in float64 on the host
    return float(np.dot(convert.to_host(torch.stack(values)), weights)) / sum(weights)


def predict_loop(plan, keep=None):
    """keep: a dict that a caller predicting again and again with the same model, parameters, device
    and precision passes each time (use web's server): the parameters go to the device once."""
    s = Setup(plan, "predict")
    data = plan.data
    params = keep.get("params") if keep is not None else None
    if params is None:
        params = convert.to_torch(plan.params, s.device, s.precision.dtype) if tree.leaves(plan.params) \
            else plan.params
        if keep is not None:
            keep["params"] = params
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
