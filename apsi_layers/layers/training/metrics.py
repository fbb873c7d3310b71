"""fit's `metrics=`: named metrics and functions fn(pred, target), on NumPy arrays of the whole set.

fit computes them after each epoch in evaluation mode (no dropout, running statistics), on the
training data and on val=, from the model's raw outputs (logits for classifiers). A mask that covers
the targets' leading axes selects the positions, as it does for the loss. `accuracy` follows the
loss: argmax for cross_entropy, `logit > 0` for bce.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers.nn import metrics as nn_metrics

from ..suggest import unknown
from .batches import loss_positions

CLASSIFY = ("accuracy", "top5")
REGRESS = ("mae", "mse", "rmse", "r2")
NAMES = CLASSIFY + REGRESS
MAXIMISE = ("accuracy", "top5", "r2")        # higher is better (early stopping's mode="auto")


def metrics_arg(value, loss, several_outputs):
    """[(name, fn or None)] from metrics=: names of NAMES, or functions fn(pred, target)."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else [value]
    out, seen = [], set()
    for item in items:
        if isinstance(item, str):
            if item not in NAMES:
                raise ApsiError(f"fit: metrics: {unknown('metric', item, NAMES)}")
            _fits_loss(item, loss, several_outputs)
            name, fn = item, None
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


def _fits_loss(name, loss, several_outputs):
    if several_outputs:
        raise ApsiError(f"fit: metrics: {name!r} needs a model with one output; for several outputs give "
                        "a function fn(preds, targets)")
    if name in CLASSIFY and loss not in ("cross_entropy", "bce"):
        raise ApsiError(f"fit: metrics: {name!r} needs loss=\"cross_entropy\" or \"bce\" (classes); for "
                        f"loss={show(loss, True)} use mae, mse, rmse or r2")
    if name == "top5" and loss != "cross_entropy":
        raise ApsiError("fit: metrics: 'top5' needs loss=\"cross_entropy\" (five or more classes)")
    if name in REGRESS and loss in ("cross_entropy", "vae"):
        raise ApsiError(f"fit: metrics: {name!r} compares numbers; with loss=\"cross_entropy\" use "
                        "accuracy or top5")


def compute(metrics, loss, outputs, data):
    """{name: float} for one data set; outputs: the model's raw outputs (a list, one per output)."""
    if not metrics:
        return {}
    targets = data.targets
    keep, lead, picked = loss_positions(data.mask, targets, None, True)
    preds = outputs
    if keep is not None:
        preds = [o.reshape((-1,) + o.shape[lead:])[keep] for o in outputs]
        targets = picked
    return {name: _value(name, fn, loss, preds, targets) for name, fn in metrics}


def _value(name, fn, loss, preds, targets):
    if fn is not None:
        return _custom(name, fn, preds, targets)
    p, y = preds[0], targets[0]
    if name == "accuracy":             # labels by the loss's rule, counted by nn's accuracy
        if loss == "cross_entropy":
            return nn_metrics.accuracy(y, p.argmax(axis=-1))
        return nn_metrics.accuracy((y > 0.5).astype(np.int64), (p > 0).astype(np.int64))
    if name == "top5":
        k = min(5, p.shape[-1])
        top = np.argpartition(-p, k - 1, axis=-1)[..., :k]
        return float(np.mean((top == y[..., None]).any(axis=-1)))
    err = p - y.reshape(p.shape)
    if name == "mae":
        return float(np.mean(np.abs(err)))
    if name == "mse":
        return float(np.mean(err * err))
    if name == "rmse":
        return float(np.sqrt(np.mean(err * err)))
    return nn_metrics.r2(p, y.reshape(p.shape))      # nn's r2_score: one definition for both


def _custom(name, fn, preds, targets):
    from apsi_layers.nn.tensor import Tensor

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
