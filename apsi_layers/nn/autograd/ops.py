"""The differentiable ops: forward in NumPy, recorded on the active tape when an input is on it.

Hot paths (unary and binary elementwise ops, which Tensor's operators call directly) are written out
by hand: a Python number stays a number, a constant input is never wrapped twice, and nothing is
recorded when no tape is active or no input is on it. Gradient rules live in vjps.py.
"""

import numpy as np

from apsi_lang.errors import ApsiError

from . import foreign
from . import xp as _raw
from .foreign import Foreign
from .tape import STATE
from .tensor import Tensor, as_tensor, plain_array
from .vjps import RULES

_NUMBER = (float, int)


def _unary(name, fwd, doc):
    rules = RULES[name]

    def op(x):
        if type(x) is not Tensor:
            try:
                x = as_tensor(x, name)
            except Foreign:
                return foreign.call(name, x)
        d = x.data
        out = fwd(d)
        tape = STATE.tape
        if tape is not None and x.tape is tape:
            return tape.record(rules, (x.node,), (d,), out, None, (x,))
        return Tensor(out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def operand(x, fn, arg):
    """(x, its data): numbers stay numbers (NumPy broadcasts them for free)."""
    if type(x) is Tensor:
        return x, x.data
    if type(x) in _NUMBER:
        return x, x
    x = as_tensor(x, fn, arg)
    return x, x.data


def _binary(name, fwd, doc):
    rules = RULES[name]

    def op(a, b):
        try:
            a, ad = operand(a, name, "a")
            b, bd = operand(b, name, "b")
        except Foreign:
            return foreign.call(name, a, b)
        try:
            out = fwd(ad, bd)
        except ValueError:
            raise ApsiError(broadcast_message(name, ad, bd)) from None
        tape = STATE.tape
        if tape is not None:
            pa = a.node if type(a) is Tensor and a.tape is tape else -1
            pb = b.node if type(b) is Tensor and b.tape is tape else -1
            if pa >= 0 or pb >= 0:
                return tape.record(rules, (pa, pb), (ad, bd), out, None, (a, b))
        return Tensor(out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def broadcast_message(name, a, b):
    sa, sb = np.shape(a), np.shape(b)
    return (f"{name}: shapes {sa} and {sb} do not broadcast: compared from the last axis, each pair "
            f"of sizes must be equal or one of them 1; reshape one argument (e.g. x[:, None])")


def apply(name, fwd, args, params, rules=None):
    """The general path: any number of tensor arguments plus static `params`."""
    datas = tuple(a.data if type(a) is Tensor else a for a in args)
    out = fwd(*datas, **params)
    tape = STATE.tape
    if tape is not None:
        parents = tuple(a.node if type(a) is Tensor and a.tape is tape else -1 for a in args)
        if max(parents) >= 0:
            return tape.record(rules or RULES[name], parents, datas, out, params or None, args)
    return Tensor(out)


# --- elementwise --------------------------------------------------------------------------------

_GC, _GA = np.sqrt(2.0 / np.pi), 0.044715


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(_GC * (x + _GA * x * x * x)))


neg = _unary("neg", np.negative, "-x")
exp = _unary("exp", np.exp, "e**x elementwise")
log = _unary("log", np.log, "natural logarithm elementwise")
log1p = _unary("log1p", np.log1p, "log(1 + x), accurate for small x")
sqrt = _unary("sqrt", np.sqrt, "square root elementwise")
abs = _unary("abs", np.abs, "absolute value elementwise")  # noqa: A001
tanh = _unary("tanh", np.tanh, "hyperbolic tangent elementwise")
sigmoid = _unary("sigmoid", _raw.sigmoid, "1 / (1 + exp(-x)), stable on both tails")
softplus = _unary("softplus", lambda x: np.logaddexp(0.0, x), "log(1 + exp(x)), stable")
relu = _unary("relu", lambda x: np.maximum(x, 0.0), "max(x, 0) elementwise")
gelu = _unary("gelu", _gelu, "GELU, tanh approximation (torch's approximate='tanh')")
sin = _unary("sin", np.sin, "sine elementwise")
cos = _unary("cos", np.cos, "cosine elementwise")

add = _binary("add", np.add, "a + b with broadcasting")
sub = _binary("sub", np.subtract, "a - b with broadcasting")
mul = _binary("mul", np.multiply, "a * b with broadcasting")
div = _binary("div", np.true_divide, "a / b with broadcasting")
power = _binary("pow", np.power, "a ** b with broadcasting")
maximum = _binary("maximum", np.maximum, "elementwise maximum of a and b")
minimum = _binary("minimum", np.minimum, "elementwise minimum of a and b")


def clip(x, lo=None, hi=None):
    """x limited to [lo, hi] (either bound may be none, a number or a tensor that broadcasts to x's
    shape); the gradient is 0 outside. The bounds are constants: no gradient flows to them."""
    try:
        x = as_tensor(x, "clip")
    except Foreign:
        return foreign.call("clip", x, lo, hi)
    lo, hi = _bound(x, lo, "lo"), _bound(x, hi, "hi")
    return apply("clip", lambda d, lo, hi: np.clip(d, lo, hi), (x,), {"lo": lo, "hi": hi})


def _bound(x, b, arg):
    if b is None or type(b) in _NUMBER:
        return b
    d = as_tensor(b, "clip", arg).data
    try:
        fits = np.broadcast_shapes(x.shape, d.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ApsiError(f"clip: {arg} has shape {d.shape}, which does not broadcast to x's shape "
                        f"{x.shape}; give a number or a tensor of x's shape")
    return d


def where(cond, a, b):
    """a where cond is true, else b (broadcasting); differentiable in a and b."""
    if foreign.TYPES and any(isinstance(v, foreign.TYPES) for v in (cond, a, b)):
        return foreign.call("where", cond, a, b)
    c = plain_array(cond, "where", "cond", dtype=bool)
    a, _ = operand(a, "where", "a")
    b, _ = operand(b, "where", "b")
    try:
        return apply("where", lambda x, y, cond: np.where(cond, x, y), (a, b), {"cond": c})
    except ValueError:
        raise ApsiError(f"where: cond {c.shape}, a {np.shape(_data(a))} and b {np.shape(_data(b))} "
                        "do not broadcast together") from None


def _data(x):
    return x.data if type(x) is Tensor else x


def matmul(a, b):
    """Matrix product with NumPy's rules (1-D vectors, batched leading axes)."""
    try:
        a = as_tensor(a, "matmul", "a")
        b = as_tensor(b, "matmul", "b")
    except Foreign:
        return foreign.call("matmul", a, b)
    sa, sb = a.data.shape, b.data.shape
    if not sa or not sb:
        raise ApsiError(f"matmul: both arguments need at least one axis, got shapes {sa} and {sb}; "
                        "use * to scale by a number")
    k = sb[0] if len(sb) == 1 else sb[-2]
    if sa[-1] != k:
        raise ApsiError(f"matmul: shapes {sa} and {sb} do not align: the last axis of a ({sa[-1]}) "
                        f"must equal the {'first' if len(sb) <= 2 else 'second-to-last'} of b ({k})")
    try:
        return apply("matmul", np.matmul, (a, b), {})
    except ValueError:
        raise ApsiError(f"matmul: the batch axes of {sa} and {sb} do not broadcast") from None
