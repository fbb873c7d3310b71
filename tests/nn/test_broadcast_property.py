"""Property: for random broadcastable shapes, binary-op gradients have their input's shape and agree
with finite differences (the sum_to rule is where broadcasting bugs hide)."""

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from apsi_layers import nn

from .gradcheck import check_first_order, scalarize


@st.composite
def broadcast_pair(draw):
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    def side():
        keep = draw(st.integers(0, len(out)))
        dims = out[len(out) - keep:]
        return tuple(1 if draw(st.booleans()) else n for n in dims)
    return side(), side(), draw(st.sampled_from(["add", "sub", "mul", "div", "pow"]))


OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b * a,
       "div": lambda a, b: a / b, "pow": lambda a, b: a ** b}


@settings(max_examples=40, deadline=None)
@example(((3, 3, 3), (), "div"), 3)           # (signed weights cancelled here: 1.8e-6 off)
@given(broadcast_pair(), st.integers(0, 2 ** 31 - 1))
def test_broadcasting_gradients(pair, seed):
    sa, sb, op = pair
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 2.0, sa), rng.uniform(0.5, 2.0, sb)
    f = scalarize(OPS[op], a, b, seed=seed, positive=True)   # a, b > 0: every op's output is > 0 but sub's
    ga, gb = nn.grad(f, argnums=(0, 1))(nn.Tensor(a), nn.Tensor(b))
    assert ga.shape == sa and gb.shape == sb
    check_first_order(f, [a, b], 0)
    check_first_order(f, [a, b], 1)
