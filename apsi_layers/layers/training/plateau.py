"""fit's `reduce_lr=` (Keras's ReduceLROnPlateau) and `csv_log=` (Keras's CSVLogger).

    reduce_lr={monitor: "val_loss", factor: 0.1, patience: 10, min_delta: 1e-4, cooldown: 0,
               min_lr: 0.0, mode: "auto"}

follows keras/src/callbacks/reduce_lr_on_plateau.py: after each epoch, a value better than the best
by more than min_delta resets the wait; otherwise, outside a cooldown, the wait grows, and when it
reaches patience the rate becomes max(lr * factor, min_lr) (if lr > min_lr), the wait restarts and
`cooldown` epochs pass before waiting again. The state is plain numbers, saved in checkpoints.

csv_log="history.csv" writes one row per epoch: `epoch` (1 for the first, as on_epoch counts) and
the logs' keys in sorted order (Keras's CSVLogger: keras/src/callbacks/csv_logger.py). The file is
rewritten atomically after every epoch with every epoch so far, from the run's own record, so after
resume= it holds the whole run, as Keras's append=True would, without a row twice.
"""

from dataclasses import dataclass

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .stopping import watch_fields

KEYS = ("monitor", "factor", "patience", "min_delta", "cooldown", "min_lr", "mode")


@dataclass
class Plateau:
    monitor: str
    mode: str              # "min" or "max"
    factor: float
    patience: int
    min_delta: float
    cooldown: int
    min_lr: float


@dataclass
class State:
    best: float | None = None         # None: nothing seen yet (Keras's ±inf)
    wait: int = 0
    cooldown: int = 0                 # epochs of cooldown left
    lr: float | None = None           # the rate now; None until the first epoch ends

    def saved(self):
        return [self.best, self.wait, self.cooldown, self.lr]


def restored(values):
    best, wait, cooldown, lr = values
    return State(None if best is None else float(best), int(wait), int(cooldown),
                 None if lr is None else float(lr))


def plateau_arg(value, has_val, metric_names, opt, schedule):
    if value is None or value is False:
        return None
    if value is True:
        value = Record()
    if isinstance(value, dict):                # from Python
        value = Record(**value)
    if not isinstance(value, Record):
        raise ApsiError("fit: reduce_lr must be true (the defaults) or a record {monitor, factor, patience, "
                        f"min_delta, cooldown, min_lr, mode}}, e.g. reduce_lr={{monitor: \"val_loss\", "
                        f"factor: 0.5, patience: 2}}, not {show(value, True)}")
    fields = dict(vars(value))
    extra = sorted(set(fields) - set(KEYS))
    if extra:
        raise ApsiError(f"fit: reduce_lr has no field {extra[0]!r}; the fields are {', '.join(KEYS)}")
    if schedule is not None or callable(opt.lr):
        raise ApsiError("fit: reduce_lr sets the learning rate, which a schedule already decides (schedule= "
                        "or an lr given as a function); use one or the other (Keras refuses the same)")
    monitor, mode, patience, delta = watch_fields("reduce_lr", fields, has_val, metric_names, 10, 1e-4)
    factor = fields.get("factor", 0.1)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 <= factor < 1:
        raise ApsiError(f"fit: reduce_lr factor must be a number in [0, 1) (new lr = lr * factor), not "
                        f"{show(factor, True)}")
    cooldown = fields.get("cooldown", 0)
    if isinstance(cooldown, bool) or not isinstance(cooldown, int) or cooldown < 0:
        raise ApsiError(f"fit: reduce_lr cooldown must be an int >= 0 (epochs), not {show(cooldown, True)}")
    floor = fields.get("min_lr", 0.0)
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not floor >= 0:
        raise ApsiError(f"fit: reduce_lr min_lr must be a number >= 0, not {show(floor, True)}")
    return Plateau(monitor, mode, float(factor), patience, delta, cooldown, float(floor))


def update(rule, state, logs):
    """Keras's on_epoch_end: returns the new rate when it changes, else None."""
    state.lr = float(logs["lr"]) if state.lr is None else state.lr
    value = logs[rule.monitor]
    if state.cooldown > 0:
        state.cooldown -= 1
        state.wait = 0
    better = state.best is None or (value < state.best - rule.min_delta if rule.mode == "min"
                                    else value > state.best + rule.min_delta)
    if better:
        state.best, state.wait = float(value), 0
        return None
    if state.cooldown > 0:
        return None
    state.wait += 1
    if state.wait < rule.patience or not state.lr > rule.min_lr:
        return None
    state.lr = max(state.lr * rule.factor, rule.min_lr)
    state.cooldown, state.wait = rule.cooldown, 0
    return state.lr


# --- csv_log --------------------------------------------------------------------------------------

def csv_arg(value):
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ApsiError(f'fit: csv_log must be a file name like "history.csv", not {show(value, True)}')
    return value


def csv_rows(run):
    """[header, rows...]: epoch and the logs' keys (sorted, as Keras's CSVLogger), one row per epoch."""
    columns = {"loss": run.history, "lr": run.lrs}
    columns.update(run.metrics)
    if run.val_history:
        columns["val_loss"] = run.val_history
        columns.update({f"val_{k}": v for k, v in run.val_metrics.items()})
    keys = sorted(columns)
    rows = [["epoch"] + keys]
    for i in range(run.epoch):
        rows.append([i + 1] + [_cell(columns[k], i) for k in keys])
    return rows


def _cell(values, i):
    return repr(float(values[i])) if i < len(values) and values[i] is not None else ""


def write_csv(shown, run):
    """The whole table, written atomically under the sandbox's write rules."""
    import csv

    from apsi_lang import files, permissions

    path = permissions.require("write", what=f'fit(csv_log="{shown}")', path=shown)
    try:
        with files.atomic_open(path, "w", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows(csv_rows(run))
    except OSError as e:
        raise ApsiError(f"fit: csv_log={shown!r} could not be written ({e.strerror or e}); give a path in a "
                        "folder that exists and that you may write to") from None
