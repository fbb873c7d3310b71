"""The gradient rules: one table, RULES[op] = (VJP for argument 0, VJP for argument 1, ...).

A rule is `rule(xp, g, ans, *args, **params) -> gradient for that argument`, where g is the cotangent
of the op's output `ans`. Rules are written only with operators and `xp.*` functions, and `xp` is
one of two namespaces with the same names (xp.py):

- RAW: plain NumPy on ndarrays. Used for an ordinary first-order backward pass: no tape, no tensors.
- GRAPH: the differentiable ops on tensors. Used when the backward pass is itself being
  differentiated (hessian, grad of grad): every step of the rule is recorded, so reverse over reverse
  works without a second table.

So every rule must stay differentiable: no in-place updates, no raw NumPy calls. Masks from
comparisons are constants, which is right for relu, abs, max and clip (their second derivative is 0
almost everywhere). Only the arguments whose node is on the tape get their rule called, so the
gradient of a constant (an input batch, labels) is never computed.
"""

import math

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _unbroadcast_pair(fa, fb):
    """Rules for a broadcasting binary op from the unreduced gradients fa, fb."""
    return (lambda xp, g, ans, a, b: xp.sum_to(fa(xp, g, ans, a, b), a.shape),
            lambda xp, g, ans, a, b: xp.sum_to(fb(xp, g, ans, a, b), b.shape))


def _pow_exponent(xp, g, ans, a, b):
    # d(a**b)/db = a**b * log(a); defined as 0 where a <= 0 (log undefined; matches torch's choice of
    # not producing NaN for the common case of a constant exponent).
    positive = a > 0
    return g * ans * xp.log(xp.where(positive, a, 1.0)) * positive


def _pow_base(xp, g, ans, a, b):
    # d(a**b)/da = b * a**(b-1). Where b == 0 that is 0 even at a == 0 (0 * 0**-1 would be NaN; torch
    # also gives 0): the base is replaced by 1 there, which keeps every higher derivative finite too.
    if type(b) in (int, float):
        return g * 0.0 * a if b == 0 else g * b * a ** (b - 1)
    return g * b * xp.where(b == 0, 1.0, a) ** (b - 1)


def _gelu_grad(xp, g, ans, x):
    # GELU, tanh form: 0.5 x (1 + tanh(u)), u = c (x + a x^3).
    t = xp.tanh(_GELU_C * (x + _GELU_A * x * x * x))
    du = _GELU_C * (1.0 + 3.0 * _GELU_A * x * x)
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


def _matmul_a(xp, g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:                                   # (..., n) @ (n,) -> (...)
        return xp.expand_dims(g, -1) * b
    if a.ndim == 1:                                   # (n,) @ (..., n, m) -> (..., m)
        return xp.sum_to(xp.matmul(b, xp.expand_dims(g, -1))[..., 0], a.shape)
    return xp.sum_to(xp.matmul(g, xp.swap_last(b)), a.shape)


def _matmul_b(xp, g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if b.ndim == 1:
        flat_a = xp.reshape(a, (-1, a.shape[-1]))
        return xp.matmul(xp.reshape(g, (-1,)), flat_a)
    if a.ndim == 1:
        return xp.expand_dims(a, -1) * xp.expand_dims(g, -2)
    return xp.sum_to(xp.matmul(xp.swap_last(a), g), b.shape)


def _keep(xp, g, shape, axis, keepdims):
    """g reshaped as if the reduction over `axis` had kept its dims, so it broadcasts against x."""
    if keepdims:
        return g
    return xp.reshape(g, keep_shape(shape, axis))


def keep_shape(shape, axis):
    if axis is None:
        return (1,) * len(shape)
    axes = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _sum_grad(xp, g, ans, x, axis=None, keepdims=False):
    return xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims), x.shape)


def _extreme_grad(xp, g, ans, x, axis=None, keepdims=False):
    # Ties share the gradient equally, as torch's amax/amin do.
    hit = xp.equal_mask(x, _keep(xp, ans, x.shape, axis, keepdims))
    count = xp.count(hit, axis)
    return xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims), x.shape) * hit / count


def _logsumexp_grad(xp, g, ans, x, axis=None, keepdims=False):
    return _keep(xp, g, x.shape, axis, keepdims) * xp.exp(x - _keep(xp, ans, x.shape, axis, keepdims))


def _softmax_grad(xp, g, ans, x, axis=-1):
    return ans * (g - xp.sum(g * ans, axis=axis, keepdims=True))


def _log_softmax_grad(xp, g, ans, x, axis=-1):
    return g - xp.exp(ans) * xp.sum(g, axis=axis, keepdims=True)


def _inverse(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


RULES = {
    # elementwise, one argument
    "neg": (lambda xp, g, ans, x: -g,),
    "exp": (lambda xp, g, ans, x: g * ans,),
    "log": (lambda xp, g, ans, x: g / x,),
    "log1p": (lambda xp, g, ans, x: g / (1.0 + x),),
    "sqrt": (lambda xp, g, ans, x: g * 0.5 / ans,),
    "abs": (lambda xp, g, ans, x: g * xp.sign(x),),
    "tanh": (lambda xp, g, ans, x: g * (1.0 - ans * ans),),
    "sigmoid": (lambda xp, g, ans, x: g * (ans * (1.0 - ans)),),
    "relu": (lambda xp, g, ans, x: g * (x > 0),),
    "gelu": (_gelu_grad,),
    "softplus": (lambda xp, g, ans, x: g * xp.sigmoid(x),),
    "sin": (lambda xp, g, ans, x: g * xp.cos(x),),
    "cos": (lambda xp, g, ans, x: -g * xp.sin(x),),
    "clip": (lambda xp, g, ans, x, lo=None, hi=None: g * xp.between(x, lo, hi),),
    # elementwise, two arguments (broadcasting: gradients are summed back to each argument's shape)
    "add": _unbroadcast_pair(lambda xp, g, ans, a, b: g, lambda xp, g, ans, a, b: g),
    "sub": _unbroadcast_pair(lambda xp, g, ans, a, b: g, lambda xp, g, ans, a, b: -g),
    "mul": _unbroadcast_pair(lambda xp, g, ans, a, b: g * b, lambda xp, g, ans, a, b: g * a),
    "div": _unbroadcast_pair(lambda xp, g, ans, a, b: g / b, lambda xp, g, ans, a, b: -g * ans / b),
    "pow": _unbroadcast_pair(_pow_base, _pow_exponent),
    "maximum": _unbroadcast_pair(lambda xp, g, ans, a, b: g * xp.share(a, b),
                                 lambda xp, g, ans, a, b: g * xp.share(b, a)),
    "minimum": _unbroadcast_pair(lambda xp, g, ans, a, b: g * xp.share(b, a),
                                 lambda xp, g, ans, a, b: g * xp.share(a, b)),
    "where": (lambda xp, g, ans, a, b, cond=None: xp.sum_to(xp.where(cond, g, 0.0), a.shape),
              lambda xp, g, ans, a, b, cond=None: xp.sum_to(xp.where(cond, 0.0, g), b.shape)),
    "matmul": (_matmul_a, _matmul_b),
    # reductions
    "sum": (_sum_grad,),
    "max": (_extreme_grad,),
    "min": (_extreme_grad,),
    "logsumexp": (_logsumexp_grad,),
    "softmax": (_softmax_grad,),
    "log_softmax": (_log_softmax_grad,),
    # shape and indexing; each rule is the op's linear adjoint, and the adjoints pair up
    "reshape": (lambda xp, g, ans, x, shape=None: xp.reshape(g, x.shape),),
    "transpose": (lambda xp, g, ans, x, axes=None: xp.transpose(g, _inverse(axes)),),
    "broadcast_to": (lambda xp, g, ans, x, shape=None: xp.sum_to(g, x.shape),),
    "sum_to": (lambda xp, g, ans, x, shape=None: xp.broadcast_to(g, x.shape),),
    "getitem": (lambda xp, g, ans, x, index=None: xp.index_add(g, index, x.shape),),
    "index_add": (lambda xp, g, ans, x, index=None, shape=None: xp.getitem(g, index),),
    "take_along": (lambda xp, g, ans, x, idx=None, axis=-1: xp.put_along(g, idx, axis, x.shape),),
    "put_along": (lambda xp, g, ans, x, idx=None, axis=-1, shape=None: xp.take_along(g, idx, axis),),
}


def concat_rule(start, stop):
    """The rule for one argument of concat: its slice of the output's gradient."""
    def rule(xp, g, ans, *args, axis=0):
        index = (slice(None),) * (axis % g.ndim) + (slice(start, stop),)
        return xp.getitem(g, index)
    return rule



# --- numlib (issue 19): elementwise, scans and reductions -------------------------------------------
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_ERF_C = 2.0 / math.sqrt(math.pi)


def _flat_zero(xp, g, ans, x, **params):
    # floor, ceil, round, trunc, sign: piecewise constant, so the gradient is 0 (torch's choice too)
    return g * 0.0


def _atan2_y(xp, g, ans, y, x):
    return g * x / (x * x + y * y)


def _atan2_x(xp, g, ans, y, x):
    return -g * y / (x * x + y * y)


def _cumsum_grad(xp, g, ans, x, axis=0):
    # each input feeds every later output: the adjoint is the sum from the other end
    return xp.flip(xp.cumsum(xp.flip(g, axis), axis), axis)


def _cumprod_grad(xp, g, ans, x, axis=0):
    if not xp.has_zero(x):
        return _cumsum_grad(xp, g * ans, None, x, axis) / x
    if xp.recording:
        return _cumprod_grad_pairs(xp, g, x, axis)
    # With zeros, dividing by x is 0/0. Per slice, with z its first zero: before z the quotient is
    # safe; at z the gradient is sum_{j>=z} g_j prod_{k<=j, k!=z} x_k, which is cumprod with x_z
    # replaced by 1; after z every product holds x_z = 0, so it is 0. O(n), first order only: a
    # derivative of these constants-masked pieces would miss the slope of the 0s in x_z.
    before, first = xp.zero_masks(x, axis)
    safe = _cumsum_grad(xp, g * ans, None, x, axis) / xp.where(before, x, 1.0)
    at_zero = _cumsum_grad(xp, g * xp.cumprod(xp.where(first, 1.0, x), axis), None, x, axis)
    return xp.where(before, safe, 0.0) + xp.where(first, at_zero, 0.0)


def _cumprod_grad_pairs(xp, g, x, axis):
    # Recorded (higher order) with zeros: sum_{j>=i} g_j prod_{k<=j, k!=i} x_k written without
    # division, from a cumprod of n copies of x, copy i having x_i replaced by 1. O(n^2) per slice,
    # the size of the hessian being built anyway.
    n = x.shape[axis]
    xm = xp.moveaxis(x, axis, -1)
    gm = xp.moveaxis(g, axis, -1)
    eye = xp.eye_mask(n)                                    # (n, n) constant, eye[i, k] = (i == k)
    copies = xp.where(eye, 1.0, xp.expand_dims(xm, -2))     # (..., i, k)
    later = xp.tri_mask(n)                                  # later[i, j] = j >= i
    terms = xp.where(later, xp.cumprod(copies, -1), 0.0) * xp.expand_dims(gm, -2)
    return xp.moveaxis(xp.sum(terms, axis=-1), -1, axis)


def _prod_grad(xp, g, ans, x, axis=0, keepdims=False):
    # d prod / d x_i = the product of the others: exclusive products from both ends, no division
    gk = _keep(xp, g, x.shape, axis, keepdims)
    return gk * xp.others_prod(x, axis)


RULES.update({
    "sign": (_flat_zero,),
    "floor": (_flat_zero,),
    "ceil": (_flat_zero,),
    "trunc": (_flat_zero,),
    "round": (_flat_zero,),
    "expm1": (lambda xp, g, ans, x: g * (ans + 1.0),),
    "log2": (lambda xp, g, ans, x: g / (x * _LN2),),
    "log10": (lambda xp, g, ans, x: g / (x * _LN10),),
    "tan": (lambda xp, g, ans, x: g * (1.0 + ans * ans),),
    "arcsin": (lambda xp, g, ans, x: g / xp.sqrt(1.0 - x * x),),
    "arccos": (lambda xp, g, ans, x: -g / xp.sqrt(1.0 - x * x),),
    "arctan": (lambda xp, g, ans, x: g / (1.0 + x * x),),
    "sinh": (lambda xp, g, ans, x: g * xp.cosh(x),),
    "cosh": (lambda xp, g, ans, x: g * xp.sinh(x),),
    "arcsinh": (lambda xp, g, ans, x: g / xp.sqrt(x * x + 1.0),),
    "arctanh": (lambda xp, g, ans, x: g / (1.0 - x * x),),
    "erf": (lambda xp, g, ans, x: g * _ERF_C * xp.exp(-(x * x)),),
    "nan_to_num": (lambda xp, g, ans, x, nan=0.0, posinf=None, neginf=None: g * xp.finite_mask(x),),
    "arctan2": _unbroadcast_pair(_atan2_y, _atan2_x),
    "hypot": _unbroadcast_pair(lambda xp, g, ans, a, b: g * a / ans,
                               lambda xp, g, ans, a, b: g * b / ans),
    "mod": _unbroadcast_pair(lambda xp, g, ans, a, b: g,
                             lambda xp, g, ans, a, b: -g * xp.floor(a / b)),
    "cumsum": (_cumsum_grad,),
    "cumprod": (_cumprod_grad,),
    "prod": (_prod_grad,),
})

RULES["identity"] = (lambda xp, g, ans, x: g,)
_NAMES = {id(rules): name for name, rules in RULES.items()}


def register_name(name, rules):
    _NAMES[id(rules)] = name


def rule_name(rules):
    """The op name for an entry's rules (concat's are made per call)."""
    return _NAMES.get(id(rules), "concat")


# Linear algebra (inv, solve, det, decompositions, norm2, einsum): rules in linalg_vjps.py.
from ..numlib.linalg_vjps import EDGE_RULES, LINALG_RULES  # noqa: E402

RULES.update(LINALG_RULES)
RULES.update(EDGE_RULES)
for _name, _rules in {**LINALG_RULES, **EDGE_RULES}.items():
    register_name(_name, _rules)

# Issue 35's special functions and convolve: rules in toolbox_vjps.py.
from ..numlib.toolbox_vjps import TOOLBOX_RULES  # noqa: E402

RULES.update(TOOLBOX_RULES)
for _name, _rules in TOOLBOX_RULES.items():
    register_name(_name, _rules)
