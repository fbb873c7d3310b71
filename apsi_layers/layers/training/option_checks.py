"""fit's and predict's other options: loss, optimizer, schedule, epochs, batch size, seed, clip,
verbose, precision and compile, each checked into a plain value with a message naming the option."""

import copy
import sys

from apsi_lang.errors import ApsiError
from apsi_lang.values import show
from apsi_layers.nn.train import optim

from ..losses import NAMES
from ..suggest import unknown

OPTIMIZERS = {"sgd": optim.sgd, "adam": optim.adam, "adamw": optim.adamw, "rmsprop": optim.rmsprop,
              "adagrad": optim.adagrad, "nadam": optim.nadam, "radam": optim.radam}


def loss_arg(model, loss):
    from ..zoo import Vae

    if loss is None:
        if isinstance(model, Vae):
            return "vae"
        raise ApsiError("fit: give a loss, e.g. loss=\"cross_entropy\" (int class labels), \"mse\" "
                        "(numbers) or a function fn(pred, target)")
    if isinstance(loss, str):
        if loss not in NAMES:
            raise ApsiError(f"fit: {unknown('loss', loss, NAMES)}")
        if loss == "vae" and not isinstance(model, Vae):
            raise ApsiError("fit: loss=\"vae\" needs a vae(...) model (its output is [recon, mu, logvar])")
        return loss
    if callable(loss):
        return loss
    raise ApsiError(f"fit: loss must be a name ({', '.join(NAMES)}) or a function fn(pred, target), "
                    f"not {show(loss, True)}")


def optimizer_arg(opt):
    if opt is None:
        opt = "adam"
    if isinstance(opt, str):
        if opt not in OPTIMIZERS:
            raise ApsiError(f"fit: {unknown('optimizer', opt, OPTIMIZERS)}")
        return OPTIMIZERS[opt]()
    if isinstance(opt, optim.Optimizer):
        # a copy: fit never changes the caller's optimizer. Its state comes along, so opt=r.opt
        # continues the moments and the step count; a fresh adam(...) has none and starts afresh
        return copy.deepcopy(opt)
    raise ApsiError(f"fit: opt must be an optimizer (adam(lr=1e-3), ...) or a name "
                    f"({', '.join(OPTIMIZERS)}), not {show(opt, True)}")


def callback_arg(fn):
    if fn is None or callable(fn):
        return fn
    raise ApsiError(f"fit: on_epoch must be a function fn(epoch, logs), not {show(fn, True)}")


def schedule_arg(schedule):
    if schedule is None or callable(schedule):
        return schedule
    raise ApsiError(f"fit: schedule must be a function fn(step) => lr, e.g. "
                    f"fn(s) => cosine_lr(s, 1000, base=1e-3), not {show(schedule, True)}")


def positive(fn, arg, value):
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ApsiError(f"{fn}: {arg} must be a positive int, got {show(value, True)}")


def batch_size_arg(fn, value):
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ApsiError(f"{fn}: batch_size must be a positive int (samples per step), got {show(value, True)}")


def seed_arg(value):
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ApsiError(f"fit: seed must be an int >= 0, got {show(value, True)}")


def clip_arg(value):
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise ApsiError(f"fit: clip must be a positive number (the largest global gradient norm), "
                    f"got {show(value, True)}")


def verbose_arg(value):
    if value is None:       # shown where a person watches: a terminal, or a notebook (its `watched` stream)
        return sys.stdout.isatty() or getattr(sys.stdout, "watched", False) is True
    if isinstance(value, bool):
        return value
    raise ApsiError(f"fit: verbose must be true or false, got {show(value, True)}")


def distributed_arg(value, graph):
    """distributed=: true, false, "auto" (distributed when torchrun started this process as one of
    several) or "fsdp" (as true, with the weights sharded over the ranks); resolved here, without
    importing torch, to False, True or "fsdp"."""
    from apsi_layers import distributed

    if value is None:
        return False
    if not (isinstance(value, bool) or value in ("auto", "fsdp")):
        raise ApsiError(f'fit: distributed must be true, false, "auto" (distributed when started by '
                        f'`apsi launch` or torchrun) or "fsdp" (the weights sharded over the ranks), not '
                        f'{show(value, True)}')
    on = distributed.resolve(value)
    if on and graph is not None:
        raise ApsiError("fit: distributed training cannot shard a graph model (graph=): each step trains "
                        "on every node at once, so there are no mini-batches to split between processes; "
                        "train it on one process (distributed=false)")
    return "fsdp" if value == "fsdp" else on


PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16")


def precision_arg(fn, value):
    """precision= is checked here, not in the torch backend, so a bad name reads the same whichever
    backend runs (and under backend="auto" on a machine without PyTorch)."""
    if value is None or value in PRECISIONS:
        return value
    raise ApsiError(f"{fn}: precision={show(value, True)} is not one of {', '.join(PRECISIONS)} "
                    "(fp32 is the default on torch; bf16 is the usual choice on modern GPUs)")


def compile_arg(fn, value):
    if value is None or isinstance(value, bool):
        return bool(value)
    raise ApsiError(f"{fn}: compile must be true or false, not {show(value, True)}")
