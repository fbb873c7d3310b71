"""defop: add a differentiable op (a fused kernel for the layers, say) without touching the core.

    conv = defop("conv1d", forward, vjp_x, vjp_w)           # one VJP per tensor argument
    y = conv(x, w, stride=2)                                  # keyword arguments are static params

`forward(*arrays, **params) -> array` runs on ndarrays. Each VJP is
`rule(xp, g, ans, *args, **params) -> gradient of that argument`, written with operators and `xp.*`
like the rules in vjps.py, so it serves first and higher order alike. A rule that needs raw NumPy
(most fused kernels) is declared with second_order=False: first-order gradients work, and a
hessian or grad-of-grad through it stops with an error naming the op.
"""

from apsi_lang.errors import ApsiError

from .ops import apply
from .tensor import as_tensor
from .vjps import RULES, register_name

DEFINED = set()        # the names added here (the core's own rule table is checked apart from them)


def first_order_only(rule):
    """Mark a VJP that cannot itself be differentiated (it runs on raw arrays)."""
    rule.first_order_only = True
    return rule


def defop(name, forward, *vjps, second_order=True):
    """Register op `name` and return the function that applies it to tensors."""
    if name in RULES:
        raise ApsiError(f"defop: an op named {name!r} already exists")
    rules = tuple(vjps) if second_order else tuple(first_order_only(r) for r in vjps)
    RULES[name] = rules
    DEFINED.add(name)
    register_name(name, rules)

    def op(*args, **params):
        if len(args) != len(rules):
            raise ApsiError(f"{name}: expects {len(rules)} tensor argument(s), got {len(args)}")
        return apply(name, forward, tuple(as_tensor(a, name) for a in args), params)

    op.__name__ = op.__qualname__ = name
    return op
