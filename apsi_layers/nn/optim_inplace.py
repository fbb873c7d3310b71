"""nn's optimizers, updated in place: what `fit` uses on the NumPy backend.

`opt.step` (nn/optim.py) returns new arrays for every parameter and every moment on every step, as a
function on data must. Inside `fit` the parameters are a working copy that the loop owns (the caller's
tree is never changed) and the moments belong to the optimizer, so both can be overwritten: each rule
below is its optim.py counterpart written with NumPy's `out=` ufuncs and two scratch buffers per
parameter, so a step allocates nothing.

Each kernel performs the same floating-point operations, on the same operands and in the same order, as
the rule in optim.py, so the results are bit-for-bit those of `opt.step` (tests/nn/test_optim_inplace.py
checks this over many steps for every optimizer and option). A change to a rule in optim.py must be
made here too; that test fails until it is. The gradients are only read: autodiff may hand the same
array to two parameters.
"""

import math

import numpy as np

from . import optim, tree
from .nonfinite import NonFiniteError
from .tensor import Tensor


def _coupled_decay(p, g, a, wd):
    """g + wd * p into the scratch buffer a (weight_decay's coupled branch); returns the gradient."""
    np.multiply(p, wd, out=a)
    np.add(g, a, out=a)
    return a


def _decay(p, g, a, lr, wd, decoupled):
    """optim.weight_decay, in place on p (decoupled) or into a (coupled)."""
    if wd and decoupled:
        p *= 1.0 - lr * wd
        return g
    if wd:
        return _coupled_decay(p, g, a, wd)
    return g


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


def sgd(h, p, g, s, lr, t, a, b):
    if h["weight_decay"]:
        g = _coupled_decay(p, g, a, h["weight_decay"])
    if h["momentum"]:
        buf = s.get("buf")
        if buf is None:
            s["buf"] = buf = np.array(g)       # g.copy(), as an array even when g is 0-d
        else:
            np.multiply(g, 1.0 - h["dampening"], out=b)
            buf *= h["momentum"]
            buf += b
        if h["nesterov"]:
            np.multiply(buf, h["momentum"], out=b)
            np.add(g, b, out=b)
        g = b if h["nesterov"] else buf
    np.multiply(g, lr, out=b)
    p -= b


def adam(h, p, g, s, lr, t, a, b, decoupled=False):
    b1, b2 = h["b1"], h["b2"]
    g = _decay(p, g, a, lr, h["weight_decay"], decoupled)
    _lerp(s["m"], g, 1.0 - b1, b)
    _second_moment(s["v"], g, b2, b)
    step_size = lr / (1.0 - b1 ** t)
    bc2_sqrt = (1.0 - b2 ** t) ** 0.5
    v = s["v"]
    if h["amsgrad"]:
        v = np.maximum(s["vmax"], v, out=s["vmax"])
    np.sqrt(v, out=b)
    b /= bc2_sqrt
    b += h["eps"]
    np.divide(s["m"], b, out=b)
    b *= step_size
    p -= b


def adamw(h, p, g, s, lr, t, a, b):
    adam(h, p, g, s, lr, t, a, b, decoupled=True)


def rmsprop(h, p, g, s, lr, t, a, b):
    alpha = h["alpha"]
    if h["weight_decay"]:
        g = _coupled_decay(p, g, a, h["weight_decay"])
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
    p -= b


def adagrad(h, p, g, s, lr, t, a, b):
    if h["weight_decay"]:
        g = _coupled_decay(p, g, a, h["weight_decay"])
    clr = lr / (1.0 + (t - 1) * h["lr_decay"])
    np.multiply(g, g, out=b)
    s["sum"] += b
    np.sqrt(s["sum"], out=b)
    b += h["eps"]
    np.divide(g, b, out=b)
    b *= clr
    p -= b


def nadam(h, p, g, s, lr, t, a, b):
    b1, b2 = h["b1"], h["b2"]
    g = _decay(p, g, a, lr, h["weight_decay"], h["decoupled_weight_decay"])
    mu = b1 * (1.0 - 0.5 * 0.96 ** (t * h["momentum_decay"]))
    mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * h["momentum_decay"]))
    s["mu_product"] *= mu
    _lerp(s["m"], g, 1.0 - b1, b)
    _second_moment(s["v"], g, b2, b)
    np.divide(s["v"], 1.0 - b2 ** t, out=b)
    np.sqrt(b, out=b)
    b += h["eps"]                                   # b: denom
    mu_product_next = s["mu_product"] * mu_next
    np.divide(g, b, out=a)                          # g is read for the last time here
    a *= -lr * (1.0 - mu) / (1.0 - s["mu_product"])
    np.divide(s["m"], b, out=b)
    b *= (-lr * mu_next) / (1.0 - mu_product_next)
    p += a
    p += b


def radam(h, p, g, s, lr, t, a, b):
    b1, b2 = h["b1"], h["b2"]
    g = _decay(p, g, a, lr, h["weight_decay"], h["decoupled_weight_decay"])
    _lerp(s["m"], g, 1.0 - b1, b)
    _second_moment(s["v"], g, b2, b)
    bc1, bc2 = 1.0 - b1 ** t, 1.0 - b2 ** t
    np.divide(s["m"], bc1, out=b)                   # b: m_hat
    rho_inf = 2.0 / (1.0 - b2) - 1.0
    rho_t = rho_inf - 2.0 * t * (b2 ** t) / bc2
    b *= lr
    if rho_t > 5.0:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        np.sqrt(s["v"], out=a)
        a += h["eps"]
        np.divide(bc2 ** 0.5, a, out=a)
        b *= a
        b *= rect
    p -= b


# exactly these classes: a subclass may have changed the rule, and then fit uses its opt.step
KERNELS = {optim.SGD: sgd, optim.Adam: adam, optim.AdamW: adamw, optim.RMSprop: rmsprop,
           optim.Adagrad: adagrad, optim.NAdam: nadam, optim.RAdam: radam}


class InPlace:
    """`opt`'s rule applied in place to arrays the caller owns. Same bookkeeping as opt.step: the
    optimizer's step count, state and first-step structure checks, and the same message for a
    non-finite gradient, so a fit can be continued with `opt.step` outside fit and vice versa."""

    def __init__(self, opt):
        self.opt = opt
        self.kernel = KERNELS[type(opt)]
        self.scratch = None
        self.names = None

    @staticmethod
    def supports(opt, params):
        """True when opt has an in-place rule and every parameter is a float64 array to update."""
        return type(opt) in KERNELS and all(
            isinstance(p.data, np.ndarray) and p.data.dtype == np.float64 and p.data.flags.writeable
            for p in params)

    def step(self, params, grads, lr=None):
        """Update the arrays of the Tensors in `params` (a list) in place with `grads` (a list)."""
        opt = self.opt
        if self.names is None:
            named, g_named = tree.named_leaves(params), tree.named_leaves(grads)
            opt._check(named, g_named)
            self.names = [n for n, _ in named]
            self.scratch = [(np.empty_like(p.data), np.empty_like(p.data)) for p in params]
        ps = [p.data for p in params]
        # np.asarray: a 0-d gradient may come as a NumPy scalar, which has no memory to reuse
        gs = [np.asarray(g.data if type(g) is Tensor else optim._data(g)) for g in grads]
        rate = opt.current_lr(lr)
        if opt._state is None:
            opt._state = [opt.init_state(p) for p in ps]
            opt._names = list(self.names)
            opt._shapes = [np.shape(p) for p in ps]
        opt.steps += 1
        for name, g in zip(self.names, gs, strict=True):     # all checked first: no half-done step
            if not np.isfinite(np.sum(g)):
                bad = "NaN" if np.isnan(g).any() else "an infinite value"
                raise NonFiniteError(f"{opt.name}.step: the gradient of {name!r} holds {bad}; lower the "
                                "learning rate or clip gradients (clip_by_global_norm)")
        for p, g, state, (a, b) in zip(ps, gs, opt._state, self.scratch, strict=True):
            if g.dtype == p.dtype == np.float64:
                self.kernel(opt.hyper, p, g, state, rate, opt.steps, a, b)
            else:                       # not float64: the functional rule, whatever it promotes to
                p[...] = opt.update(p, g, state, rate, opt.steps)
