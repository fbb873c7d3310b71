"""fit's and predict's data: inputs, targets, masks and val= as arrays, checked before a step runs
(shapes that disagree, labels out of range, NaN/inf named by argument, row and column, empty data)."""


import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from ..base import fmt
from ..core import Embedding
from ..losses import CLASS_LOSSES
from .arrays import Data, as_array  # noqa: F401  (Data: plan's and generate's name)
from .model_checks import check_params, input_count, shapes_of


def wants_ids(model):
    layer = model
    while True:
        kids = layer.children()
        if not kids:
            return isinstance(layer, Embedding)
        layer = kids[0][1]


def _arrays(fn, arg, value, several, count):
    if several:
        if not isinstance(value, list | tuple) or len(value) != count:
            raise ApsiError(f"{fn}: the model has {count} {arg}; pass a list of {count} tensors, one per "
                            f"{arg[:-1]}")
        return [_array(fn, f"{arg}[{i}]", v) for i, v in enumerate(value)]
    return [_array(fn, arg, value)]


def _array(fn, arg, value):
    """as_array, except that a mapped .npy array stays on disk (make_data decides)."""
    return value if _sources().is_source(value) else as_array(fn, arg, value)


def _sources():
    from apsi_layers.data import fit_data

    return fit_data


def _nan_ok(model):
    """NaN in the inputs is what a model starting with impute() fills in (category_lookup: unknown)."""
    from ..preprocessing import takes_missing

    return takes_missing(model)


def _vocab(model):
    emb = model
    while emb.children():
        emb = emb.children()[0][1]
    return emb.vocab


def make_data(fn, model, inputs, targets, mask, several_in, several_out, loss, need_targets, seed=0):
    src = _sources()
    ids = wants_ids(model)
    if isinstance(inputs, src.Dataset):
        if targets is not None or mask is not None or several_in or several_out:
            raise ApsiError(f"{fn}: a dataset gives both inputs and targets (fn(i) => [x, y]) for a model "
                            f"with one input and one output; call {fn}(model, params, ds, ...) without "
                            "targets or mask")
        return src.dataset_data(fn, inputs, seed, _vocab(model) if ids else None, _nan_ok(model))
    xs = _arrays(fn, "inputs", inputs, several_in, input_count(model))
    for i, a in enumerate(xs):
        if a.ndim == 0:
            raise ApsiError(f"{fn}: inputs must have a batch axis (one row per sample), got a scalar")
        if len(a) and 0 in a.shape[1:]:         # (a mapped file of [N, 0] rows too)
            _empty_sample(fn, model, a, i if len(xs) > 1 else None)
        if isinstance(a, src.Mapped):        # read by rows per batch, checked in one streamed pass
            xs[i] = src.mapped_input(fn, "inputs", a, _vocab(model) if ids else None, _nan_ok(model))
            continue
        if ids:
            xs[i] = token_ids(fn, model, a)
        elif a.dtype != np.float64:
            xs[i] = a.astype(np.float64)
    n = len(xs[0])
    if n == 0:
        raise ApsiError(f"{fn}: the inputs are empty (0 samples); there is nothing to "
                        f"{'train on' if fn == 'fit' else 'predict'}")
    for a in xs[1:]:
        if len(a) != n:
            raise ApsiError(f"{fn}: the inputs have different numbers of rows ({n} and {len(a)})")
    ys = None
    if targets is not None:
        n_out = len(getattr(model, "outputs", [0])) if several_out else 1
        ys = [src.read_whole(a, fn) if isinstance(a, src.Mapped) else a
              for a in _arrays(fn, "targets", targets, several_out, n_out)]
        for a in ys:
            if a.ndim == 0 or len(a) != n:
                raise ApsiError(f"{fn}: inputs and targets have different lengths ({n} inputs, "
                                f"{len(a) if a.ndim else 0} targets); give one target per input row")
    elif need_targets:
        raise ApsiError(f"{fn}: targets are missing: fit(model, params, inputs, targets, loss=...)")
    for arg, arrays in (("targets", ys or []),) if _nan_ok(model) else (
            ("inputs", xs), ("targets", ys or [])):
        for i, a in enumerate(arrays):
            _check_finite(fn, arg if len(arrays) == 1 else f"{arg}[{i}]", a)
    return Data(inputs=xs, targets=ys, n=n, mask=_mask(fn, mask, n, xs))


def _empty_sample(fn, model, a, index):
    """Samples with an empty axis ([[]]) hold no numbers: say what the model takes (a layer would
    otherwise be built for zero features and fail dividing by zero)."""
    shape = model.known_input()
    if index is not None and isinstance(shape, list) and index < len(shape):
        shape = shape[index]
    arg = "inputs" if index is None else f"inputs[{index}]"
    want = (f"; the model takes per-sample shape {list(shape)} (rows of {shape[-1]} numbers)"
            if isinstance(shape, tuple) and shape and shape[-1] is not None else "")
    raise ApsiError(f"{fn}: {arg} holds samples of per-sample shape {list(a.shape[1:])}, with no numbers"
                    f"{want}")


def _check_finite(fn, arg, a):
    """NaN or inf in the data is named before training (row and column), not reported later as a
    loss that "became NaN" with advice about the learning rate."""
    if not isinstance(a, np.ndarray) or a.dtype.kind != "f":      # (a column was checked streaming)
        return
    bad = ~np.isfinite(a)
    if bad.any():
        where = np.argwhere(bad)[0]
        value = a[tuple(where)]
        place = f"row {where[0]}" + (f", column {', '.join(map(str, where[1:]))}" if len(where) > 1 else "")
        count = int(bad.sum())
        raise ApsiError(f"{fn}: {arg} hold {show(float(value), True)} at {place}"
                        + (f" ({count} such values in all)" if count > 1 else "")
                        + "; remove those rows or replace the values first")


def token_ids(fn, model, a):
    if a.dtype.kind == "f":
        if not np.all(a == np.round(a)):
            raise ApsiError(f"{fn}: the model starts with an embedding, so inputs must be int token ids; "
                            "got fractional numbers")
    a = a.astype(np.int64)
    emb = model
    while emb.children():
        emb = emb.children()[0][1]
    if a.size and (a.min() < 0 or a.max() >= emb.vocab):
        bad = int(a.max() if a.max() >= emb.vocab else a.min())
        raise ApsiError(f"{fn}: token id {bad} is out of range for {emb!r} (ids 0..{emb.vocab - 1})")
    return a


def _mask(fn, mask, n, xs):
    if mask is None:
        return None
    m = _array(fn, "mask", mask)
    if _sources().is_source(m):
        m = _sources().read_whole(m, fn)
    if m.dtype.kind != "b":
        if not np.all((m == 0) | (m == 1)):
            raise ApsiError(f"{fn}: mask must hold booleans (or 0/1), one per sample or step")
        m = m.astype(bool)
    if m.ndim == 0 or len(m) != n:
        raise ApsiError(f"{fn}: mask has {len(m) if m.ndim else 0} rows but the inputs have {n}; "
                        "give one mask row per input row ([N] for graph nodes, [N, T] for sequence steps)")
    if not m.any():
        raise ApsiError(f"{fn}: mask is false everywhere, so it keeps no sample"
                        + (" to train on" if fn == "fit" else "") + "; mark at least one with true")
    if m.ndim > 1 and not any(a.shape[:m.ndim] == m.shape and a.ndim > 1 for a in xs):
        # a sequence mask that fits no input would be ignored by every layer: say so instead
        raise ApsiError(f"{fn}: mask has shape {list(m.shape)} but the inputs have shape "
                        f"{fmt(shapes_of(xs)) if len(xs) > 1 else list(xs[0].shape)}; a sequence mask is "
                        "[N, T] (true = a real step) for inputs [N, T, ...], a node mask [N]")
    return m


def check_targets(fn, loss, data, out_shape, several_out):
    if data.targets is None or loss == "vae":
        return
    outs = out_shape if several_out else [out_shape]
    check = _target if isinstance(loss, str) else _custom_target
    for i, (y, out) in enumerate(zip(data.targets, outs, strict=True)):
        if data.first is not None:           # a dataset: every call's y is checked as it comes
            _sources().target_rule(fn, y, lambda a, out=out: check(fn, loss, a, out, None), data.first[1])
            continue
        data.targets[i] = check(fn, loss, y, out, data.mask)


def _custom_target(fn, loss, y, out, mask):
    """A loss function gets targets by the rule the named losses follow: [N] targets for a model with
    one output arrive as [N, 1], so `pred - target` is not an [N, N] matrix. Other shapes are the
    function's business (class labels for logits, say), except float targets of the output's rank
    that differ from it only where NumPy would broadcast them silently."""
    if not isinstance(out, tuple) or y.dtype.kind != "f":
        return y
    if out == (1,) and y.ndim == 1:
        return y[:, None]
    per_sample = tuple(y.shape[1:])
    if len(per_sample) == len(out) and per_sample != out and all(
            a == b or 1 in (a, b) for a, b in zip(per_sample, out, strict=True)):
        raise ApsiError(f"{fn}: the model outputs per-sample shape {fmt(out)} but the targets have "
                        f"per-sample shape {fmt(per_sample)}: the loss function would compare them by "
                        "broadcasting; give targets of the output's shape")
    return y


def _target(fn, loss, y, out, mask):
    if loss in CLASS_LOSSES:
        classes = out[-1] if isinstance(out, tuple) and out else None
        if y.dtype.kind == "f":
            if not np.all(y == np.round(y)):
                raise ApsiError(f"{fn}: loss=\"{loss}\" needs int class labels, got fractional numbers")
            big = np.abs(y) >= 2.0 ** 62             # would wrap around as int64 (1e30, inf)
            if big.any():
                raise ApsiError(f"{fn}: label {show(float(y[big][0]), True)} is out of range"
                                + (f": the model has {classes} classes (labels 0..{classes - 1})"
                                   if classes is not None else ""))
        y = y.astype(np.int64)
        if tuple(y.shape[1:]) != tuple(s for s in out[:-1]):
            raise ApsiError(f"{fn}: loss=\"{loss}\": the model outputs per-sample logits {fmt(out)} so "
                            f"targets need per-sample shape {fmt(out[:-1])} (one class index each), got "
                            f"targets of shape {list(y.shape)}")
        checked = y if mask is None or mask.shape != y.shape[:mask.ndim] else y[mask]
        if checked.size and (checked.min() < 0 or (classes is not None and checked.max() >= classes)):
            bad = int(checked.min() if checked.min() < 0 else checked.max())
            raise ApsiError(f"{fn}: label {bad} is out of range: the model has {classes} classes "
                            f"(labels 0..{classes - 1})")
        return y
    y = y.astype(np.float64)
    if tuple(y.shape[1:]) != tuple(out):
        if out == (1,) and y.ndim == 1:          # [N] targets for a model with one output
            return y[:, None]
        raise ApsiError(f"{fn}: loss=\"{loss}\": the model outputs per-sample shape {fmt(out)} but the "
                        f"targets have per-sample shape {fmt(tuple(y.shape[1:]))}")
    return y


def val_data(model, params, val, several_in, several_out, loss, out_shape, graph):
    if val is None:
        return None
    if isinstance(val, dict) and all(isinstance(k, str) and k.isidentifier() for k in val):
        val = Record(**val)                    # (from Python, or an Apsi map with these keys)
    if isinstance(val, Record):
        fields = vars(val)
        if set(fields) - {"x", "y", "mask", "sample_weight"} or not {"x", "y"} <= set(fields):
            raise ApsiError("fit: val as a record needs the fields x and y (and optionally mask and "
                            "sample_weight), e.g. val={x: x_val, y: y_val, mask: m_val}; got fields "
                            f"{', '.join(fields)}")
        weights = fields.get("sample_weight")
        val = [fields["x"], fields["y"], fields.get("mask")]
    else:
        weights = None
    if not isinstance(val, list | tuple) or len(val) not in (2, 3):
        raise ApsiError("fit: val must be [inputs, targets] or [inputs, targets, mask] (validation data), "
                        "e.g. val=[x_val, y_val]")
    if graph is not None:
        raise ApsiError("fit: val= is not used with graph=: mark the validation nodes in a second "
                        "mask and call predict")
    mask = val[2] if len(val) == 3 else None
    data = make_data("fit (val)", model, val[0], val[0] if val[1] is None else val[1], mask,
                 several_in, several_out, loss, need_targets=True)
    check_params("fit (val)", model, params, data)
    check_targets("fit (val)", loss, data, out_shape, several_out)
    if weights is not None:
        from .weights import sample_weights

        w = sample_weights("fit (val)", "sample_weight", weights, data.n)
        data.weights = None if np.all(w == 1.0) else w
    return data


def split_data(fraction, data, val, graph):
    """validation_split=f: the last f of the samples (before any shuffling, as Keras) become val."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction < 1:
        raise ApsiError(f"fit: validation_split must be a fraction between 0 and 1 (e.g. 0.2), not "
                        f"{show(fraction, True)}")
    if val is not None:
        raise ApsiError("fit: give val= or validation_split=, not both")
    if graph is not None:
        raise ApsiError("fit: validation_split= is not used with graph= (every node trains at once): "
                        "mark the validation nodes with a mask and call predict")
    cut = data.n - int(round(data.n * fraction))
    if cut <= 0 or cut >= data.n:
        raise ApsiError(f"fit: validation_split={fraction} of {data.n} samples leaves "
                        f"{'no training' if cut <= 0 else 'no validation'} samples")

    def part(sl):
        mask = None if data.mask is None else data.mask[sl]
        targets = None if data.targets is None else [t[sl] for t in data.targets]
        weights = None if data.weights is None else data.weights[sl]      # as Keras splits them
        return Data(inputs=[a[sl] for a in data.inputs], targets=targets, n=len(range(data.n)[sl]), mask=mask,
                    weights=None if weights is None or np.all(weights == 1.0) else weights)

    train, held = part(slice(0, cut)), part(slice(cut, None))
    if held.mask is not None and held.mask.ndim and not held.mask.any():
        raise ApsiError(f"fit: validation_split={fraction}: the mask keeps no sample of the validation part")
    return train, held
