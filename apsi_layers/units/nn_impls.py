"""nn's functions on quantities: registered with nn/foreign.py, so `sqrt(q)`, `mean(q)`, `tensor * q`
reach these versions while nn's own fast paths stay untouched.

The rules: sqrt halves exponents; exp/log/sin/... need a dimensionless argument (angles convert to
rad); sums, means, extremes, shapes and indexing keep the unit; matmul multiplies units; where,
concat, stack, clip, maximum and minimum take their arguments in the first one's unit.
"""

from . import registry as R
from .quantity import Quantity, add, div, matmul, mul, plain, power, same_unit, split, sub
from .registry import Unit

_NN = None


def _nn():
    global _NN
    if _NN is None:
        from apsi_layers import nn

        _NN = nn
    return _NN


_ATTR = {"round": "round_"}      # op names whose nn function has another name


def _keep(op):
    """f(q, ...) = Quantity(f(magnitude, ...), unit): sums, extremes, shapes, abs, relu."""
    name = _ATTR.get(op, op)

    def impl(x, *args, **kwargs):
        if type(x) is Quantity:             # the common case, first
            return Quantity(getattr(_NN or _nn(), name)(x._m, *args, **kwargs), x._u)
        m, u = split(x)
        out = getattr(_nn(), name)(m, *args, **kwargs)
        return out if u is None else Quantity(out, u)
    return impl


def _dimensionless(name):
    """f(x) for functions whose argument must be a plain number (exp, log, sin, softmax, ...)."""
    def impl(x, *args, **kwargs):
        args = [plain(a, name, "every argument") for a in args]
        return getattr(_nn(), name)(plain(x, name), *args, **kwargs)
    return impl


def _plain_result(name):
    """argmax/argmin: indices, whatever the unit."""
    def impl(x, *args, **kwargs):
        return getattr(_nn(), name)(split(x)[0], *args, **kwargs)
    return impl


def sqrt(x):
    m, u = split(x)
    out = _nn().sqrt(m)
    return out if u is None else Quantity(out, R.power(u, 0.5))


def _pairwise(name):
    def impl(a, b):
        am, bm, u = same_unit(a, b, name)
        out = getattr(_nn(), name)(am, bm)
        return out if u is None else Quantity(out, u)
    return impl


def where(cond, a, b):
    am, bm, u = same_unit(a, b, "where")
    out = _nn().where(plain(cond, "where", "cond"), am, bm)
    return out if u is None else Quantity(out, u)


def clip(x, lo=None, hi=None):
    m, u = split(x)
    lo = None if lo is None else same_unit(x, lo, "clip")[1]
    hi = None if hi is None else same_unit(x, hi, "clip")[1]
    out = _nn().clip(m, lo, hi)
    return out if u is None else Quantity(out, u)


def _join(name):
    def impl(xs, axis=0):
        first = xs[0]
        mags = [split(first)[0]] + [same_unit(first, x, name)[1] for x in xs[1:]]
        out = getattr(_nn(), name)(mags, axis=axis)
        u = split(first)[1]
        return out if u is None else Quantity(out, u)
    return impl


def mse(pred, target):
    pm, tm, u = same_unit(pred, target, "mse")
    out = _nn().mse(pm, tm)
    return out if u is None else Quantity(out, R.power(u, 2))


def mae(pred, target):
    pm, tm, u = same_unit(pred, target, "mae")
    out = _nn().mae(pm, tm)
    return out if u is None else Quantity(out, u)


def _missing(fn):
    return (f"nn.{fn} does not take values with units: convert with magnitude(q, \"unit\") first "
            "(docs/units.md lists what works on quantities)")


IMPLS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": power, "matmul": matmul,
    "sqrt": sqrt, "where": where, "clip": clip, "mse": mse, "mae": mae,
    "maximum": _pairwise("maximum"), "minimum": _pairwise("minimum"),
    "concat": _join("concat"), "stack": _join("stack"),
    **{n: _keep(n) for n in ("neg", "abs", "relu", "sum", "mean", "max", "min", "reshape",
                             "expand_dims", "transpose", "broadcast_to", "take_along",
                             # NumPy's toolbox (issue 19): the value keeps its unit
                             "round", "floor", "ceil", "trunc", "std", "median", "quantile",
                             "percentile", "cumsum", "diff", "nansum", "nanmean", "sort", "flip",
                             "roll", "tile", "repeat", "squeeze")},
    **{n: _dimensionless(n) for n in ("exp", "log", "log1p", "tanh", "sigmoid", "softplus", "gelu",
                                      "sin", "cos", "logsumexp", "softmax", "log_softmax",
                                      "cross_entropy", "bce", "huber")},
    **{n: _plain_result(n) for n in ("argmax", "argmin")},
}


def install():
    """Let nn's functions accept quantities and units (idempotent)."""
    from apsi_layers.nn import foreign

    if Quantity not in foreign.TYPES:
        foreign.register((Quantity, Unit), IMPLS, "units", missing=_missing)


