"""Sequences and curves (issue 35): logspace, geomspace, cummax, cummin, convolve, interp, trapezoid.

logspace, geomspace and convolve are ops with their rules in toolbox_vjps.py; cummax/cummin pick
elements with take_along and interp/trapezoid are made of differentiable ops, so their gradients
follow.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd import reduce as _reduce
from ..autograd.foreign import Foreign
from ..autograd.ops import apply, where
from ..autograd.shape import concat, getitem, reshape, take_along
from ..autograd.tensor import Tensor, as_tensor
from .elementwise import mod
from .scans import axis_of, diff, scan_input

# --- logspace, geomspace ---------------------------------------------------------------------------


def _number(name, arg, v):
    """A number argument that takes no gradient (base, period): a number or a one-element tensor."""
    if type(v) is Tensor and v.size == 1:
        return float(v.data)
    if type(v) is bool or not isinstance(v, int | float | np.integer | np.floating):
        raise ApsiError(f"{name}: {arg} must be a number, got {v!r}")
    return float(v)


def _num(name, num):
    if type(num) is not int or num < 0:
        raise ApsiError(f"{name}: num must be an int >= 0, got {num!r}")
    return num


def _end(name, arg, v):
    """start or stop as a 0-d tensor (a number, or a one-element tensor that keeps its gradient)."""
    if type(v) is Tensor:
        if v.size != 1:
            raise ApsiError(f"{name}: {arg} must be a number or a one-element tensor, got shape {v.shape}")
        return reshape(v, []) if v.ndim else v
    return Tensor(np.float64(_number(name, arg, v)))


def fractions(num, endpoint):
    """Where each of `num` points sits between start (0) and stop (1), as numpy.linspace spaces them."""
    div = (num - 1) if endpoint else num
    return np.arange(num) / div if div > 0 else np.zeros(num)


def _spaced(name, numpy_fn, start, stop, params):
    try:
        start, stop = as_tensor(start, name, "start"), as_tensor(stop, name, "stop")
    except Foreign:
        return foreign.call(name, start, stop, **params)
    start, stop = _end(name, "start", start), _end(name, "stop", stop)
    return apply(name, lambda s, e, **p: numpy_fn(s, e, **p), (start, stop), params)


def logspace(start, stop, num=50, endpoint=True, base=10.0):
    """base ** linspace(start, stop, num): `num` values evenly spaced on a log scale; differentiable
    in start and stop."""
    params = {"num": _num("logspace", num), "endpoint": bool(endpoint),
              "base": _number("logspace", "base", base)}
    return _spaced("logspace", np.logspace, start, stop, params)


def geomspace(start, stop, num=50, endpoint=True):
    """`num` values from start to stop in a geometric progression (each a constant ratio from the
    last); start and stop non-zero and of one sign; differentiable in both."""
    params = {"num": _num("geomspace", num), "endpoint": bool(endpoint)}
    ends = [float(v.data) if type(v) is Tensor and v.size == 1 else v for v in (start, stop)]
    if all(isinstance(v, float | int) for v in ends):
        a, b = ends
        if a == 0 or b == 0:
            raise ApsiError("geomspace: start and stop must not be 0 (a geometric sequence cannot include 0)")
        if (a < 0) != (b < 0):
            raise ApsiError(f"geomspace: start={a:g} and stop={b:g} have different signs, so no real "
                            "geometric sequence joins them (NumPy gives NaN there)")
    return _spaced("geomspace", np.geomspace, start, stop, params)


# --- cummax, cummin ------------------------------------------------------------------------------------

def _running(name, accumulate):
    def scan(x, axis=None):
        x, axis = scan_input(name, x, axis)
        if x is None:
            return axis
        return take_along(x, running_index(x.data, axis, accumulate), axis)

    scan.__name__ = scan.__qualname__ = name
    word = "largest" if accumulate is np.maximum else "smallest"
    scan.__doc__ = (f"The running {word} value along `axis` (none: over the flattened tensor), as "
                    f"numpy.{accumulate.__name__}.accumulate; NaN carries on. The gradient goes to the "
                    "element each output is (on ties the latest, as torch.cum" + name[3:] + ").")
    return scan


def running_index(d, axis, accumulate):
    """For each position, the index of the element that is the running extreme there: the latest
    one on ties and the latest NaN once one is met (torch's cummax/cummin indices)."""
    run = accumulate.accumulate(d, axis=axis)
    shape = [1] * d.ndim
    shape[axis] = d.shape[axis]
    positions = np.broadcast_to(np.arange(d.shape[axis]).reshape(shape), d.shape)
    hit = (d == run) | (np.isnan(d) if d.dtype.kind == "f" else False)
    return np.maximum.accumulate(np.where(hit, positions, 0), axis=axis) if d.size else positions


cummax = _running("cummax", np.maximum)
cummin = _running("cummin", np.minimum)


# --- convolve --------------------------------------------------------------------------------------------

CONVOLVE_MODES = ("full", "same", "valid")


def convolve(a, v, mode="full"):
    """The discrete linear convolution of two 1-D tensors (numpy.convolve): out[k] = sum_i a[i] v[k-i].
    mode "full" (length n + m - 1), "same" (max(n, m), centred) or "valid" (where they overlap fully)."""
    try:
        a = as_tensor(a, "convolve", "a")
        v = as_tensor(v, "convolve", "v")
    except Foreign:
        return foreign.call("convolve", a, v, mode=mode)
    if mode not in CONVOLVE_MODES:
        raise ApsiError(f"convolve: mode must be one of {', '.join(CONVOLVE_MODES)}, not {mode!r}")
    for arg, t in (("a", a), ("v", v)):
        if t.ndim != 1 or t.size == 0:
            raise ApsiError(f"convolve: {arg} must be a non-empty 1-D tensor, got shape {t.shape}")
    return apply("convolve", lambda x, y, mode: np.convolve(x, y, mode), (a, v), {"mode": mode})


# --- interp -----------------------------------------------------------------------------------------------

def interp(x, xp, fp, left=None, right=None, period=None):
    """The piecewise-linear interpolant through (xp, fp) at x (numpy.interp): xp increasing, values
    left of xp[0] are `left` (default fp[0]), right of xp[-1] `right` (default fp[-1]); `period`
    makes it periodic. Differentiable in x, xp and fp; at a knot x's gradient is the slope on its
    right (at xp[-1], the slope on its left)."""
    values = (x, xp, fp, left, right)
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in values):
        return foreign.call("interp", x, xp, fp, left=left, right=right, period=period)
    x, xp, fp = (as_tensor(v, "interp", arg) for v, arg in ((x, "x"), (xp, "xp"), (fp, "fp")))
    if xp.ndim != 1 or fp.ndim != 1 or xp.size != fp.size or xp.size == 0:
        raise ApsiError(f"interp: xp and fp must be 1-D of one non-zero length, got shapes {xp.shape} "
                        f"and {fp.shape}")
    if period is not None:
        x, xp, fp = _periodic(x, xp, fp, _number("interp", "period", period))
        left = right = None
    return _interp(x, xp, fp, left, right)


def _periodic(x, xp, fp, period):
    """numpy.interp's period: everything taken modulo the period, xp sorted, one point wrapped on
    each side."""
    if period == 0:
        raise ApsiError("interp: period must not be 0")
    period = abs(period)
    x, xp = mod(x, period), mod(xp, period)
    order = np.argsort(xp.data, kind="stable")
    xp, fp = getitem(xp, order), getitem(fp, order)
    xp = concat([getitem(xp, slice(-1, None)) - period, xp, getitem(xp, slice(0, 1)) + period])
    fp = concat([getitem(fp, slice(-1, None)), fp, getitem(fp, slice(0, 1))])
    return x, xp, fp


def _interp(x, xp, fp, left, right):
    n = xp.size
    first, last = getitem(fp, 0), getitem(fp, n - 1)
    if n == 1:
        out = where(x.data == xp.data[0], first, np.nan)
    else:
        j = np.clip(np.searchsorted(xp.data, x.data, side="right") - 1, 0, n - 2)
        at_last = x.data == xp.data[-1]
        j = np.where(at_last, n - 2, j)
        x0, x1, f0, f1 = getitem(xp, j), getitem(xp, j + 1), getitem(fp, j), getitem(fp, j + 1)
        slope = (f1 - f0) / (x1 - x0)
        # NumPy's order: slope * (x - xp[j]) + fp[j]; from the right end where that is NaN (an inf
        # in fp) and at xp[-1] itself, so the value there is fp[-1] exactly
        out = slope * (x - x0) + f0
        from_right = at_last | (np.isnan(out.data) & ~np.isnan(x.data))
        if from_right.any():
            out = where(from_right, slope * (x - x1) + f1, out)
        knot = (x.data == x0.data) & ~np.isfinite(slope.data)
        if knot.any():                       # an infinite slope: NumPy gives fp[j] at the knot itself
            out = where(knot, f0, out)
    lo = first if left is None else as_tensor(left, "interp", "left")
    hi = last if right is None else as_tensor(right, "interp", "right")
    out = where(x.data < xp.data[0], lo, out)
    return where(x.data > xp.data[-1], hi, out)


# --- trapezoid -------------------------------------------------------------------------------------------

def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y along `axis` by the trapezoidal rule (numpy.trapezoid): sample points x
    (1-D, or y's shape), or a spacing dx. Differentiable in y and x."""
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in (y, x)):
        return foreign.call("trapezoid", y, x=x, dx=dx, axis=axis)
    y = as_tensor(y, "trapezoid", "y")
    axis = axis_of("trapezoid", y, axis)
    if x is None:                         # a tensor dx keeps its gradient
        d = _end("trapezoid", "dx", dx)
    else:
        x = as_tensor(x, "trapezoid", "x")
        if x.ndim == 1 and x.shape[0] == y.shape[axis]:
            shape = [1] * y.ndim
            shape[axis] = -1
            d = reshape(diff(x), shape)
        elif x.shape == y.shape:
            d = diff(x, axis=axis)
        else:
            raise ApsiError(f"trapezoid: x must be 1-D with {y.shape[axis]} points (y's axis {axis}) or "
                            f"of y's shape {y.shape}, got shape {x.shape}")
    head = (slice(None),) * axis
    pairs = getitem(y, head + (slice(1, None),)) + getitem(y, head + (slice(None, -1),))
    return _reduce.sum(d * pairs / 2.0, axis)
