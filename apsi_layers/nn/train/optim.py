"""Optimizers with torch.optim's hyper-parameters, defaults and update rules, step for step.

`opt = adam(lr=1e-3)` then `params = opt.step(params, grads)` returns the updated tree (parameters
are data: the old tree is not changed). State (moments, step count) lives in the optimizer, one
slot per leaf in tree order. `lr` may be a number or a schedule `fn(step) => lr`, called with the
number of steps taken so far (0 on the first step); `opt.step(params, grads, lr=0.01)` overrides it.

The arithmetic follows torch's single-tensor CPU code in the same order, so in float64 the two agree
to rounding (the tests compare them to 1e-12 when torch is installed).
"""

import math

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import tree
from ..autograd.tensor import Tensor, as_tensor


def lerp(a, b, w):
    """torch.lerp's formula (it switches form at w = 0.5 for accuracy)."""
    return a + w * (b - a) if w < 0.5 else b - (b - a) * (1.0 - w)


def weight_decay(p, g, lr, wd, decoupled):
    """torch's two kinds: decoupled (AdamW) shrinks the weights, coupled adds wd * p to the gradient."""
    if wd and decoupled:
        return p * (1.0 - lr * wd), g
    if wd:
        return p, g + wd * p
    return p, g


class Optimizer:
    __apsi_attrs__ = frozenset({"step", "lr", "steps", "name", "hyper"})
    __apsi_type__ = "optimizer"
    name = "optimizer"

    def __init__(self, lr, **hyper):
        if not callable(lr) and not (isinstance(lr, int | float) and math.isfinite(lr) and lr >= 0):
            raise ApsiError(f"{self.name}: lr must be a finite number >= 0 or a schedule fn(step) => lr, "
                            f"got {lr!r}")
        for key, value in hyper.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and not (
                    math.isfinite(value) and value >= 0):
                raise ApsiError(f"{self.name}: {key} must be a finite number >= 0, got {value!r}")
        self.lr = lr
        self.hyper = hyper
        self.steps = 0
        self._state = None
        self._names = None
        self._shapes = None

    def __repr__(self):
        from apsi_lang.values import show

        args = ", ".join(f"{k}={show(v, True)}" for k, v in {"lr": self.lr, **self.hyper}.items())
        return f"{self.name}({args})"

    def current_lr(self, override=None):
        lr = self.lr if override is None else override
        return checked_lr(lr(self.steps) if callable(lr) else lr, self.steps, f"{self.name}.step")

    def step(self, params, grads, lr=None):
        """The parameters after one update with these gradients (a tree like params)."""
        named = tree.named_leaves(params)
        g_named = tree.named_leaves(grads)
        self._check(named, g_named)
        rate = self.current_lr(lr)
        if self._state is None:
            self._state = [self.init_state(_data(p)) for _, p in named]
            self._names = [n for n, _ in named]
            self._shapes = [np.shape(_data(p)) for _, p in named]
        self.steps += 1
        from . import blockwise, optim_inplace

        ps = [_data(p) for _, p in named]
        gs = [np.asarray(_data(g)) for _, g in g_named]
        optim_inplace.check_finite(self, [n for n, _ in named], gs)
        new, work = [], []
        for p, g, state in zip(ps, gs, self._state, strict=True):
            if optim_inplace.fast(self, p, g):     # the same numbers without a dozen temporaries
                out = np.empty(p.shape)
                work += optim_inplace.plan(self, out, g, state, rate, src=p)
            else:
                out = self.update(p, g, state, rate, self.steps)
            new.append(Tensor(out))
        blockwise.run(work)
        return tree.unflatten_like(params, new)

    def _check(self, named, g_named):
        names = [n for n, _ in named]
        if names != [n for n, _ in g_named]:
            raise ApsiError(f"{self.name}.step: grads do not have the structure of params "
                            f"(params: {', '.join(names[:6])}; grads: "
                            f"{', '.join(n for n, _ in g_named[:6])})")
        if self._names is not None and names != self._names:
            raise ApsiError(f"{self.name}.step: params changed structure since the first step; "
                            "make a new optimizer for a new model")
        if self._names is not None:
            for n, (_, p), shape in zip(names, named, self._shapes, strict=True):
                if np.shape(_data(p)) != shape:
                    raise ApsiError(f"{self.name}.step: parameter {n!r} has shape {np.shape(_data(p))} "
                                    f"but had {shape} at the first step (its optimizer state has that "
                                    "shape); make a new optimizer for a changed model")
        for (n, p), (_, g) in zip(named, g_named, strict=True):
            if np.shape(_data(p)) != np.shape(_data(g)):
                raise ApsiError(f"{self.name}.step: gradient {n!r} has shape {np.shape(_data(g))} "
                                f"but the parameter has {np.shape(_data(p))}")

    def init_state(self, p):
        return {}

    def update(self, p, g, s, lr, t):
        raise NotImplementedError


def _data(x):
    return x.data if type(x) is Tensor else as_tensor(x, "step").data


class SGD(Optimizer):
    name = "sgd"

    def update(self, p, g, s, lr, t):
        h = self.hyper
        if h["weight_decay"]:
            g = g + h["weight_decay"] * p
        if h["momentum"]:
            buf = s.get("buf")
            buf = g.copy() if buf is None else buf * h["momentum"] + (1.0 - h["dampening"]) * g
            s["buf"] = buf
            g = g + h["momentum"] * buf if h["nesterov"] else buf
        return p - lr * g


class Adam(Optimizer):
    name = "adam"
    decoupled = False

    def init_state(self, p):
        s = {"m": np.zeros_like(p), "v": np.zeros_like(p)}
        if self.hyper["amsgrad"]:
            s["vmax"] = np.zeros_like(p)
        return s

    def update(self, p, g, s, lr, t):
        h = self.hyper
        b1, b2, wd = h["b1"], h["b2"], h["weight_decay"]
        p, g = weight_decay(p, g, lr, wd, self.decoupled)
        s["m"] = lerp(s["m"], g, 1.0 - b1)
        s["v"] = s["v"] * b2 + (1.0 - b2) * g * g
        step_size = lr / (1.0 - b1 ** t)
        bc2_sqrt = (1.0 - b2 ** t) ** 0.5
        v = s["v"]
        if h["amsgrad"]:
            v = s["vmax"] = np.maximum(s["vmax"], v)
        denom = np.sqrt(v) / bc2_sqrt + h["eps"]
        return p - step_size * (s["m"] / denom)


class AdamW(Adam):
    name = "adamw"
    decoupled = True


class RMSprop(Optimizer):
    name = "rmsprop"

    def init_state(self, p):
        return {"sq": np.zeros_like(p), "avg": np.zeros_like(p), "buf": np.zeros_like(p)}

    def update(self, p, g, s, lr, t):
        h = self.hyper
        alpha = h["alpha"]
        if h["weight_decay"]:
            g = g + h["weight_decay"] * p
        s["sq"] = s["sq"] * alpha + (1.0 - alpha) * g * g
        if h["centered"]:
            s["avg"] = lerp(s["avg"], g, 1.0 - alpha)
            avg = np.sqrt(s["sq"] - s["avg"] * s["avg"]) + h["eps"]
        else:
            avg = np.sqrt(s["sq"]) + h["eps"]
        if h["momentum"] > 0:
            s["buf"] = s["buf"] * h["momentum"] + g / avg
            return p - lr * s["buf"]
        return p - lr * (g / avg)


class Adagrad(Optimizer):
    name = "adagrad"

    def init_state(self, p):
        return {"sum": np.full_like(p, self.hyper["initial_accumulator_value"])}

    def update(self, p, g, s, lr, t):
        h = self.hyper
        if h["weight_decay"]:
            g = g + h["weight_decay"] * p
        clr = lr / (1.0 + (t - 1) * h["lr_decay"])
        s["sum"] = s["sum"] + g * g
        return p - clr * (g / (np.sqrt(s["sum"]) + h["eps"]))


class NAdam(Optimizer):
    name = "nadam"

    def init_state(self, p):
        return {"m": np.zeros_like(p), "v": np.zeros_like(p), "mu_product": 1.0}

    def update(self, p, g, s, lr, t):
        h = self.hyper
        b1, b2, wd = h["b1"], h["b2"], h["weight_decay"]
        p, g = weight_decay(p, g, lr, wd, h["decoupled_weight_decay"])
        mu = b1 * (1.0 - 0.5 * 0.96 ** (t * h["momentum_decay"]))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * h["momentum_decay"]))
        s["mu_product"] *= mu
        s["m"] = lerp(s["m"], g, 1.0 - b1)
        s["v"] = s["v"] * b2 + (1.0 - b2) * g * g
        denom = np.sqrt(s["v"] / (1.0 - b2 ** t)) + h["eps"]
        mu_product_next = s["mu_product"] * mu_next
        p = p + (-lr * (1.0 - mu) / (1.0 - s["mu_product"])) * (g / denom)
        return p + ((-lr * mu_next) / (1.0 - mu_product_next)) * (s["m"] / denom)


class RAdam(Optimizer):
    name = "radam"

    def init_state(self, p):
        return {"m": np.zeros_like(p), "v": np.zeros_like(p)}

    def update(self, p, g, s, lr, t):
        h = self.hyper
        b1, b2, wd = h["b1"], h["b2"], h["weight_decay"]
        p, g = weight_decay(p, g, lr, wd, h["decoupled_weight_decay"])
        s["m"] = lerp(s["m"], g, 1.0 - b1)
        s["v"] = s["v"] * b2 + (1.0 - b2) * g * g
        bc1, bc2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        m_hat = s["m"] / bc1
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - 2.0 * t * (b2 ** t) / bc2
        if rho_t <= 5.0:                            # variance not yet tractable: plain momentum step
            return p - m_hat * lr
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = bc2 ** 0.5 / (np.sqrt(s["v"]) + h["eps"])
        return p - m_hat * lr * adaptive * rect


def sgd(lr=1e-3, momentum=0.0, nesterov=False, weight_decay=0.0, dampening=0.0):
    """Stochastic gradient descent (torch.optim.SGD)."""
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ApsiError("sgd: nesterov=true needs momentum > 0 and dampening = 0")
    return SGD(lr, momentum=momentum, nesterov=bool(nesterov), weight_decay=weight_decay,
               dampening=dampening)


def checked_lr(lr, step, where):
    """A learning rate from a schedule (or given to step): a finite number >= 0, else an error naming
    the step, so a schedule returning NaN or inf never trains on to NaN parameters."""
    if isinstance(lr, bool) or not isinstance(lr, int | float | np.floating | np.integer) \
            or not math.isfinite(lr) or lr < 0:
        from apsi_lang.values import show

        raise ApsiError(f"{where}: the schedule returned {show(lr, True)} at step {step}; it must return a "
                        "learning rate (a finite number >= 0)")
    return float(lr)


def _betas(fn, b1, b2):
    for name, b in (("b1", b1), ("b2", b2)):
        if not 0.0 <= b < 1.0:
            raise ApsiError(f"{fn}: {name} must be in [0, 1), got {b!r}")


def adam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False):
    """Adam (torch.optim.Adam); weight_decay adds wd * p to the gradient."""
    _betas("adam", b1, b2)
    return Adam(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay, amsgrad=bool(amsgrad))


def adamw(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01, amsgrad=False):
    """AdamW (torch.optim.AdamW): decoupled weight decay p *= 1 - lr * wd."""
    _betas("adamw", b1, b2)
    return AdamW(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay, amsgrad=bool(amsgrad))


def rmsprop(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    """RMSprop (torch.optim.RMSprop)."""
    return RMSprop(lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                   centered=bool(centered))


def adagrad(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
    """Adagrad (torch.optim.Adagrad)."""
    return Adagrad(lr, lr_decay=lr_decay, weight_decay=weight_decay,
                   initial_accumulator_value=initial_accumulator_value, eps=eps)


def nadam(lr=2e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
          decoupled_weight_decay=False):
    """NAdam (torch.optim.NAdam)."""
    _betas("nadam", b1, b2)
    return NAdam(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                 decoupled_weight_decay=bool(decoupled_weight_decay))


def radam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False):
    """RAdam (torch.optim.RAdam)."""
    _betas("radam", b1, b2)
    return RAdam(lr, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay,
                 decoupled_weight_decay=bool(decoupled_weight_decay))
