"""nn's functions on quantities: registered with nn/autograd/foreign.py, so `sqrt(q)`, `mean(q)`, `tensor * q`
reach these versions while nn's own fast paths stay untouched.

The rules: sqrt halves exponents; exp/log/sin/... need a dimensionless argument (angles convert to
rad); sums, means, extremes, shapes and indexing keep the unit; matmul multiplies units; where,
concat, stack, clip, maximum and minimum take their arguments in the first one's unit.
"""

from apsi_lang.errors import ApsiError

from . import registry as R
from .quantity import Quantity, add, div, make, matmul, mul, plain, power, same_unit, scalable, split, sub
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


def _summed(op):
    """Sums keep the unit, but a sum of offset temperatures is refused, as pint refuses it."""
    name = _ATTR.get(op, op)

    def impl(x, *args, **kwargs):
        m, u = split(x)
        if u is not None and u._offset:
            raise ApsiError(f"{op}: cannot add temperatures in {u._text}: on an offset scale only a "
                            "difference can be added to a temperature (pint refuses it too); take "
                            "mean(t), convert to K first, or sum differences (delta units)")
        out = getattr(_nn(), name)(m, *args, **kwargs)
        return out if u is None else Quantity(out, u)
    return impl


def delta(u):
    """The unit of a difference of two values in u: Δ°C for °C, u itself for a multiplicative unit."""
    return R.additive("-", u, u)[0]


def _spread(op, exponent=1):
    """std, diff, ptp (exponent 1) and var (2): differences of values, so an offset temperature
    gives a delta (Δ°C), as pint's subtraction does, to that power."""
    def impl(x, *args, **kwargs):
        m, u = split(x)
        out = getattr(_nn(), op)(m, *args, **kwargs)
        if u is None:
            return out
        return make(out, delta(u) if exponent == 1 else R.power(delta(u), exponent))
    return impl


def prod(x, axis=None, keepdims=False):
    """The unit to the power of the number of factors multiplied (pint's rule: m³ for three)."""
    m, u = split(x)
    out = _nn().prod(m, axis=axis, keepdims=keepdims)
    if u is None:
        return out
    shape = getattr(m, "shape", ())
    axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
    count = 1
    for a in axes:
        count *= shape[a]
    return make(out, R.power(scalable(u, "multiply"), count))


def _product(op):
    """dot, vdot, inner, outer, tensordot, kron: units multiply, as in a * b."""
    def impl(a, b, *args, **kwargs):
        am, au = split(a)
        bm, bu = split(b)
        out = getattr(_nn(), op)(am, bm, *args, **kwargs)
        if au is None or bu is None:
            return make(out, scalable(au or bu, "multiply"))
        return make(out, R.mul(au, bu))
    return impl


def norm(x, *args, **kwargs):
    """Every norm of q is in q's unit (ord=0, a count, is a plain number); an offset temperature is
    refused (its norm sums its values)."""
    m, u = split(x)
    out = _nn().norm(m, *args, **kwargs)
    ord_ = args[0] if args else kwargs.get("ord")
    if u is None or (ord_ == 0 and type(ord_) is int):
        return out
    return Quantity(out, _summed_unit(u, "norm"))


def _summed_unit(u, op):
    if u._offset:
        raise ApsiError(f"{op}: a temperature in {u._text} is on an offset scale; convert it to K "
                        "first, or use differences (delta units)")
    return u


def _missing(fn):
    return (f"nn.{fn} does not take values with units: convert with magnitude(q, \"unit\") first "
            "(docs/units.md lists what works on quantities)")


IMPLS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": power, "matmul": matmul,
    "sqrt": sqrt, "where": where, "clip": clip, "mse": mse, "mae": mae,
    "maximum": _pairwise("maximum"), "minimum": _pairwise("minimum"),
    "concat": _join("concat"), "stack": _join("stack"),
    **{n: _keep(n) for n in ("neg", "abs", "relu", "mean", "max", "min", "reshape",
                             "expand_dims", "transpose", "broadcast_to", "take_along",
                             # NumPy's toolbox (issue 19): the value keeps its unit
                             "round", "floor", "ceil", "trunc", "median", "quantile",
                             "percentile", "nanmean", "sort", "flip",
                             "roll", "tile", "repeat", "squeeze")},
    # pint's rules for offset temperatures (issue 35): sums refused, spreads are deltas
    **{n: _summed(n) for n in ("sum", "cumsum", "nansum", "trace")},
    "std": _spread("std"), "diff": _spread("diff"), "var": _spread("var", 2),
    "prod": prod, "norm": norm,
    **{n: _product(n) for n in ("dot", "vdot", "inner", "outer", "tensordot", "kron")},
    **{n: _dimensionless(n) for n in ("exp", "log", "log1p", "tanh", "sigmoid", "softplus", "gelu",
                                      "sin", "cos", "logsumexp", "softmax", "log_softmax",
                                      "cross_entropy", "bce", "huber")},
    **{n: _plain_result(n) for n in ("argmax", "argmin")},
}


def install():
    """Let nn's functions accept quantities and units (idempotent)."""
    from apsi_layers.nn.autograd import foreign

    if Quantity not in foreign.TYPES:
        foreign.register((Quantity, Unit), IMPLS, "units", missing=_missing)


