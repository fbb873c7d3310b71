"""Random numbers from generator values (issue 19): no global state.

    g = rng(0)                    # a generator value: the seed and a path
    a, b = spawn(g, 2)            # independent children (NumPy's SeedSequence.spawn)
    x = normal(0, 1, [3, 4], seed=a)

A generator is immutable, like a JAX key: the same generator always gives the same numbers, so a
program passes a fresh child (spawn) to each draw that must differ. seed= also takes a plain int
(the same as rng(int)) or none (fresh entropy, not reproducible).
"""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import ops
from ..autograd.shape import getitem
from ..autograd.tensor import Tensor, as_tensor, describe, plain_array
from .args import shape_arg as _shape


class Rng:
    """A seed and a spawn path; Apsi code can read neither attribute, only pass it around."""

    __slots__ = ("entropy", "path")
    __apsi_attrs__ = frozenset()
    __apsi_type__ = "rng"

    def __init__(self, entropy, path=()):
        self.entropy = entropy
        self.path = path

    def generator(self):
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.entropy, spawn_key=self.path)))

    def __eq__(self, other):
        return type(other) is Rng and (self.entropy, self.path) == (other.entropy, other.path)

    def __hash__(self):
        return hash((self.entropy, self.path))

    def __repr__(self):
        tail = f", path={list(self.path)}" if self.path else ""
        return f"rng({self.entropy}{tail})"


def rng(seed):
    """A generator value from an int seed >= 0."""
    if type(seed) is not int or seed < 0:
        raise ApsiError(f"rng: seed must be an int >= 0, got {seed!r}")
    return Rng(seed)


def spawn(g, n=2):
    """A list of n independent child generators of g (g itself is unchanged and still usable)."""
    g = _gen_value("spawn", g)
    if type(n) is not int or n < 1:
        raise ApsiError(f"spawn: n must be an int >= 1, got {n!r}")
    return [Rng(g.entropy, g.path + (i,)) for i in range(n)]


def _gen_value(fn, g):
    if type(g) is Rng:
        return g
    if type(g) is int and g >= 0:
        return Rng(g)
    raise ApsiError(f"{fn}: expects a generator from rng(seed) (or an int seed), not {describe(g)}")


def _generator(fn, seed):
    if seed is None:
        return np.random.default_rng()
    return _gen_value(fn, seed).generator()


def _size(fn, size):
    if size is None:
        return ()
    return tuple(_shape(fn, (size,) if type(size) is int else (list(size),)))


def _param(fn, arg, v):
    """A number stays a number; anything else becomes a tensor (loc/scale may carry gradients)."""
    if type(v) in (int, float):
        return float(v)
    return as_tensor(v, fn, arg)


def _out_shape(fn, size, *params):
    shapes = [np.shape(p.data) for p in params if type(p) is Tensor]
    try:
        base = np.broadcast_shapes(*shapes) if shapes else ()
        if size is None:
            return base
        shape = _size(fn, size)
        if np.broadcast_shapes(base, shape) != shape:
            raise ValueError
        return shape
    except ValueError:
        raise ApsiError(f"{fn}: size={size!r} does not fit the parameters' shapes {shapes}") from None


def normal(loc=0.0, scale=1.0, size=None, seed=None):
    """Normal samples loc + scale * z; differentiable in loc and scale (reparameterized)."""
    loc, scale = _param("normal", "loc", loc), _param("normal", "scale", scale)
    shape = _out_shape("normal", size, loc, scale)
    z = _generator("normal", seed).standard_normal(shape)
    return ops.add(loc, ops.mul(scale, Tensor(z)))


def uniform(low=0.0, high=1.0, size=None, seed=None):
    """Uniform samples in [low, high): low + (high - low) * u; differentiable in low and high."""
    low, high = _param("uniform", "low", low), _param("uniform", "high", high)
    shape = _out_shape("uniform", size, low, high)
    u = _generator("uniform", seed).random(shape)
    return ops.add(low, ops.mul(ops.sub(high, low), Tensor(u)))


def bernoulli(p, size=None, seed=None):
    """1.0 with probability p, else 0.0 (p a number or a tensor of probabilities)."""
    pd = plain_array(p, "bernoulli", "p").astype(np.float64)
    if np.any(~((pd >= 0) & (pd <= 1))):
        raise ApsiError("bernoulli: p must lie in [0, 1]")
    shape = _out_shape("bernoulli", size, Tensor(pd))
    u = _generator("bernoulli", seed).random(shape)
    return Tensor((u < pd).astype(np.float64))


def choice(a, size=None, replace=True, p=None, seed=None):
    """Samples from a (an int n means 0..n-1; else the rows of a tensor/list), with probabilities p."""
    g = _generator("choice", seed)
    if type(a) is int:
        if a < 1:
            raise ApsiError(f"choice: a must be an int >= 1 or a non-empty tensor, got {a}")
        n, values = a, None
    else:
        values = as_tensor(a, "choice", "a")
        if values.ndim == 0 or values.shape[0] == 0:
            raise ApsiError(f"choice: a must be an int >= 1 or a non-empty tensor, got {describe(a)}")
        n = values.shape[0]
    probs = None
    if p is not None:
        probs = plain_array(p, "choice", "p").astype(np.float64)
        if probs.shape != (n,) or np.any(probs < 0) or abs(probs.sum() - 1.0) > 1e-8:
            raise ApsiError(f"choice: p must be {n} probabilities >= 0 that sum to 1")
    shape = _size("choice", size)
    try:
        idx = g.choice(n, size=shape, replace=bool(replace), p=probs).astype(np.int64)
    except ValueError:
        raise ApsiError(f"choice: cannot take {int(np.prod(shape))} samples from {n} without "
                        "replacement; pass replace=true or a smaller size") from None
    return Tensor(idx) if values is None else getitem(values, idx)


def shuffle(x, seed=None):
    """A copy of x with its rows (first axis) in random order (x itself is unchanged)."""
    x = as_tensor(x, "shuffle")
    if x.ndim == 0:
        raise ApsiError("shuffle: a 0-d tensor has no rows to shuffle")
    return getitem(x, _generator("shuffle", seed).permutation(x.shape[0]).astype(np.int64))
