"""grad, value_and_grad and jacobian through quantities (hessian is jacobian of grad).

Units do not depend on values, so differentiation runs on the magnitudes: the function is called
with quantities rebuilt around nn's tape tensors, its result's unit is noted, and each gradient gets
unit(f) / unit(x). nn/autodiff.py hands a call here when an argument is a quantity.
"""

from apsi_lang.errors import ApsiError

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
    """(plain args, their units, the wrapped function, a one-item list receiving unit(f))."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not callable(f):
        raise ApsiError(f"{fn}: expects a function")
    stripped = [_strip(a) for a in args]
    plain_args = [m for m, _ in stripped]
    units = [u for _, u in stripped]
    seen = [None]

    def wrapped(*xs, has_aux=False, **kwargs):
        xs = [x if u is None else Quantity(x, u) for x, u in zip(xs, units)]
        out = f(*xs, **kwargs)
        if has_aux:
            if not (isinstance(out, tuple | list) and len(out) == 2):
                return out          # nn's own check explains what has_aux needs
            m, seen[0] = _strip(out[0])
            return m, out[1]
        m, seen[0] = _strip(out)
        return m

    return nums, plain_args, units, wrapped, seen


def _with_units(grads, nums, units, uf):
    if len(nums) == 1:
        i = nums[0] % len(units)
        return make(grads, _ratio(uf, units[i]))
    return tuple(make(g, _ratio(uf, units[i % len(units)])) for g, i in zip(grads, nums))


def value_and_grad(f, argnums, has_aux, args, kwargs):
    from apsi_layers.nn import autodiff

    nums, plain_args, units, wrapped, seen = _prepare(f, argnums, args, "value_and_grad")

    def g(*xs, **kw):
        return wrapped(*xs, has_aux=has_aux, **kw)

    value, grads = autodiff.value_and_grad(g, argnums, has_aux)(*plain_args, **kwargs)
    uf = seen[0]
    value = (make(value[0], uf), value[1]) if has_aux else make(value, uf)
    return value, _with_units(grads, nums, units, uf)


def jacobian(f, argnums, args, kwargs):
    from apsi_layers.nn import autodiff

    nums, plain_args, units, wrapped, seen = _prepare(f, argnums, args, "jacobian")
    jac = autodiff.jacobian(wrapped, argnums)(*plain_args, **kwargs)
    return _with_units(jac, nums, units, seen[0])


IMPLS = {"value_and_grad": value_and_grad, "jacobian": jacobian}
