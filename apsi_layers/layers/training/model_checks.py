"""fit's and predict's checks of the model and its parameter tree: the model builds for the data's
shapes, and the tree has the model's structure and shapes (naming the parameter, the layer, both shapes)."""



from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers.nn.autograd import tree
from apsi_layers.nn.autograd.tensor import Tensor

from ..base import Layer, fmt
from ..init_rng import ShapeRng


def check_model(fn, model):
    if not isinstance(model, Layer):
        raise ApsiError(f"{fn}: the first argument must be a model (a layer such as mlp(2, 3) or "
                        f"sequential(...)), not {show(model, True)}")


def arity(model):
    n_in = input_count(model)
    return n_in > 1, bool(getattr(model, "several_outputs", False))


def input_count(model):
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
        hint = _rank_hint(model, shape, shapes_of(data.inputs))
        raise ApsiError(f"{fn}: {e.message} (inputs of shape {fmt(shapes_of(data.inputs))}){hint}") from None
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
            _check_width(fn, model, want, have_d, shape, data)
            layer = _layer_of(rng.trace, name)
            raise ApsiError(f"{fn}: parameter {name} has shape {list(got)} but {layer} needs "
                            f"{list(s.shape)} for inputs of per-sample shape {fmt(shape)}; the data and "
                            f"the model disagree (or the parameters belong to another model)")
    return out


def _check_width(fn, model, want, have_d, shape, data):
    """Inputs of the wrong width (issue 28): say so in the data's terms, before naming a parameter."""
    expected = _expected_input(model, want, have_d, shape)
    if expected is None or expected == shape:
        return
    given = f"(inputs of shape {fmt(shapes_of(data.inputs))})"
    if len(shape) == 1:
        n = expected[0]
        said = f"the model expects {n} input feature{'s' if n != 1 else ''} per sample and got {shape[0]}"
    else:
        said = f"the model expects inputs of per-sample shape {fmt(expected)} and got {fmt(shape)}"
    batch = "[N, " + fmt(expected)[1:]
    raise ApsiError(f"{fn}: {said} {given}; give inputs of shape {batch}, or use a model made for "
                    f"this data (with its own parameters from model.init)")


def _expected_input(model, want, have_d, shape):
    """The per-sample input the model and its parameters were made for, where it is known: the
    model's own (inputs=, a zoo model), else the input width of a first layer whose weight is
    [inputs, units] (dense)."""
    known = model.known_input()
    if isinstance(known, tuple) and isinstance(shape, tuple) and len(known) == len(shape):
        return tuple(s if k is None else k for k, s in zip(known, shape))
    if not want or not isinstance(shape, tuple) or not shape:
        return None
    name, first = want[0]
    got = tuple(have_d[name].shape)
    if len(got) == 2 == len(first.shape) and first.shape[0] == shape[-1] and got[1] == first.shape[1]:
        return shape[:-1] + (got[0],)
    return None


def _rank_hint(model, shape, full):
    """Why the shapes may disagree, when the model knows its per-sample input and the data has
    another number of axes: one sample given without its batch axis, or sequences of one feature
    without their feature axis ([N, T] where the model takes [T, 1])."""
    known = model.known_input()
    if not isinstance(known, tuple) or not isinstance(shape, tuple) or len(known) == len(shape):
        return ""
    batch = "[N, " + fmt(known)[1:]
    hint = f"; the model takes per-sample inputs {fmt(known)}, so batches of shape {batch}"
    if len(shape) == len(known) - 1 and known[-1] == 1 and _fits(shape, known[:-1]):
        hint += f": reshape(x, {fmt(tuple(full) + (1,))})"
    elif len(shape) == len(known) - 1:
        hint += ": give one sample as a batch of one, [x]"
    return hint


def _fits(shape, known):
    return all(k is None or k == s for s, k in zip(shape, known, strict=True))


def _layer_of(trace, name):
    best = ("", None)
    for path, layer, *_ in trace:
        if (name == path or name.startswith(path + ".") or path == "") and len(path) >= len(best[0]):
            best = (path, layer)
    layer = best[1]
    if layer is None:
        return "the model"
    return f"layer {layer!r}" + (f" at {best[0]}" if best[0] else "")


def shapes_of(arrays):
    return [tuple(a.shape) for a in arrays] if len(arrays) > 1 else tuple(arrays[0].shape)
