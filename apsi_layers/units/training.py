"""fit and predict with quantities: inputs and targets go to the layers as SI magnitudes (weights
carry no units), on both backends.

On NumPy a loss written in Apsi receives predictions and targets as quantities in the targets' SI
unit (so `mean((pred - target) ** 2)` is checked like any other arithmetic); on torch it receives
plain SI numbers, as the layers do. predict(..., unit="km/h") reads the output as SI and converts it.
"""

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record

from . import registry as R
from .quantity import Quantity, convert, make


def adapt_fit(inputs, targets, options):
    """fit's hook (apsi_layers/fit_hooks.py): quantities become SI magnitudes; a loss written in Apsi
    receives quantities."""
    if any_quantity(inputs, targets, options.get("val")) or callable(options.get("loss")):
        return fit_args(inputs, targets, options)
    return inputs, targets, options


def adapt_predict(x, options):
    """predict's hook: quantities in, and unit= read as the output's unit."""
    if not (any_quantity(x) or "unit" in options):
        return x, options, _same
    x, options, unit = predict_args(x, options)
    return x, options, _same if unit is None else (lambda y: output_in(y, unit))


def _same(y):
    return y


def _si(x):
    """(x as SI magnitude, its SI unit or None); lists and tuples of inputs are looked into."""
    if type(x) is Quantity:
        base = R.base(x._u)
        return convert(x, base, "fit"), base
    if type(x) is list or type(x) is tuple:
        pairs = [_si(v) for v in x]
        if any(u is not None for _, u in pairs) and any(type(v) is Quantity for v in x):
            return type(x)(m for m, _ in pairs), [u for _, u in pairs]
    return x, None


def any_quantity(*values):
    for v in values:
        if type(v) is Quantity:
            return True
        if (type(v) is list or type(v) is tuple) and any(type(w) is Quantity for w in v):
            return True
        if type(v) is Record and any_quantity(*vars(v).values()):
            return True
    return False


def fit_args(inputs, targets, options):
    """(inputs, targets, options) with quantities as SI magnitudes; an Apsi loss gets SI quantities."""
    inputs, _ = _si(inputs)
    targets, target_unit = _si(targets)
    options = dict(options)
    val = options.get("val")
    if type(val) is Record:
        options["val"] = Record(**{k: _si(v)[0] for k, v in vars(val).items()})
    elif type(val) is list or type(val) is tuple:
        options["val"] = [_si(v)[0] for v in val]
    loss = options.get("loss")
    if callable(loss):
        options["loss"] = _loss_in(loss, target_unit if isinstance(target_unit, R.Unit) else None)
    return inputs, targets, options


def _loss_in(loss, unit):
    """The Apsi loss, called with nn tensors wrapped in the targets' SI unit (NumPy backend, when
    the targets had one); a loss with a unit is minimised as its SI magnitude."""
    from apsi_layers.nn import Tensor

    def loss_with_units(pred, target):
        if unit is not None and type(pred) is Tensor:   # on torch: plain SI numbers, as the docs say
            pred, target = Quantity(pred, unit), Quantity(target, unit)
        value = loss(pred, target)
        if type(value) is not Quantity:
            return value
        return convert(value, R.base(value._u), "fit")

    loss_with_units.__name__ = getattr(loss, "__name__", "loss")
    return loss_with_units


def predict_args(x, options):
    """(x as SI magnitudes, options without `unit`, the output Unit or None)."""
    x, _ = _si(x)
    options = dict(options)
    unit = options.pop("unit", None)
    if unit is None:
        return x, options, None
    if type(unit) is str:
        unit = R.parse(unit, "predict")
    elif type(unit) is not R.Unit:
        raise ApsiError("predict: unit= must be a unit text such as \"km/h\" or a unit such as u.m")
    return x, options, unit


def output_in(y, unit):
    """The model's SI output as a quantity in `unit`."""
    base = R.base(unit)
    return make(convert(Quantity(y, base), unit, "predict"), unit)
