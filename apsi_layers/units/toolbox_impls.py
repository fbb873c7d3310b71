"""Issue 35's nn functions on quantities (nn/numlib/toolbox.py says which rule each follows), pint's rules:
levels keep their unit (nanmax, nanmedian, average, cummax of °C are °C); spreads are differences
(nanstd and ptp of °C are Δ°C, nanvar and cov Δ°C², as pint's subtraction gives); products multiply
units (convolve, trapezoid: y's unit times x's, refused for an offset temperature as pint does);
special functions need dimensionless arguments; indices and correlations are plain numbers.
"""

from . import registry as R
from .nn_impls import _dimensionless, _keep, _nn, _plain_result, _spread, delta
from .quantity import make, plain, same_unit, split


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    am, au = split(a)
    wm, wu = (None, None) if weights is None else split(weights)
    out = _nn().average(am, axis=axis, weights=wm, returned=returned, keepdims=keepdims)
    if returned:
        return [make(out[0], au), make(out[1], wu)]
    return make(out, au)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    mm, u = split(m)
    if y is not None:       # one matrix holds one unit: y's values are taken in m's unit
        mm, y, u = same_unit(m, y, "cov")
    out = _nn().cov(mm, y, rowvar=rowvar, bias=bias, ddof=ddof, fweights=_magnitude(fweights),
                    aweights=_magnitude(aweights))
    return make(out, None if u is None else R.power(delta(u), 2))


def _magnitude(v):
    return None if v is None else split(v)[0]


def corrcoef(x, y=None, rowvar=True):
    # correlations are invariant to each variable's scale and offset: every unit drops out
    return _nn().corrcoef(split(x)[0], _magnitude(y), rowvar=rowvar)


def convolve(a, v, mode="full"):
    am, au = split(a)
    vm, vu = split(v)
    out = _nn().convolve(am, vm, mode)
    return make(out, vu if au is None else au if vu is None else R.mul(au, vu))


def trapezoid(y, x=None, dx=1.0, axis=-1):
    ym, yu = split(y)
    step = dx if x is None else x
    sm, su = split(step)
    if yu is not None or su is not None:     # a sum of y * dx: refused for °C, as pint refuses it
        one = R.dimensionless_unit()
        unit = R.mul(yu or one, su or one)
    out = _nn().trapezoid(ym, x=None if x is None else sm, dx=sm if x is None else 1.0, axis=axis)
    return make(out, unit) if yu is not None or su is not None else out


def interp(x, xp, fp, left=None, right=None, period=None):
    xpm, xm, _ = same_unit(xp, x, "interp")
    if period is not None:
        period = same_unit(xp, period, "interp")[1]
    fpm, fu = split(fp)
    left = None if left is None else same_unit(fp, left, "interp")[1]
    right = None if right is None else same_unit(fp, right, "interp")[1]
    return make(_nn().interp(xm, xpm, fpm, left=left, right=right, period=period), fu)


def digitize(x, bins, right=False):
    bm, xm, _ = same_unit(bins, x, "digitize")
    return _nn().digitize(xm, bm, right=right)


IMPLS = {
    **{n: _keep(n) for n in ("nanmax", "nanmin", "nanmedian", "nanquantile", "cummax", "cummin")},
    **{n: _plain_result(n) for n in ("nanargmax", "nanargmin", "nonzero", "argwhere")},
    **{n: _dimensionless(n) for n in ("arccosh", "logaddexp", "gammaln", "erfc", "logit", "expit",
                                      "digamma")},
    "polygamma": lambda n, x: _nn().polygamma(n, plain(x, "polygamma")),
    "nanstd": _spread("nanstd", 1), "ptp": _spread("ptp", 1), "nanvar": _spread("nanvar", 2),
    "average": average, "cov": cov, "corrcoef": corrcoef, "convolve": convolve, "trapezoid": trapezoid,
    "interp": interp, "digitize": digitize,
}
