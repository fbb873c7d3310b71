"""fit's and predict's options, checked once into a plain record that any backend can run.

Everything a user can get wrong is caught here, before a single step runs: unknown options, names
of losses and optimizers, data and model shapes that disagree, labels out of range, empty data,
bad batch sizes. The backends (apsi_layers/backends/numpy/ and apsi_layers/backends/torch/)
receive a FitPlan / PredictPlan and only loop.
"""

import copy
import sys
from dataclasses import dataclass

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers.nn import optim, tree
from apsi_layers.nn.tensor import Tensor, to_plain

from ..base import Layer, fmt
from ..context import graph_arg
from ..core import Embedding
from ..init_rng import ShapeRng
from ..losses import CLASS_LOSSES, NAMES
from ..norm import BatchNorm
from ..suggest import unknown

FIT_OPTIONS = ("loss", "opt", "epochs", "batch_size", "seed", "clip", "schedule", "graph", "mask", "val",
               "verbose", "backend", "device", "precision", "compile")
PREDICT_OPTIONS = ("graph", "mask", "batch_size", "backend", "device", "precision", "compile")
BACKENDS = ("numpy", "auto", "torch")
OPTIMIZERS = {"sgd": optim.sgd, "adam": optim.adam, "adamw": optim.adamw, "rmsprop": optim.rmsprop,
              "adagrad": optim.adagrad, "nadam": optim.nadam, "radam": optim.radam}


@dataclass
class Data:
    """Inputs (a list: one array per model input), targets (one per output, or None), row count."""

    inputs: list
    targets: list | None
    n: int
    mask: np.ndarray | None = None


@dataclass
class FitPlan:
    model: Layer
    params: object                 # the parameter tree as given (float64 nn tensors)
    data: Data
    loss: object                   # a name of losses.NAMES or a function fn(pred, target)
    opt: optim.Optimizer           # a fresh optimizer (no state from an earlier use)
    schedule: object               # fn(step) -> lr, or None
    epochs: int
    batch_size: int
    seed: int
    clip: float | None
    graph: tuple | None            # (edges int ndarray [2, E], node count) or None
    val: Data | None
    verbose: bool
    backend: str                   # "numpy" or "torch" (auto already resolved)
    device: str | None = None
    precision: str | None = None
    compile: bool = False
    several_inputs: bool = False
    several_outputs: bool = False
    output_shape: object = None


@dataclass
class PredictPlan:
    model: Layer
    params: object
    data: Data
    graph: tuple | None
    batch_size: int | None
    backend: str
    device: str | None = None
    precision: str | None = None
    compile: bool = False
    several_inputs: bool = False
    several_outputs: bool = False


def check_options(fn, options, valid):
    for key in options:
        if key not in valid:
            raise ApsiError(f"{fn}: {unknown('option', key, valid)}")


def fit_plan(model, params, inputs, targets, options):
    check_options("fit", options, FIT_OPTIONS)
    _model("fit", model)
    o = dict(options)
    loss = _loss(model, o.get("loss"))
    several_in, several_out = _arity(model)
    data = _data("fit", model, inputs, targets, o.get("mask"), several_in, several_out,
                 loss, need_targets=loss != "vae")
    if loss == "vae" and data.targets is None:
        data.targets = [data.inputs[0]]            # a VAE reconstructs its inputs
    graph = graph_arg("fit", o["graph"], data.n) if o.get("graph") is not None else None
    out_shape = check_params("fit", model, params, data)
    _check_targets("fit", loss, data, out_shape, several_out)
    val = _val(model, params, o.get("val"), several_in, several_out, loss, out_shape, graph)
    plan = FitPlan(
        model=model, params=params, data=data, loss=loss, opt=_optimizer(o.get("opt")),
        schedule=_schedule(o.get("schedule")), epochs=_positive("fit", "epochs", o.get("epochs", 1)),
        batch_size=_batch_size("fit", o.get("batch_size", 32)), seed=_seed(o.get("seed", 0)),
        clip=_clip(o.get("clip")), graph=graph, val=val, verbose=_verbose(o.get("verbose")),
        backend=o.get("backend", "numpy"), device=o.get("device"), precision=o.get("precision"),
        compile=o.get("compile", False), several_inputs=several_in, several_outputs=several_out,
        output_shape=out_shape)
    _check_lone_batch(model, plan)
    return plan


def _check_lone_batch(model, plan):
    """Batch norm cannot normalise a mini-batch of one sample (its variance is 0): NumPy trained on it,
    dragging the running variance to 0, and torch stopped mid-training with PyTorch's text. Both refuse
    before training (a graph trains on all nodes at once, so it has no last batch)."""
    n, size = plan.data.n, plan.batch_size
    if plan.graph is not None or n % size != 1 or not _has(model, BatchNorm):
        return
    raise ApsiError(f"fit: the last mini-batch would hold one sample (N = {n}, batch_size = {size}), and "
                    "batch_norm cannot normalise a single sample; choose a batch_size that does not leave "
                    f"one over (e.g. {size + 1}), or drop a sample")


def _has(model, kind):
    return isinstance(model, kind) or any(_has(child, kind) for child in model.layers)


def predict_plan(model, params, x, options):
    check_options("predict", options, PREDICT_OPTIONS)
    _model("predict", model)
    several_in, several_out = _arity(model)
    data = _data("predict", model, x, None, options.get("mask"), several_in, several_out, None,
                 need_targets=False)
    graph = graph_arg("predict", options["graph"], data.n) if options.get("graph") is not None else None
    check_params("predict", model, params, data)
    bs = options.get("batch_size")
    return PredictPlan(model=model, params=params, data=data, graph=graph,
                       batch_size=None if bs is None else _batch_size("predict", bs),
                       backend=options.get("backend", "numpy"), device=options.get("device"),
                       precision=options.get("precision"), compile=options.get("compile", False),
                       several_inputs=several_in, several_outputs=several_out)


# --- the model and its parameters ----------------------------------------------------------------


def _model(fn, model):
    if not isinstance(model, Layer):
        raise ApsiError(f"{fn}: the first argument must be a model (a layer such as mlp(2, 3) or "
                        f"sequential(...)), not {show(model, True)}")


def _arity(model):
    n_in = _input_count(model)
    return n_in > 1, bool(getattr(model, "several_outputs", False))


def _input_count(model):
    """A dag counts its named inputs; another model takes several when its known input shape is a list
    of shapes (e.g. sequential(lstm_layer(8), ..., inputs=[[T, F], [8], [8]]) for [x, h0, c0])."""
    n = getattr(model, "n_inputs", None)
    if n is None:
        shape = model.known_input()
        n = len(shape) if isinstance(shape, list) else 1
    return n


def check_params(fn, model, params, data):
    """Build the model's shapes for this data and compare them with `params`; returns the model's
    per-sample output shape. Names the parameter, the layer and both shapes on a mismatch."""
    per_sample = [tuple(a.shape[1:]) for a in data.inputs]
    shape = per_sample if len(per_sample) > 1 else per_sample[0]
    rng = ShapeRng()
    try:
        spec, out = model.build(rng, shape)
    except ApsiError as e:
        hint = _rank_hint(model, shape)
        raise ApsiError(f"{fn}: {e.message} (inputs of shape {fmt(_full(data.inputs))}){hint}") from None
    if not isinstance(params, Record | list | tuple | dict) and not isinstance(params, Tensor):
        raise ApsiError(f"{fn}: params must be the parameter tree from model.init(seed=0), "
                        f"not {show(params, True)}")
    want = tree.named_leaves(spec) if tree.leaves(spec) else []
    have = tree.named_leaves(params) if tree.leaves(params) else []
    for name, leaf in have:
        if type(leaf) is not Tensor:
            raise ApsiError(f"{fn}: parameter {name} is {show(leaf, True)}, not a tensor")
    want_d, have_d = dict(want), dict(have)
    missing = [n for n, _ in want if n not in have_d]
    extra = [n for n, _ in have if n not in want_d]
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing[:5]))
        if extra:
            parts.append("unexpected " + ", ".join(extra[:5]))
        raise ApsiError(f"{fn}: the parameters do not have the model's structure ({'; '.join(parts)}); "
                        f"make them with model.init(seed=0) for this model")
    for name, s in want:
        got = tuple(have_d[name].shape)
        if got != s.shape:
            layer = _layer_of(rng.trace, name)
            raise ApsiError(f"{fn}: parameter {name} has shape {list(got)} but {layer} needs "
                            f"{list(s.shape)} for inputs of per-sample shape {fmt(shape)}; the data and "
                            f"the model disagree (or the parameters belong to another model)")
    return out


def _rank_hint(model, shape):
    """Why the shapes may disagree, when the model knows its per-sample input and the data has
    another number of axes (most often one sample given without its batch axis)."""
    known = model.known_input()
    if not isinstance(known, tuple) or not isinstance(shape, tuple) or len(known) == len(shape):
        return ""
    batch = "[N, " + fmt(known)[1:]
    hint = f"; the model takes per-sample inputs {fmt(known)}, so batches of shape {batch}"
    if len(shape) == len(known) - 1:
        hint += ": give one sample as a batch of one, [x]"
    return hint


def _layer_of(trace, name):
    best = ("", None)
    for path, layer, *_ in trace:
        if (name == path or name.startswith(path + ".") or path == "") and len(path) >= len(best[0]):
            best = (path, layer)
    layer = best[1]
    if layer is None:
        return "the model"
    return f"layer {layer!r}" + (f" at {best[0]}" if best[0] else "")


def _full(arrays):
    return [tuple(a.shape) for a in arrays] if len(arrays) > 1 else tuple(arrays[0].shape)


# --- data ---------------------------------------------------------------------------------------


def as_array(fn, arg, value):
    if type(value) is Tensor:
        return value.data
    if isinstance(value, np.ndarray):
        return value
    try:
        arr = np.asarray(to_plain(value))
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ApsiError(f"{fn}: {arg} must be a tensor or a (nested) list of numbers of equal lengths, "
                        f"not {show(value, True) if not isinstance(value, list) else 'a ragged list'}")
    return arr


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
        return [as_array(fn, f"{arg}[{i}]", v) for i, v in enumerate(value)]
    return [as_array(fn, arg, value)]


def _data(fn, model, inputs, targets, mask, several_in, several_out, loss, need_targets):
    xs = _arrays(fn, "inputs", inputs, several_in, _input_count(model))
    ids = wants_ids(model)
    for i, a in enumerate(xs):
        if a.ndim == 0:
            raise ApsiError(f"{fn}: inputs must have a batch axis (one row per sample), got a scalar")
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
        ys = _arrays(fn, "targets", targets, several_out, n_out)
        for a in ys:
            if a.ndim == 0 or len(a) != n:
                raise ApsiError(f"{fn}: inputs and targets have different lengths ({n} inputs, "
                                f"{len(a) if a.ndim else 0} targets); give one target per input row")
    elif need_targets:
        raise ApsiError(f"{fn}: targets are missing: fit(model, params, inputs, targets, loss=...)")
    for arg, arrays in (("inputs", xs), ("targets", ys or [])):
        for i, a in enumerate(arrays):
            _check_finite(fn, arg if len(arrays) == 1 else f"{arg}[{i}]", a)
    return Data(inputs=xs, targets=ys, n=n, mask=_mask(fn, mask, n, xs))


def _check_finite(fn, arg, a):
    """NaN or inf in the data is named before training (row and column), not reported later as a
    loss that "became NaN" with advice about the learning rate."""
    if a.dtype.kind != "f":
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
    m = as_array(fn, "mask", mask)
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
                        f"{fmt(_full(xs)) if len(xs) > 1 else list(xs[0].shape)}; a sequence mask is "
                        "[N, T] (true = a real step) for inputs [N, T, ...], a node mask [N]")
    return m


def _check_targets(fn, loss, data, out_shape, several_out):
    if data.targets is None or loss == "vae":
        return
    outs = out_shape if several_out else [out_shape]
    check = _target if isinstance(loss, str) else _custom_target
    for i, (y, out) in enumerate(zip(data.targets, outs, strict=True)):
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


def _val(model, params, val, several_in, several_out, loss, out_shape, graph):
    if val is None:
        return None
    if isinstance(val, Record):
        fields = vars(val)
        if set(fields) - {"x", "y", "mask"} or not {"x", "y"} <= set(fields):
            raise ApsiError("fit: val as a record needs the fields x and y (and optionally mask), e.g. "
                            f"val={{x: x_val, y: y_val, mask: m_val}}; got fields {', '.join(fields)}")
        val = [fields["x"], fields["y"]] + ([fields["mask"]] if "mask" in fields else [])
    if not isinstance(val, list | tuple) or len(val) not in (2, 3):
        raise ApsiError("fit: val must be [inputs, targets] or [inputs, targets, mask] (validation data), "
                        "e.g. val=[x_val, y_val]")
    if graph is not None:
        raise ApsiError("fit: val= is not used with graph=: mark the validation nodes in a second "
                        "mask and call predict")
    mask = val[2] if len(val) == 3 else None
    data = _data("fit (val)", model, val[0], val[0] if val[1] is None else val[1], mask,
                 several_in, several_out, loss, need_targets=True)
    check_params("fit (val)", model, params, data)
    _check_targets("fit (val)", loss, data, out_shape, several_out)
    return data


# --- the other options ------------------------------------------------------------------------


def _loss(model, loss):
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


def _optimizer(opt):
    if opt is None:
        opt = "adam"
    if isinstance(opt, str):
        if opt not in OPTIMIZERS:
            raise ApsiError(f"fit: {unknown('optimizer', opt, OPTIMIZERS)}")
        return OPTIMIZERS[opt]()
    if isinstance(opt, optim.Optimizer):
        fresh = copy.copy(opt)          # fit never changes the caller's optimizer, so calls repeat
        fresh.steps, fresh._state, fresh._names = 0, None, None
        return fresh
    raise ApsiError(f"fit: opt must be an optimizer (adam(lr=1e-3), ...) or a name "
                    f"({', '.join(OPTIMIZERS)}), not {show(opt, True)}")


def _schedule(schedule):
    if schedule is None or callable(schedule):
        return schedule
    raise ApsiError(f"fit: schedule must be a function fn(step) => lr, e.g. "
                    f"fn(s) => cosine_lr(s, 1000, base=1e-3), not {show(schedule, True)}")


def _positive(fn, arg, value):
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ApsiError(f"{fn}: {arg} must be a positive int, got {show(value, True)}")


def _batch_size(fn, value):
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ApsiError(f"{fn}: batch_size must be a positive int (samples per step), got {show(value, True)}")


def _seed(value):
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ApsiError(f"fit: seed must be an int >= 0, got {show(value, True)}")


def _clip(value):
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise ApsiError(f"fit: clip must be a positive number (the largest global gradient norm), "
                    f"got {show(value, True)}")


def _verbose(value):
    if value is None:
        return sys.stdout.isatty()
    if isinstance(value, bool):
        return value
    raise ApsiError(f"fit: verbose must be true or false, got {show(value, True)}")


def check_backend(fn, backend):
    if backend not in BACKENDS:
        raise ApsiError(f"{fn}: {unknown('backend', backend, BACKENDS)}")


def check_numpy_options(fn, plan, why=""):
    """device/precision/compile make sense on torch only; on NumPy only their neutral values pass."""
    if plan.device not in (None, "auto", "cpu", "numpy"):
        raise ApsiError(f'{fn}: device="{plan.device}" needs backend="torch"{why}; the NumPy backend runs '
                        'on the CPU (device="cpu")')
    if plan.precision not in (None, "fp64"):
        raise ApsiError(f'{fn}: precision="{plan.precision}" needs backend="torch"{why}; the NumPy backend '
                        'computes in float64 (precision="fp64")')
    if plan.compile not in (False, None):
        raise ApsiError(f"{fn}: compile=true needs backend=\"torch\"{why}")

