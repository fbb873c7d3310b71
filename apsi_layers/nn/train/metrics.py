"""Metrics as plain functions (issue 19), with scikit-learn's argument order: (y_true, y_pred).

    accuracy(y_true, y_pred)             labels, or scores [N, C] (argmax) / [N] logits or probabilities
    r2_score(y_true, y_pred)             per output column, averaged (scikit-learn's default)
    confusion_matrix(y_true, y_pred)     [C, C] counts, rows the true class, columns the prediction
    precision_recall_f1(y_true, y_pred, average="macro")   {precision, recall, f1}
    roc_auc(y_true, y_score)             binary labels 0/1 and scores; ties count one half

fit's `metrics=` (layers/training/metrics.py) computes accuracy and r2 with these same functions.
Values only (no gradients): they count and compare.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record

from ..autograd.tensor import plain_array
from ..numlib.sorting import numpy_only

AVERAGES = ("macro", "micro", "weighted", "binary", None)


def _arrays(name, y_true, y_pred):
    numpy_only(name, y_true, y_pred)
    t, p = plain_array(y_true, name, "y_true"), plain_array(y_pred, name, "y_pred")
    if t.dtype.kind not in "biuf" or p.dtype.kind not in "biuf":
        raise ApsiError(f"{name}: y_true and y_pred must be numbers or booleans")
    if len(t) != len(p) if t.ndim and p.ndim else t.shape != p.shape:
        raise ApsiError(f"{name}: y_true has {len(t) if t.ndim else 1} samples but y_pred has "
                        f"{len(p) if p.ndim else 1}")
    if t.size == 0:
        raise ApsiError(f"{name}: there are no samples")
    return t, p


def labels_of(t, p):
    """Predicted labels from y_pred: argmax over a class axis, 0/1 from one score per sample (a
    logit > 0, or a probability > 0.5 when every score is in [0, 1]), else the values themselves."""
    if p.ndim == t.ndim + 1:
        return p.argmax(axis=-1)
    if p.dtype.kind == "f" and not np.array_equal(p, np.round(p)):
        threshold = 0.5 if p.min() >= 0 and p.max() <= 1 else 0.0
        return (p > threshold).astype(np.int64)
    return p


def accuracy(y_true, y_pred):
    """The share of samples whose predicted label is the true one."""
    t, p = _arrays("accuracy", y_true, y_pred)
    p = labels_of(t, p)
    if p.shape != t.shape:
        raise ApsiError(f"accuracy: y_pred's labels have shape {list(p.shape)} but y_true has "
                        f"{list(t.shape)}")
    return float(np.mean(p == t))


def r2_score(y_true, y_pred):
    """1 - SS_res / SS_tot per output column, averaged; a constant column scores 1 if predicted
    exactly, else 0 (scikit-learn's choice)."""
    t, p = _arrays("r2_score", y_true, y_pred)
    if t.size != p.size:
        raise ApsiError(f"r2_score: y_true has {t.size} values but y_pred has {p.size}")
    return r2(p.reshape(t.shape).astype(np.float64), t.astype(np.float64))


def r2(pred, target):
    p = pred.reshape(len(pred), -1)
    y = target.reshape(len(target), -1)
    res = ((y - p) ** 2).sum(axis=0)
    tot = ((y - y.mean(axis=0)) ** 2).sum(axis=0)
    scores = np.where(tot > 0, 1.0 - res / np.where(tot > 0, tot, 1.0), np.where(res == 0, 1.0, 0.0))
    return float(scores.mean())


def _class_labels(name, t, p, classes):
    p = labels_of(t, p)
    both = np.concatenate([t.reshape(-1), p.reshape(-1)])
    if both.dtype.kind == "f" and not np.array_equal(both, np.round(both)):
        raise ApsiError(f"{name}: labels must be whole numbers (class ids)")
    if classes is None:
        classes = int(both.max()) + 1 if both.size else 0
    if not isinstance(classes, int) or isinstance(classes, bool) or classes < 1:
        raise ApsiError(f"{name}: classes must be a positive int")
    if both.min() < 0 or both.max() >= classes:
        raise ApsiError(f"{name}: labels must be in 0..{classes - 1}")
    return t.reshape(-1).astype(np.int64), p.reshape(-1).astype(np.int64), classes


def confusion_matrix(y_true, y_pred, classes=None):
    """counts[i, j]: samples of true class i predicted as j (an int tensor [C, C])."""
    from ..autograd.tensor import Tensor

    t, p = _arrays("confusion_matrix", y_true, y_pred)
    t, p, c = _class_labels("confusion_matrix", t, p, classes)
    return Tensor(np.bincount(t * c + p, minlength=c * c).reshape(c, c))


def precision_recall_f1(y_true, y_pred, average="macro", classes=None):
    """{precision, recall, f1}: per class (average=none, lists indexed by class id), their mean over
    the labels present in y_true or y_pred ("macro"; over 0..classes-1 when classes is given, as
    scikit-learn's labels=range(classes)), weighted by support ("weighted"), from the summed counts
    ("micro"), or of class 1 ("binary"). A class never predicted has precision 0, as scikit-learn's
    zero_division=0."""
    if average not in AVERAGES:
        raise ApsiError(f"precision_recall_f1: average must be one of macro, micro, weighted, binary or "
                        f"none, not {average!r}")
    t, p = _arrays("precision_recall_f1", y_true, y_pred)
    t, p, c = _class_labels("precision_recall_f1", t, p, classes)
    counts = np.bincount(t * c + p, minlength=c * c).reshape(c, c)
    tp = np.diag(counts).astype(np.float64)
    predicted, actual = counts.sum(axis=0), counts.sum(axis=1)
    if average == "micro":
        tp, predicted, actual = tp.sum(keepdims=True), predicted.sum(keepdims=True), actual.sum(keepdims=True)
    prec = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    rec = np.divide(tp, actual, out=np.zeros_like(tp), where=actual > 0)
    f1 = np.divide(2 * prec * rec, prec + rec, out=np.zeros_like(tp), where=prec + rec > 0)
    if average is None:
        return Record(precision=prec.tolist(), recall=rec.tolist(), f1=f1.tolist())
    if average == "binary":
        if c > 2:
            raise ApsiError("precision_recall_f1: average=\"binary\" needs labels 0 and 1; use \"macro\"")
        prec, rec, f1 = prec[-1:], rec[-1:], f1[-1:]
    weights = actual / actual.sum() if average == "weighted" else None
    if average == "macro" and classes is None:
        # scikit-learn's default labels: those in y_true or y_pred, so an id never used is no 0 score
        present = (actual + predicted) > 0
        prec, rec, f1 = prec[present], rec[present], f1[present]
    return Record(**{k: float(np.average(v, weights=weights)) for k, v in
                     (("precision", prec), ("recall", rec), ("f1", f1))})


def roc_auc(y_true, y_score):
    """The area under the ROC curve for binary labels: the chance that a positive sample scores
    above a negative one (ties count one half), as scikit-learn's roc_auc_score."""
    t, s = _arrays("roc_auc", y_true, y_score)
    t, s = t.reshape(-1), s.reshape(-1).astype(np.float64)
    if not np.isin(t, (0, 1)).all():
        raise ApsiError("roc_auc: y_true must hold binary labels 0 and 1")
    pos, neg = int(t.sum()), int(len(t) - t.sum())
    if pos == 0 or neg == 0:
        raise ApsiError("roc_auc: y_true needs both classes (0 and 1) for an area under the ROC curve")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    sorted_s = s[order]
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])      # average ranks of ties
    ends = np.r_[starts[1:], len(s)]
    for a, b in zip(starts, ends, strict=True):
        if b - a > 1:
            ranks[order[a:b]] = (a + 1 + b) / 2
    return float((ranks[t == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))
