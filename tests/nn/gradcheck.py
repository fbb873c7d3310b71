"""Central finite differences in float64, for checking gradient rules (first and second order)."""

import numpy as np

from apsi_layers import nn


def rel_error(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(np.linalg.norm(a), np.linalg.norm(b), 1e-12)
    return np.linalg.norm(a - b) / scale


def numeric_jacobian(fn, x, h=1e-6):
    """d fn(x) / d x by central differences: shape fn(x).shape + x.shape."""
    x = np.asarray(x, dtype=float)
    out_shape = np.shape(fn(x))
    jac = np.zeros(out_shape + x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        jac[(...,) + i] = (np.asarray(fn(x + step)) - np.asarray(fn(x - step))) / (2 * h)
    return jac


def scalarize(f, *args, seed=0, positive=False):
    """sum(f(*args) * W) with fixed random W: a scalar whose gradient exercises every output.
    `positive` draws W from [0.5, 1.5]: for positive outputs no terms cancel, so central differences
    keep their digits (with signed W a sum near 0 left them 1e-6 off: hypothesis found one)."""
    out = f(*[nn.Tensor(np.asarray(a, dtype=float)) for a in args])
    rng = np.random.default_rng(seed)
    shape = np.shape(out.data)
    w = rng.uniform(0.5, 1.5, shape) if positive else rng.standard_normal(shape)
    return lambda *xs: nn.sum(f(*xs) * w)


def check_first_order(f, args, argnum, tol=1e-6):
    """The tape's gradient of scalar f w.r.t. args[argnum] against finite differences."""
    args = [np.asarray(a, dtype=float) for a in args]

    def value_at(x):
        vals = [nn.Tensor(a) for a in args]
        vals[argnum] = nn.Tensor(x)
        return f(*vals).item()

    analytic = nn.grad(f, argnum)(*[nn.Tensor(a) for a in args]).data
    numeric = numeric_jacobian(value_at, args[argnum])
    err = rel_error(analytic, numeric)
    assert err < tol, f"first order: relative error {err:.2e}\nanalytic {analytic}\nnumeric {numeric}"


def check_second_order(f, args, argnum, other=None, tol=1e-6):
    """d/d args[other] of the tape's gradient w.r.t. args[argnum] (reverse over reverse) against
    finite differences of that (first-order checked) gradient."""
    other = argnum if other is None else other
    args = [np.asarray(a, dtype=float) for a in args]
    grad_f = nn.grad(f, argnum)

    def gradient_at(x):
        vals = [nn.Tensor(a) for a in args]
        vals[other] = nn.Tensor(x)
        return grad_f(*vals).data

    def g_of_other(*xs):
        return grad_f(*xs)

    analytic = nn.jacobian(g_of_other, other)(*[nn.Tensor(a) for a in args]).data
    numeric = numeric_jacobian(gradient_at, args[other], h=1e-5)
    err = rel_error(analytic, numeric)
    assert err < tol, f"second order: relative error {err:.2e}\nanalytic {analytic}\nnumeric {numeric}"
