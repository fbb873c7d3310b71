"""fit's `sample_weight=` and `class_weight=`: one weight per sample, as Keras defines them.

Keras turns class weights into sample weights (each sample gets its class's weight, 1.0 for a class
the map does not name: keras/src/trainers/data_adapters/data_adapter_utils.py,
class_weight_to_sample_weights) and refuses both at once. A batch's loss is then each sample's loss
times its weight, summed and divided by the number of samples (keras/src/losses/loss.py, reduction
"sum_over_batch_size"), so a weight of 2 counts a sample twice and weights are not normalised.

Weights that are all 1 are dropped here, so such a fit is the unweighted run bit for bit.
"""

import sys

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show


def training_weights(options, data, loss, several_outputs):
    """The training samples' weights as float64 [N], or None (no weights, or all of them 1)."""
    sw, cw = options.get("sample_weight"), options.get("class_weight")
    if sw is None and cw is None:
        return None
    if sw is not None and cw is not None:
        raise ApsiError("fit: give sample_weight= or class_weight=, not both (as Keras); fold the class "
                        "weights into the sample weights: w[i] = sample_weight[i] * class_weight[y[i]]")
    which = "sample_weight" if sw is not None else "class_weight"
    if loss == "vae":
        raise ApsiError(f'fit: {which}= does not apply to loss="vae" (its loss is not one value per '
                        "sample); train it unweighted")
    w = sample_weights("fit", "sample_weight", sw, data.n) if sw is not None else \
        class_weights(cw, data, loss, several_outputs)
    return None if np.all(w == 1.0) else w


def sample_weights(fn, arg, value, n):
    """One finite weight >= 0 per sample, as float64 [n]."""
    from apsi_layers.data.memmap import Mapped

    from .arrays import as_array

    # one number per sample, read into memory as targets are (a mapped array: load_npy)
    w = value.take(np.arange(len(value)), fn) if isinstance(value, Mapped) else as_array(fn, arg, value)
    if w.ndim != 1 or len(w) != n:
        raise ApsiError(f"{fn}: {arg} must hold one weight per sample ({n}), a list or tensor of shape "
                        f"[{n}], got shape {list(w.shape)}")
    w = w.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise ApsiError(f"{fn}: {arg}[{bad[0]}] is {show(float(w[bad[0]]), True)}; weights must be finite "
                        "numbers >= 0")
    if not w.any():
        raise ApsiError(f"{fn}: every {arg} is 0, so no sample counts; give some samples a weight > 0")
    return w


_FLOAT_MAX = sys.float_info.max      # an int above it has no float (10**400); NaN and inf fail too


def class_weights(value, data, loss, several_outputs):
    """Each sample's class weight: a map {class: weight} (classes it does not name weigh 1, as in
    Keras) or a list (the weight of class i at index i)."""
    table = _class_table(value)
    if several_outputs:
        raise ApsiError("fit: class_weight needs a model with one output (as Keras); for several outputs "
                        "give sample_weight=")
    labels = _sample_classes(data.targets[0], loss)
    w = np.array([table.get(int(c), 1.0) for c in labels], dtype=np.float64)
    if not w.any():
        raise ApsiError("fit: class_weight gives every sample weight 0, so no sample counts")
    return w


def _class_table(value):
    if isinstance(value, list | tuple):
        value = dict(enumerate(value))
    if isinstance(value, Record):
        value = None                 # {a: 1} is a record of names, not classes
    if not isinstance(value, dict) or not value:
        raise ApsiError("fit: class_weight must be a map {class: weight}, e.g. class_weight={0: 1.0, "
                        f"1: 5.0}}, or a list of weights, one per class, not {show(value, True)}")
    table = {}
    for k, v in value.items():
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ApsiError(f"fit: class_weight's classes must be ints >= 0 (the labels), not "
                            f"{show(k, True)}")
        if isinstance(v, bool) or not isinstance(v, int | float) or not (0 <= v <= _FLOAT_MAX):
            raise ApsiError(f"fit: class_weight[{k}] is {show(v, True)}; weights must be finite numbers "
                            ">= 0")
        table[k] = float(v)
    return table


def _sample_classes(y, loss):
    """One class per sample, read from the targets as Keras does: labels [N] or [N, 1] (rounded),
    one-hot rows [N, C] (their argmax)."""
    if y.ndim == 2 and y.shape[1] > 1 and loss != "cross_entropy":
        return np.argmax(y, axis=1)
    if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1):
        classes = np.round(y.reshape(-1))
        if classes.size and classes.min() < 0:
            raise ApsiError(f"fit: class_weight: the target {show(float(classes.min()), True)} is not a "
                            "class (classes are ints >= 0)")
        return classes.astype(np.int64)
    raise ApsiError(f"fit: class_weight needs one class per sample (targets [N], [N, 1] or one-hot "
                    f"[N, C]), but the targets have shape {list(y.shape)}; give sample_weight= instead")


def position_weights(w, m, keep, lead):
    """The weights of a batch's loss positions: `w` the batch's sample weights, `m` its mask rows,
    (keep, lead) from loss_positions. A sample's weight goes to each of its kept positions."""
    if keep is None:
        return w
    return np.broadcast_to(w.reshape(w.shape + (1,) * (lead - 1)), m.shape).reshape(-1)[keep]


def weight_keep(loss, keep):
    """Which positions the weights follow: named losses are computed at the kept positions, so their
    weights are too; a loss function gets the whole batch and returns one loss per sample."""
    return keep if isinstance(loss, str) else None
