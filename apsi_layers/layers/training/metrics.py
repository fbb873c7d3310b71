"""fit's `metrics=` and `weighted_metrics=`: named metrics and functions fn(pred, target), on NumPy
arrays of the whole set.

fit computes them after each epoch in evaluation mode (no dropout, running statistics), on the
training data and on val=, from the model's raw outputs (logits for classifiers). A mask that covers
the targets' leading axes selects the positions, as it does for the loss. `accuracy` follows the
task (fit's `task=`, by default the loss's): argmax for "multiclass" (cross_entropy), `logit > 0` for
"binary" (bce), `output > 0.5` for "binary_probability". `weighted_metrics=` are the same named
metrics weighed by the samples' weights (Keras's weighted mean: sum(w * value) / sum(w)), reported
as weighted_NAME; `metrics=` stay unweighted, as in Keras.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers.nn.train import metrics as nn_metrics

from ..suggest import unknown
from .batches import loss_positions
from .weights import position_weights

CLASSIFY = ("accuracy", "top5")
REGRESS = ("mae", "mse", "rmse", "r2")
NAMES = CLASSIFY + REGRESS
MAXIMISE = ("accuracy", "top5", "r2")        # higher is better (early stopping's mode="auto")
TASKS = ("multiclass", "binary", "binary_probability", "regression")
LOSS_TASKS = {"cross_entropy": "multiclass", "bce": "binary", "mse": "regression", "mae": "regression",
              "huber": "regression"}


def task_arg(value, loss):
    """How predictions become classes: task= as given (checked against a named loss), or the loss's."""
    implied = LOSS_TASKS.get(loss) if isinstance(loss, str) else None
    if value is None:
        return implied
    if value not in TASKS:
        raise ApsiError(f"fit: {unknown('task', value, TASKS)}")
    if implied in ("multiclass", "binary") and value != implied or loss == "vae":
        raise ApsiError(f'fit: task="{value}" does not fit loss="{loss}"'
                        + (f' (its task is "{implied}"); leave task= out' if implied else ""))
    return value


def check_targets_fit(metrics, task, data, out_shape):
    """Class metrics need targets the task can read: labels (or one-hot rows) for multiclass, one
    target per output for binary; said here, before training, not as a NumPy error after an epoch."""
    if not any(n.removeprefix("weighted_") in CLASSIFY for n, fn in metrics if fn is None):
        return
    per_sample, out = tuple(data.targets[0].shape[1:]), tuple(out_shape)
    if task == "multiclass":
        fits = per_sample in (out[:-1], out) and len(out) >= 1
        need = f"class labels of per-sample shape {list(out[:-1])} (or one-hot rows {list(out)})"
    else:
        fits = int(np.prod(per_sample)) == int(np.prod(out))
        need = f"0/1 targets of the output's shape {list(out)}"
    if not fits:
        raise ApsiError(f'fit: metrics: accuracy with task="{task}" needs {need}, but the targets have '
                        f"per-sample shape {list(per_sample)}")


def metric_name(name, weighted):
    return f"weighted_{name}" if weighted else name


def metrics_arg(value, loss, task, several_outputs, weighted=False, taken=()):
    """[(name, fn or None)] from metrics= (names of NAMES, or functions fn(pred, target)) or, with
    weighted, from weighted_metrics= (names only, reported as weighted_NAME)."""
    if value is None:
        return []
    option = "weighted_metrics" if weighted else "metrics"
    items = value if isinstance(value, list | tuple) else [value]
    out, seen = [], set(taken)
    for item in items:
        if isinstance(item, str):
            if item not in NAMES:
                raise ApsiError(f"fit: {option}: {unknown('metric', item, NAMES)}")
            _fits_task(item, loss, task, several_outputs)
            name, fn = metric_name(item, weighted), None
        elif callable(item) and weighted:
            raise ApsiError("fit: weighted_metrics takes metric names (accuracy, top5, mae, mse, rmse, r2): "
                            "a function fn(pred, target) returns one number, which cannot be weighed per "
                            "sample")
        elif callable(item):
            name = getattr(item, "__name__", "") or ""
            if not name or name.startswith("<") or not name.isidentifier():
                raise ApsiError("fit: metrics: a metric function needs a name, so its values can be read "
                                "as r.metrics.NAME: define it with fn NAME(pred, target): ...")
            fn = item
        else:
            raise ApsiError(f"fit: metrics must be a list of names ({', '.join(NAMES)}) or functions "
                            f"fn(pred, target), not {show(item, True)}")
        if name in seen or name == "loss":
            raise ApsiError(f"fit: metrics: {name!r} is given twice (or is the loss itself)")
        seen.add(name)
        out.append((name, fn))
    return out


_SAY_TASK = ('give task="multiclass" (argmax of the outputs), "binary" (logit > 0) or '
             '"binary_probability" (output > 0.5)')


def _fits_task(name, loss, task, several_outputs):
    if several_outputs:
        raise ApsiError(f"fit: metrics: {name!r} needs a model with one output; for several outputs give "
                        "a function fn(preds, targets)")
    if name in CLASSIFY and task is None and not isinstance(loss, str):
        raise ApsiError(f"fit: metrics: {name!r} needs to know how the model's outputs become classes, "
                        f"which a loss function does not say: {_SAY_TASK}")
    if name in CLASSIFY and task in (None, "regression"):
        raise ApsiError(f"fit: metrics: {name!r} needs loss=\"cross_entropy\" or \"bce\" (classes), or "
                        f"task= with a loss of numbers ({_SAY_TASK}); for loss={show(loss, True)} use mae, "
                        "mse, rmse or r2")
    if name == "top5" and task != "multiclass":
        raise ApsiError("fit: metrics: 'top5' needs loss=\"cross_entropy\" or task=\"multiclass\" (five or "
                        "more classes)")
    if name in REGRESS and (task == "multiclass" or loss == "vae"):
        given = f"loss={show(loss, True)}" if isinstance(loss, str) else 'task="multiclass"'
        raise ApsiError(f"fit: metrics: {name!r} compares numbers; with {given} use accuracy or top5")


def compute(metrics, task, outputs, data, weights=None):
    """{name: float} for one data set; outputs: the model's raw outputs (a list, one per output);
    weights: the samples' weights (for the weighted_ metrics), or None."""
    if not metrics:
        return {}
    targets = data.targets
    keep, lead, picked = loss_positions(data.mask, targets, None, True)
    preds = outputs
    if keep is not None:
        preds = [o.reshape((-1,) + o.shape[lead:])[keep] for o in outputs]
        targets = picked
    w = None if weights is None else position_weights(weights, data.mask, keep, lead)
    return {name: _value(name, fn, task, preds, targets, w if name.startswith("weighted_") else None)
            for name, fn in metrics}


def _value(name, fn, task, preds, targets, w):
    if fn is not None:
        return _custom(name, fn, preds, targets)
    name = name.removeprefix("weighted_")
    p, y = preds[0], targets[0]
    if name == "accuracy":
        return _mean(_hits(task, p, y), w)
    if name == "top5":
        k = min(5, p.shape[-1])
        top = np.argpartition(-p, k - 1, axis=-1)[..., :k]
        return _mean((top == _labels(p, y)[..., None]).any(axis=-1), w)
    err = p - y.reshape(p.shape)
    if name == "mae":
        return _mean(np.abs(err), w)
    if name == "mse":
        return _mean(err * err, w)
    if name == "rmse":
        return float(np.sqrt(_mean(err * err, w)))
    if w is None:
        return nn_metrics.r2(p, y.reshape(p.shape))      # nn's r2_score: one definition for both
    return _weighted_r2(p, y.reshape(p.shape), w)


def _labels(p, y):
    """Class labels of the targets: as they are, or the argmax of one-hot rows shaped like p."""
    return y.argmax(axis=-1) if y.shape == p.shape and p.shape[-1] > 1 else y.reshape(p.shape[:-1])


def _hits(task, p, y):
    """1 where the predicted class is the target's, per position."""
    if task == "multiclass":
        return p.argmax(axis=-1) == _labels(p, y)
    cut = 0.5 if task == "binary_probability" else 0.0
    return (y.reshape(p.shape) > 0.5) == (p > cut)


def _mean(values, w):
    """The mean, or Keras's weighted mean sum(w * v) / sum(w) with each row's weight on its values."""
    values = np.asarray(values, dtype=np.float64)
    if w is None:
        return float(np.mean(values))
    wide = np.broadcast_to(w.reshape(w.shape + (1,) * (values.ndim - 1)), values.shape)
    return float(np.sum(wide * values) / np.sum(wide))


def _weighted_r2(p, y, w):
    """r2 per output column with weighted sums (Keras's R2Score with sample_weight), averaged."""
    p, y = p.reshape(len(p), -1), y.reshape(len(y), -1)
    wc = w[:, None]
    mean = np.sum(wc * y, axis=0) / np.sum(w)
    res = np.sum(wc * (y - p) ** 2, axis=0)
    tot = np.sum(wc * (y - mean) ** 2, axis=0)
    scores = np.where(tot > 0, 1.0 - res / np.where(tot > 0, tot, 1.0), np.where(res == 0, 1.0, 0.0))
    return float(scores.mean())


def _custom(name, fn, preds, targets):
    from apsi_layers.nn.autograd.tensor import Tensor

    wrap = [Tensor(p) for p in preds]
    ys = [Tensor(np.asarray(y, dtype=np.float64)) if y.dtype.kind == "f" else Tensor(y) for y in targets]
    value = fn(wrap if len(wrap) > 1 else wrap[0], ys if len(ys) > 1 else ys[0])
    v = getattr(value, "data", value)
    try:
        v = float(np.asarray(v))
    except (TypeError, ValueError):
        raise ApsiError(f"fit: the metric {name} must return a number, but it returned "
                        f"{show(value, True)}") from None
    return v


def as_record(per_epoch):
    """{name: [values]} as the record r.metrics reads."""
    return Record(**{k: list(v) for k, v in per_epoch.items()})
