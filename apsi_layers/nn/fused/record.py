"""How a fused op goes on the tape: one entry, one backward function for all its arguments.

A fused op runs `forward(*arrays, **static) -> (out, saved)`. When no input is on the active tape it
gets `saved=None` asked for (training=False) and nothing is recorded, so inference keeps no
activations. Otherwise one tape entry holds a Backward object: the first argument's rule that the
backward pass calls computes the gradients of every argument on the tape at once (the parts share
work: a BPTT loop, a softmax, the col2im of a convolution), and the others pick theirs up.

The rules run on raw arrays, so these ops are first order only: a hessian through one stops with an
error naming the op (nn's own ops cover second order).
"""

from apsi_lang.errors import ApsiError

from ..autograd.extend import DEFINED, first_order_only
from ..autograd.tape import STATE
from ..autograd.tensor import Tensor, as_tensor
from ..autograd.vjps import RULES, register_name


class Backward:
    """The saved state of one call: `grads(g, needs) -> tuple` runs the op's backward once per g."""

    __slots__ = ("fn", "saved", "needs", "g", "out")

    def __init__(self, fn, saved, needs):
        self.fn, self.saved, self.needs = fn, saved, needs
        self.g = self.out = None

    def grad(self, k, g):
        if self.g is not g:
            self.out = list(self.fn(g, self.saved, self.needs))
            self.g = g
        gk, self.out[k] = self.out[k], None          # hand it over; keep no second reference
        return gk


def _rule(k):
    return first_order_only(lambda xp, g, ans, *datas, state: state.grad(k, g))


def fused(name, forward, backward, nargs):
    """An op on `nargs` tensor arguments (None allowed for optional ones) plus static keywords.

    forward(*arrays, training, **static) -> (out, saved); backward(g, saved, needs) -> one gradient
    (or None) per argument, where needs[k] says whether argument k wants one."""
    if name in RULES:
        raise ApsiError(f"fused op {name!r} is defined twice")
    rules = tuple(_rule(k) for k in range(nargs))
    RULES[name] = rules
    DEFINED.add(name)
    register_name(name, rules)

    def op(*args, **static):
        tape = STATE.tape
        parents = tuple(a.node if type(a) is Tensor and a.tape is tape else -1 for a in args)
        datas = tuple(None if a is None else a.data for a in args)
        recording = tape is not None and max(parents) >= 0
        out, saved = forward(*datas, training=recording, **static)
        if not recording:
            return Tensor(out)
        state = Backward(backward, saved, tuple(p >= 0 for p in parents))
        return tape.record(rules, parents, datas, out, {"state": state}, args)

    op.__name__ = op.__qualname__ = name
    return op


def tensor(x, fn, arg="x"):
    """x as a Tensor (None stays None): arrays, lists and numbers are welcome as constants."""
    return None if x is None else as_tensor(x, fn, arg)
