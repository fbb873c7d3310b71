"""grad, value_and_grad and jacobian through quantities (hessian is jacobian of grad).

Units do not depend on values, so differentiation runs on the magnitudes: the function is called
with quantities rebuilt around nn's tape tensors, its result's unit is noted, and each gradient gets
unit(f) / unit(x). nn/autograd/autodiff.py hands a call here when an argument is a quantity.
"""

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd import tree

from . import registry as R
from .quantity import Quantity, make
from .registry import Unit


def _strip(x):
    """(magnitude, unit) for a quantity or unit, (x, None) for anything else."""
    t = type(x)
    if t is Quantity:
        return x._m, x._u
    if t is Unit:
        return 1.0, x
    return x, None


def _ratio(uf, ux):
    if ux is None:
        return uf
    if uf is None:
        return R.power(ux, -1)
    return R.div(uf, ux)


def _prepare(f, argnums, args, fn):
    """(plain args, their units, the wrapped function, a one-item list receiving unit(f)). An
    argument may be a tree (a record or list) of quantities: its units are kept per leaf."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not callable(f):
        raise ApsiError(f"{fn}: expects a function")
    split = [_strip_tree(a) for a in args]
    plain_args = [m for m, _ in split]
    units = [u for _, u in split]
    seen = [None]

    def wrapped(*xs, has_aux=False, **kwargs):
        xs = [_dress(x, u) for x, u in zip(xs, units)]
        out = f(*xs, **kwargs)
        if has_aux:
            if not (isinstance(out, tuple | list) and len(out) == 2):
                return out          # nn's own check explains what has_aux needs
            m, seen[0] = _strip(out[0])
            return m, out[1]
        m, seen[0] = _strip_tree(out)       # a tree for jacobian of grad (hessian of a record)
        return m

    return nums, plain_args, units, wrapped, seen


def _strip_tree(x):
    """(x with each leaf's magnitude, the leaves' units: one unit for a leaf, a list for a tree)."""
    if tree.is_leaf(x):
        return _strip(x)
    pairs = [_strip(leaf) for leaf in tree.leaves(x)]
    return tree.unflatten_like(x, [m for m, _ in pairs]), [u for _, u in pairs]


def _dress(x, units):
    """The inverse of _strip_tree: quantities rebuilt around the leaves (the tape's tensors)."""
    if type(units) is not list:
        return x if units is None else Quantity(x, units)
    leaves = tree.leaves(x)
    return tree.unflatten_like(x, [m if u is None else Quantity(m, u) for m, u in zip(leaves, units)])


def _with_units(grads, nums, units, uf):
    def one(g, ux):
        if type(ux) is not list:
            return make(g, _ratio(uf, ux))
        leaves = tree.leaves(g)
        return tree.unflatten_like(g, [make(v, _ratio(uf, u)) for v, u in zip(leaves, ux)])

    if len(nums) == 1:
        return one(grads, units[nums[0] % len(units)])
    return tuple(one(g, units[i % len(units)]) for g, i in zip(grads, nums))


def value_and_grad(f, argnums, has_aux, args, kwargs):
    from apsi_layers.nn.autograd import autodiff

    nums, plain_args, units, wrapped, seen = _prepare(f, argnums, args, "value_and_grad")

    def g(*xs, **kw):
        return wrapped(*xs, has_aux=has_aux, **kw)

    value, grads = autodiff.value_and_grad(g, argnums, has_aux)(*plain_args, **kwargs)
    uf = seen[0]
    value = (make(value[0], uf), value[1]) if has_aux else make(value, uf)
    return value, _with_units(grads, nums, units, uf)


def jacobian(f, argnums, args, kwargs):
    from apsi_layers.nn.autograd import autodiff

    nums, plain_args, units, wrapped, seen = _prepare(f, argnums, args, "jacobian")
    jac = autodiff.jacobian(wrapped, argnums)(*plain_args, **kwargs)
    if type(seen[0]) is not list:
        return _with_units(jac, nums, units, seen[0])
    # f returned a tree (grad of a record: hessian): one block per output leaf, each holding the
    # differentiated arguments' leaves in order; block j, leaf i is in unit(out_j) / unit(x_i)
    ins = [u for i in nums for u in (units[i % len(units)] if type(units[i % len(units)]) is list
                                     else [units[i % len(units)]])]
    flat = tree.leaves(jac)
    dressed = [make(v, _ratio(seen[0][k // len(ins)], ins[k % len(ins)])) for k, v in enumerate(flat)]
    return tree.unflatten_like(jac, dressed)


IMPLS = {"value_and_grad": value_and_grad, "jacobian": jacobian}
