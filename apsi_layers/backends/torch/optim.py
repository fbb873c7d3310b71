"""nn's optimizers and schedules on torch.optim, one to one.

nn's optimizers already use torch.optim's hyper-parameters, defaults and update rules, so the mapping
is a renaming (b1, b2 -> betas). A learning rate that is a schedule `fn(step) => lr`, or fit's
`schedule=`, is applied the way torch's LambdaLR applies one: before each step the group's lr is set
to the schedule's value for the number of steps taken so far (0 on the first step), exactly as nn's
optimizers call it.
"""

import contextlib

import numpy as np
import torch

from apsi_lang.errors import ApsiError
from apsi_layers.nn.train import optim as nn_optim
from apsi_layers.nn.train.optim import checked_lr

NAMES = ("sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam")


def _sgd(h):
    return torch.optim.SGD, dict(momentum=h["momentum"], dampening=h["dampening"],
                                 weight_decay=h["weight_decay"], nesterov=h["nesterov"])


def _adam(cls):
    def make(h):
        return cls, dict(betas=(h["b1"], h["b2"]), eps=h["eps"], weight_decay=h["weight_decay"],
                         amsgrad=h["amsgrad"])
    return make


def _rmsprop(h):
    return torch.optim.RMSprop, dict(alpha=h["alpha"], eps=h["eps"], weight_decay=h["weight_decay"],
                                     momentum=h["momentum"], centered=h["centered"])


def _adagrad(h):
    return torch.optim.Adagrad, dict(lr_decay=h["lr_decay"], weight_decay=h["weight_decay"],
                                     initial_accumulator_value=h["initial_accumulator_value"], eps=h["eps"])


def _nadam(h):
    return torch.optim.NAdam, dict(betas=(h["b1"], h["b2"]), eps=h["eps"], weight_decay=h["weight_decay"],
                                   momentum_decay=h["momentum_decay"],
                                   decoupled_weight_decay=h["decoupled_weight_decay"])


def _radam(h):
    return torch.optim.RAdam, dict(betas=(h["b1"], h["b2"]), eps=h["eps"], weight_decay=h["weight_decay"],
                                   decoupled_weight_decay=h["decoupled_weight_decay"])


MAPPING = {"sgd": _sgd, "adam": _adam(torch.optim.Adam), "adamw": _adam(torch.optim.AdamW),
           "rmsprop": _rmsprop, "adagrad": _adagrad, "nadam": _nadam, "radam": _radam}


# nn's state keys and torch.optim's, per optimizer (nn/train/optim.py's init_state and torch's step())
STATE_KEYS = {
    "sgd": [("buf", "momentum_buffer")],
    "adam": [("m", "exp_avg"), ("v", "exp_avg_sq"), ("vmax", "max_exp_avg_sq")],
    "adamw": [("m", "exp_avg"), ("v", "exp_avg_sq"), ("vmax", "max_exp_avg_sq")],
    "rmsprop": [("sq", "square_avg"), ("avg", "grad_avg"), ("buf", "momentum_buffer")],
    "adagrad": [("sum", "sum")],
    "nadam": [("m", "exp_avg"), ("v", "exp_avg_sq"), ("mu_product", "mu_product")],
    "radam": [("m", "exp_avg"), ("v", "exp_avg_sq")],
}


def _kept(name, torch_key, hyper):
    """Whether torch.optim keeps this entry for these hyper-parameters."""
    if torch_key == "max_exp_avg_sq":
        return bool(hyper.get("amsgrad"))
    if name == "rmsprop" and torch_key == "grad_avg":
        return bool(hyper.get("centered"))
    if torch_key == "momentum_buffer":
        return bool(hyper.get("momentum"))
    return True


def _complete(name, mine, shape, hyper):
    """nn's layout has every key from the first step (zeros where torch keeps none)."""
    if name == "rmsprop":
        for key in ("sq", "avg", "buf"):
            mine.setdefault(key, np.zeros(shape))
    if name in ("adam", "adamw") and hyper.get("amsgrad"):
        mine.setdefault("vmax", np.zeros(shape))
    return mine


def as_nn_optimizer(opt):
    """An nn optimizer from fit's `opt=` (an nn optimizer, or a name with nn's defaults)."""
    if isinstance(opt, nn_optim.Optimizer):
        return opt
    if isinstance(opt, str) and opt in NAMES:
        return getattr(nn_optim, opt)()
    raise ApsiError(f"opt must be an optimizer such as adam(lr=1e-3) or one of the names "
                    f"{', '.join(NAMES)}; got {opt!r}")


class TorchOptimizer:
    """A torch.optim optimizer over `tensors` with an nn optimizer's hyper-parameters and lr rule."""

    def __init__(self, opt, tensors, schedule=None):
        opt = as_nn_optimizer(opt)
        make = MAPPING.get(opt.name)
        if make is None:
            raise ApsiError(f"the torch backend has no implementation of the optimizer {opt.name!r}; "
                            f"use one of {', '.join(NAMES)}")
        cls, hyper = make(opt.hyper)
        # a schedule decides the rate: fit's schedule= first, then an lr given as a function
        self.schedule = schedule if schedule is not None else (opt.lr if callable(opt.lr) else None)
        self.dtype = tensors[0].dtype if tensors and tensors[0].is_floating_point() else None
        first = checked_lr(self.schedule(0), 0, "fit") if self.schedule is not None else float(opt.lr)
        self._in_range("the schedule" if self.schedule is not None else opt.name, "lr", first)
        for name, value in hyper.items():
            self._in_range(opt.name, name, value)
        self.torch = cls(tensors, lr=first, **hyper)
        self.name, self.hyper = opt.name, opt.hyper
        self.steps = 0

    def _in_range(self, opt_name, name, value):
        """torch.optim multiplies the weights by its hyper-parameters in the weights' dtype: a value
        beyond float32's range stopped with PyTorch's "cannot be converted ... without overflow"."""
        values = value if isinstance(value, tuple) else (value,)
        if self.dtype is None or not all(isinstance(v, float | int) for v in values):
            return
        top = torch.finfo(self.dtype).max
        if any(abs(v) > top for v in values):
            raise ApsiError(f"fit: {opt_name}'s {name}={value!r} is beyond {str(self.dtype)[6:]}'s range "
                            f"(largest {top:.3g}), the precision the weights train in; use a value that "
                            'fits, or precision="fp64"')

    def set_lr(self):
        """Give the group the schedule's rate for this step (LambdaLR's job); call before step()."""
        if self.schedule is not None:
            lr = checked_lr(self.schedule(self.steps), self.steps, "fit")
            self._in_range("the schedule", "lr", lr)
            for group in self.torch.param_groups:
                group["lr"] = lr

    def step(self, scaler=None):
        # torch.optim keeps scalar state (NAdam's mu_product, the step count) in the default dtype,
        # float32, which drifted 1e-10 from NumPy at fp64: the state follows the weights' precision.
        # Where they agree already (fp32) no context is entered: that was a generator per step.
        if self.dtype is None or self.dtype == torch.get_default_dtype():
            self._step(scaler)
        else:
            with _default_dtype(self.dtype):
                self._step(scaler)
        self.steps += 1

    def _step(self, scaler):
        if scaler is None:
            self.torch.step()
        else:
            scaler.step(self.torch)
            scaler.update()

    def zero_grad(self):
        self.torch.zero_grad(set_to_none=True)

    # --- state in nn's layout (checkpoints, r.opt, opt=r.opt) -------------------------------------

    def nn_state(self):
        """[{key: array or float}] per weight in nn's layout, or None before the first step."""
        from .convert import to_host, whole

        params = self.torch.param_groups[0]["params"]
        if not any(p in self.torch.state for p in params):
            return None
        out = []
        for p in params:
            st = self.torch.state.get(p, {})
            mine = {}
            for nn_key, torch_key in STATE_KEYS[self.name]:
                value = st.get(torch_key)
                if value is None:
                    continue
                mine[nn_key] = float(value) if value.ndim == 0 else to_host(whole(value))
            out.append(_complete(self.name, mine, tuple(p.shape), self.hyper))
        return out

    def load_nn_state(self, steps, states):
        """The inverse of nn_state: torch.optim's state from nn's layout and the step count."""
        from .convert import host_to_device, sliced_like

        self.steps = steps
        self.torch.state.clear()
        if states is None:
            return
        scalar = torch.float64 if self.dtype == torch.float64 else torch.float32
        for p, mine in zip(self.torch.param_groups[0]["params"], states, strict=True):
            st = {"step": torch.tensor(float(steps), dtype=scalar)} if self.name != "sgd" else {}
            for nn_key, torch_key in STATE_KEYS[self.name]:
                if nn_key not in mine or not _kept(self.name, torch_key, self.hyper):
                    continue
                v = mine[nn_key]
                st[torch_key] = (torch.tensor(float(v), dtype=scalar) if np.ndim(v) == 0
                                 else sliced_like(p, host_to_device(v, p.device, p.dtype)))
            self.torch.state[p] = st


@contextlib.contextmanager
def _default_dtype(dtype):
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)
