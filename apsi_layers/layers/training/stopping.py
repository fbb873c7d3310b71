"""fit's `early_stopping=`: stop when a monitored value has not improved for `patience` epochs.

    early_stopping=5                      patience 5, the defaults below
    early_stopping={monitor: "val_loss", patience: 5, min_delta: 0.0, mode: "min", restore_best: true}

monitor is "loss", "val_loss", a metric name or "val_" + a metric name (default: "val_loss" when
val= or validation_split= is given, else "loss"); mode "auto" takes "max" for accuracy, top5 and r2.
The state is plain numbers, so a checkpoint carries it and a resumed fit stops where one run would.
"""

from dataclasses import dataclass

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .metrics import MAXIMISE

KEYS = ("monitor", "patience", "min_delta", "mode", "restore_best")


@dataclass
class Rule:
    monitor: str
    patience: int
    min_delta: float
    mode: str              # "min" or "max"
    restore_best: bool


@dataclass
class Progress:
    best: float | None = None
    best_epoch: int | None = None
    wait: int = 0


def rule_arg(value, has_val, metric_names):
    if value is None or value is False:
        return None
    fields = {}
    if isinstance(value, dict):                # from Python
        value = Record(**value)
    if isinstance(value, bool) or not isinstance(value, int | Record):
        raise ApsiError("fit: early_stopping must be a patience (an int, e.g. early_stopping=5) or a "
                        "record {monitor, patience, min_delta, mode, restore_best}, not "
                        f"{show(value, True)}")
    if isinstance(value, int):
        fields["patience"] = value
    else:
        fields = dict(vars(value))
        extra = sorted(set(fields) - set(KEYS))
        if extra:
            raise ApsiError(f"fit: early_stopping has no field {extra[0]!r}; the fields are "
                            f"{', '.join(KEYS)}")
    monitor, mode, patience, delta = watch_fields("early_stopping", fields, has_val, metric_names, 5, 0.0)
    restore = fields.get("restore_best", True)
    if not isinstance(restore, bool):
        raise ApsiError(f"fit: early_stopping restore_best must be true or false, not {show(restore, True)}")
    return Rule(monitor, patience, float(delta), mode, restore)


def watch_fields(option, fields, has_val, metric_names, patience, min_delta):
    """(monitor, mode, patience, min_delta) of early_stopping= or reduce_lr=, checked."""
    monitor = fields.get("monitor", "val_loss" if has_val else "loss")
    known = ["loss"] + list(metric_names)
    known += ["val_" + k for k in known] if has_val else []
    if monitor not in known:
        why = " (there is no validation data: give val= or validation_split=)" \
            if isinstance(monitor, str) and monitor.startswith("val_") and not has_val else ""
        raise ApsiError(f"fit: {option} monitor={show(monitor, True)} is not one of "
                        f"{', '.join(known)}{why}")
    patience = fields.get("patience", patience)
    if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
        raise ApsiError(f"fit: {option} patience must be an int >= 0, not {show(patience, True)}")
    delta = fields.get("min_delta", min_delta)
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not delta >= 0:
        raise ApsiError(f"fit: {option} min_delta must be a number >= 0, not {show(delta, True)}")
    mode = fields.get("mode", "auto")
    if mode not in ("auto", "min", "max"):
        raise ApsiError(f'fit: {option} mode must be "min", "max" or "auto", not {show(mode, True)}')
    if mode == "auto":
        mode = "max" if monitor.removeprefix("val_").removeprefix("weighted_") in MAXIMISE else "min"
    return monitor, mode, patience, float(delta)


def update(rule, state, epoch, logs):
    """Record this epoch's value; returns (improved, stop)."""
    value = logs[rule.monitor]
    better = state.best is None or (value < state.best - rule.min_delta if rule.mode == "min"
                                    else value > state.best + rule.min_delta)
    if better:
        state.best, state.best_epoch, state.wait = value, epoch, 0
        return True, False
    state.wait += 1
    return False, state.wait >= max(rule.patience, 1) if rule.patience else True
