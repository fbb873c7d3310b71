"""Learning-rate schedules: functions of the step number (0, 1, 2, ...) returning a learning rate.

Any `fn(step) => lr` is a schedule: pass it as an optimizer's lr, or call it yourself.
These follow torch.optim.lr_scheduler's formulas so the torch backend can map them one to one.
"""

import math

from apsi_lang.errors import ApsiError


def _check(fn, step, **positive):
    if not isinstance(step, int | float) or step < 0:
        raise ApsiError(f"{fn}: step must be a number >= 0, got {step!r}")
    for name, value in positive.items():
        if not isinstance(value, int | float) or value <= 0:
            raise ApsiError(f"{fn}: {name} must be a positive number, got {value!r}")


def warmup_lr(step, warmup, base):
    """Linear warm-up: base * (step + 1) / warmup for the first `warmup` steps, then base."""
    _check("warmup_lr", step, warmup=warmup, base=base)
    return base * min(1.0, (step + 1) / warmup)


def cosine_lr(step, total, base, warmup=0, final=0.0):
    """Linear warm-up over `warmup` steps, then cosine decay from base to `final` at step `total`."""
    _check("cosine_lr", step, total=total, base=base)
    if warmup and step < warmup:
        return base * (step + 1) / warmup
    span = max(total - warmup, 1)
    t = min(max(step - warmup, 0), span) / span
    return final + (base - final) * 0.5 * (1.0 + math.cos(math.pi * t))


def step_lr(step, base, every, factor=0.1):
    """Step decay (torch StepLR): base * factor ** (step // every)."""
    _check("step_lr", step, base=base, every=every)
    return base * factor ** (int(step) // int(every))


def exp_lr(step, base, gamma):
    """Exponential decay (torch ExponentialLR): base * gamma ** step."""
    _check("exp_lr", step, base=base, gamma=gamma)
    return base * gamma ** step
