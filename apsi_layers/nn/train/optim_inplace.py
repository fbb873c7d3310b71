"""nn's optimizers without temporaries: what `opt.step` and `fit` on the NumPy backend run for float64.

Written the plain way (optim.py's `update` rules), a step allocates new arrays for every parameter and
every moment, about a dozen per parameter. The moments belong to the optimizer, so they can be
overwritten; `opt.step` writes each new parameter into one fresh array (parameters are data: the old
tree is not changed), and inside `fit` the parameters are a working copy that the loop owns, updated in
place (the caller's tree is never changed). Each rule below is its optim.py counterpart written with
NumPy's `out=` ufuncs and two scratch buffers, split in two: `prepare` computes the step's scalars once
per parameter (and advances scalar state such as NAdam's mu_product), `apply` does the elementwise part
on any block of the arrays, so nn/train/blockwise.py runs it a cache-sized block at a time.

Each kernel performs the same floating-point operations, on the same operands and in the same order, as
the rule in optim.py, so the results are bit-for-bit those of the plain rule (tests/nn/
test_optim_inplace.py checks this over many steps for every optimizer and option, across block
boundaries). A change to a rule in optim.py must be made here too; that test fails until it is. The
gradients are only read: autodiff may hand the same array to two parameters.
"""

import math

import numpy as np

from ..autograd import tree
from ..autograd.nonfinite import NonFiniteError
from ..autograd.tensor import Tensor, as_tensor
from . import blockwise

SCALAR_STATE = frozenset({"mu_product"})    # state that is one number, not one per element


def _coupled_decay(p, g, a, wd):
    """g + wd * p into the scratch buffer a (weight_decay's coupled branch); returns the gradient."""
    np.multiply(p, wd, out=a)
    np.add(g, a, out=a)
    return a


def _decay(p, q, g, a, lr, wd, decoupled):
    """optim.weight_decay: (gradient, the parameter's values from now on), decoupled written into p,
    coupled into a."""
    if wd and decoupled:
        np.multiply(q, 1.0 - lr * wd, out=p)
        return g, p
    if wd:
        return _coupled_decay(q, g, a, wd), q
    return g, q


def _lerp(m, g, w, b):
    """m = optim.lerp(m, g, w) in place, b a scratch buffer."""
    np.subtract(g, m, out=b)
    if w < 0.5:
        b *= w
        m += b
    else:
        b *= 1.0 - w
        np.subtract(g, b, out=m)


def _second_moment(v, g, beta, b):
    """v = v * beta + (1 - beta) * g * g in place."""
    np.multiply(g, 1.0 - beta, out=b)
    b *= g
    v *= beta
    v += b


def _adam_moments(h, p, q, g, s, a, b, lr, decoupled):
    """The Adam family's shared first half: weight decay, then both moments updated in place.
    Returns (g, q) as _decay does."""
    g, q = _decay(p, q, g, a, lr, h["weight_decay"], decoupled)
    _lerp(s["m"], g, 1.0 - h["b1"], b)
    _second_moment(s["v"], g, h["b2"], b)
    return g, q


class SGD:
    @staticmethod
    def prepare(h, p, s, lr, t):
        first = bool(h["momentum"]) and s.get("buf") is None
        if first:
            s["buf"] = np.empty_like(p)        # filled with the first step's gradient by apply
        return lr, first

    @staticmethod
    def apply(h, c, p, q, g, s, a, b):
        lr, first = c
        if h["weight_decay"]:
            g = _coupled_decay(q, g, a, h["weight_decay"])
        if h["momentum"]:
            buf = s["buf"]
            if first:
                np.copyto(buf, g)               # optim.py: buf = g.copy()
            else:
                np.multiply(g, 1.0 - h["dampening"], out=b)
                buf *= h["momentum"]
                buf += b
            if h["nesterov"]:
                np.multiply(buf, h["momentum"], out=b)
                np.add(g, b, out=b)
            g = b if h["nesterov"] else buf
        np.multiply(g, lr, out=b)
        np.subtract(q, b, out=p)


class Adam:
    decoupled = False

    @staticmethod
    def prepare(h, p, s, lr, t):
        return lr, lr / (1.0 - h["b1"] ** t), (1.0 - h["b2"] ** t) ** 0.5

    @classmethod
    def apply(cls, h, c, p, q, g, s, a, b):
        lr, step_size, bc2_sqrt = c
        g, q = _adam_moments(h, p, q, g, s, a, b, lr, cls.decoupled)
        v = s["v"]
        if h["amsgrad"]:
            v = np.maximum(s["vmax"], v, out=s["vmax"])
        np.sqrt(v, out=b)
        b /= bc2_sqrt
        b += h["eps"]
        np.divide(s["m"], b, out=b)
        b *= step_size
        np.subtract(q, b, out=p)


class AdamW(Adam):
    decoupled = True


class RMSprop:
    @staticmethod
    def prepare(h, p, s, lr, t):
        return lr

    @staticmethod
    def apply(h, lr, p, q, g, s, a, b):
        alpha = h["alpha"]
        if h["weight_decay"]:
            g = _coupled_decay(q, g, a, h["weight_decay"])
        _second_moment(s["sq"], g, alpha, b)
        if h["centered"]:
            _lerp(s["avg"], g, 1.0 - alpha, b)
            np.multiply(s["avg"], s["avg"], out=b)
            np.subtract(s["sq"], b, out=b)
            np.sqrt(b, out=b)
        else:
            np.sqrt(s["sq"], out=b)
        b += h["eps"]
        np.divide(g, b, out=b)
        if h["momentum"] > 0:
            buf = s["buf"]
            buf *= h["momentum"]
            buf += b
            np.multiply(buf, lr, out=b)
        else:
            b *= lr
        np.subtract(q, b, out=p)


class Adagrad:
    @staticmethod
    def prepare(h, p, s, lr, t):
        return lr / (1.0 + (t - 1) * h["lr_decay"])

    @staticmethod
    def apply(h, clr, p, q, g, s, a, b):
        if h["weight_decay"]:
            g = _coupled_decay(q, g, a, h["weight_decay"])
        np.multiply(g, g, out=b)
        s["sum"] += b
        np.sqrt(s["sum"], out=b)
        b += h["eps"]
        np.divide(g, b, out=b)
        b *= clr
        np.subtract(q, b, out=p)


class NAdam:
    @staticmethod
    def prepare(h, p, s, lr, t):
        b1 = h["b1"]
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * h["momentum_decay"]))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * h["momentum_decay"]))
        s["mu_product"] *= mu
        mu_product_next = s["mu_product"] * mu_next
        return (lr, 1.0 - h["b2"] ** t, -lr * (1.0 - mu) / (1.0 - s["mu_product"]),
                (-lr * mu_next) / (1.0 - mu_product_next))

    @staticmethod
    def apply(h, c, p, q, g, s, a, b):
        lr, bc2, g_scale, m_scale = c
        g, q = _adam_moments(h, p, q, g, s, a, b, lr, h["decoupled_weight_decay"])
        np.divide(s["v"], bc2, out=b)
        np.sqrt(b, out=b)
        b += h["eps"]                                   # b: denom
        np.divide(g, b, out=a)                          # g is read for the last time here
        a *= g_scale
        np.divide(s["m"], b, out=b)
        b *= m_scale
        np.add(q, a, out=p)
        p += b


class RAdam:
    @staticmethod
    def prepare(h, p, s, lr, t):
        b2 = h["b2"]
        bc1, bc2 = 1.0 - h["b1"] ** t, 1.0 - b2 ** t
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - 2.0 * t * (b2 ** t) / bc2
        rect = None
        if rho_t > 5.0:                             # else: plain momentum step (optim.py)
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return lr, bc1, bc2, rect

    @staticmethod
    def apply(h, c, p, q, g, s, a, b):
        lr, bc1, bc2, rect = c
        g, q = _adam_moments(h, p, q, g, s, a, b, lr, h["decoupled_weight_decay"])
        np.divide(s["m"], bc1, out=b)                   # b: m_hat
        b *= lr
        if rect is not None:
            np.sqrt(s["v"], out=a)
            a += h["eps"]
            np.divide(bc2 ** 0.5, a, out=a)
            b *= a
            b *= rect
        np.subtract(q, b, out=p)


# optim.py's classes by their names. Exactly those classes: a subclass may have changed the rule, and
# then its own update runs (so the class itself must be optim.py's and name itself; this file does
# not import optim.py, which imports it)
KERNELS = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad,
           "nadam": NAdam, "radam": RAdam}
OPTIM = "apsi_layers.nn.train.optim"


def kernel(opt):
    """The in-place rule for `opt`, or None when its class is not one of optim.py's own."""
    cls = type(opt)
    return KERNELS.get(cls.__dict__.get("name")) if cls.__module__ == OPTIM else None


def _apply(rule, h, c, keys, has_src, p, g, *rest):
    """One block: rest is (src,) when the parameter's values are read from src (and the result written
    to p), then the state arrays, then a, b."""
    q = rest[0] if has_src else p
    rest = rest[1:] if has_src else rest
    rule.apply(h, c, p, q, g, dict(zip(keys, rest[:-2])), rest[-2], rest[-1])


def plan(opt, p, g, state, lr, src=None):
    """The blockwise tasks of one float64 parameter's update with gradient g: p updated in place or,
    given src, src's values updated into p (src only read); its state in place. Call after
    opt.steps += 1."""
    rule = kernel(opt)
    c = rule.prepare(opt.hyper, p, state, lr, opt.steps)
    keys = [k for k in state if k not in SCALAR_STATE]
    for k in keys:
        if not isinstance(state[k], np.ndarray):    # a 0-d moment restored from a checkpoint as a float
            state[k] = np.array(state[k], dtype=np.float64)
    if p.size <= blockwise.BLOCK:                   # one block anyway: the rule on the arrays themselves
        return [(p.shape, rule.apply, (opt.hyper, c), (p, p if src is None else src, g, state))]
    arrays = [p, g] + ([src] if src is not None else []) + [state[k] for k in keys]
    return blockwise.tasks(_apply, arrays, rule, opt.hyper, c, keys, src is not None)


def check_finite(opt, names, grads):
    """All gradients checked before anything is updated: no half-done step."""
    for name, g in zip(names, grads, strict=True):
        if not np.isfinite(g.sum()):
            bad = "NaN" if np.isnan(g).any() else "an infinite value"
            raise NonFiniteError(f"{opt.name}.step: the gradient of {name!r} holds {bad}; lower the "
                                 "learning rate or clip gradients (clip_by_global_norm)")


def fast(opt, p, g):
    """True when this parameter's update can run here: float64 arrays and a rule of our own."""
    return kernel(opt) is not None and type(p) is np.ndarray and p.dtype == g.dtype == np.float64


class InPlace:
    """`opt`'s rule applied in place to arrays the caller owns. Same bookkeeping as opt.step: the
    optimizer's step count, state and first-step structure checks, and the same message for a
    non-finite gradient, so a fit can be continued with `opt.step` outside fit and vice versa."""

    def __init__(self, opt):
        self.opt = opt
        self.names = None

    @staticmethod
    def supports(opt, params):
        """True when opt has an in-place rule and every parameter is a float64 array to update."""
        return kernel(opt) is not None and all(
            isinstance(p.data, np.ndarray) and p.data.dtype == np.float64 and p.data.flags.writeable
            for p in params)

    def step(self, params, grads, lr=None):
        """Update the arrays of the Tensors in `params` (a list) in place with `grads` (a list)."""
        opt = self.opt
        if self.names is None:
            named, g_named = tree.named_leaves(params), tree.named_leaves(grads)
            opt._check(named, g_named)
            self.names = [n for n, _ in named]
        ps = [p.data for p in params]
        # np.asarray: a 0-d gradient may come as a NumPy scalar, which has no memory to reuse
        gs = [np.asarray(g.data if type(g) is Tensor else as_tensor(g, "step").data) for g in grads]
        rate = opt.current_lr(lr)
        if opt._state is None:
            opt._state = [opt.init_state(p) for p in ps]
            opt._names = list(self.names)
            opt._shapes = [np.shape(p) for p in ps]
        opt.steps += 1
        check_finite(opt, self.names, gs)
        work = []
        for p, g, state in zip(ps, gs, opt._state, strict=True):
            if fast(opt, p, g):
                work += plan(opt, p, g, state, rate)
            else:                       # not float64: the functional rule, whatever it promotes to
                p[...] = opt.update(p, g, state, rate, opt.steps)
        blockwise.run(work)
