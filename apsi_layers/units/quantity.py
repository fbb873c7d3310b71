"""Quantity: a magnitude (a number or an nn Tensor) with a Unit, and its arithmetic.

Every operator checks dimensions through registry's cached rules, so a wrong unit is an ApsiError at
the Apsi line that mixed them (the runtime adds file:line), never a silently wrong number. The
common case (both operands in one unit) is a single identity test before the magnitudes' own op.
"""

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd.tape import STATE
from apsi_layers.nn.autograd.tensor import Tensor

from . import registry as R
from .registry import Unit

_NUMBER = (int, float)


class Quantity:
    __slots__ = ("_m", "_u")
    __apsi_attrs__ = frozenset({"shape", "ndim", "size"})
    __apsi_type__ = "quantity"
    __array_ufunc__ = None          # ndarray + quantity must come to Quantity.__radd__

    def __init__(self, m, u):
        self._m = m
        self._u = u

    @staticmethod
    def __apsi_refusal__(name):
        return (f"'.{name}' of a quantity is not available: a value with units exposes shape, ndim "
                "and size; use magnitude(q, \"unit\") for its number, unit_of(q), dimension(q) or "
                "to(q, \"unit\")")

    @property
    def shape(self):
        return getattr(self._m, "shape", ())

    @property
    def ndim(self):
        return getattr(self._m, "ndim", 0)

    @property
    def size(self):
        return getattr(self._m, "size", 1)

    def __repr__(self):
        from apsi_lang.values import show

        return f"{show(self._m)} {self._u._text}"

    __str__ = __repr__

    def __format__(self, spec):
        m = self._m
        if spec and (type(m) in _NUMBER or getattr(m, "size", 0) == 1):
            return f"{format(m, spec)} {self._u._text}"
        return format(str(self), spec)

    def __len__(self):
        return len(self._m)

    def __iter__(self):
        u = self._u
        for v in self._m:
            yield Quantity(v, u)

    def __getitem__(self, index):
        return Quantity(self._m[index], self._u)

    def __setitem__(self, index, value):
        raise ApsiError("quantities are immutable: build a new one, e.g. with where(mask, new, q)")

    def __bool__(self):
        return bool(self._m)

    def __float__(self):
        if not self._u._dimless:
            raise ApsiError(f"float: {R.describe_unit(self._u)} is not a plain number; take "
                            f"magnitude(q, \"{self._u._text}\") for the number in a unit")
        return float(self._m) * R.factor(self._u, R.dimensionless_unit())[0]

    def __neg__(self):
        return Quantity(-self._m, self._u)

    def __pos__(self):
        return self

    def __abs__(self):
        return Quantity(abs(self._m), self._u)

    def __round__(self, ndigits=None):
        return Quantity(round(self._m, ndigits), self._u)

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return div(other, self)

    def __pow__(self, other):
        return power(self, other)

    def __rpow__(self, other):
        return power(other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __mod__(self, other):
        am, bm, u = same_unit(self, other, "%")
        return Quantity(am % bm, u)

    def __floordiv__(self, other):
        am, bm, _ = same_unit(self, other, "//")
        return am // bm

    def __lt__(self, other):
        am, bm, _ = same_unit(self, other, "<")
        return am < bm

    def __le__(self, other):
        am, bm, _ = same_unit(self, other, "<=")
        return am <= bm

    def __gt__(self, other):
        am, bm, _ = same_unit(self, other, ">")
        return am > bm

    def __ge__(self, other):
        am, bm, _ = same_unit(self, other, ">=")
        return am >= bm

    def __eq__(self, other):
        am, bm, _ = same_unit(self, other, "==")
        return am == bm

    def __ne__(self, other):
        am, bm, _ = same_unit(self, other, "!=")
        return am != bm

    __hash__ = None


def split(x):
    """(magnitude, Unit or None) of any operand: a plain value has no unit."""
    t = type(x)
    if t is Quantity:
        return x._m, x._u
    if t is Unit:
        return 1, x         # 2 * u.m is 2 m, as in pint
    if t in _NUMBER or t is bool:
        return x, None
    return _plain_tensor(x), None


def _plain_tensor(x):
    from apsi_layers.nn import as_tensor

    if type(x) is Tensor:
        return x
    try:
        return as_tensor(x, "units", "operand")
    except ApsiError:
        from apsi_lang.values import a_type

        raise ApsiError(f"a value with units combines with numbers, tensors, lists of numbers and other "
                        f"values with units, not {a_type(x)}") from None


def make(m, u):
    """Quantity(m, u), or plain m when u is None or pint's plain dimensionless unit (m/m is 2.0)."""
    if u is None or u is R.DIMENSIONLESS:
        return m
    return Quantity(m, u)


def _is_zero(x):
    return type(x) in _NUMBER and x == 0


def _additive(op, a, b):
    am, au = split(a)
    bm, bu = split(b)
    if au is bu and not au._offset:       # the common case; degC ± degC follows pint's rules below
        return Quantity(am + bm, au) if op == "+" else Quantity(am - bm, au)
    if au is None and _is_zero(am):     # 0 + q (what sum([...]) starts with), as pint allows
        return Quantity(bm if op == "+" else -bm, bu)
    if bu is None and _is_zero(bm):
        return Quantity(am, au)
    ru, alpha, beta, gamma = R.additive(op, au or R.dimensionless_unit(), bu or R.dimensionless_unit())
    if alpha == 1.0 and gamma == 0.0 and type(am) is Tensor and type(bm) is Tensor and STATE.tape is None:
        out = bm.data * beta            # no tape: one NumPy pass for the conversion, one for the sum
        out += am.data
        return make(Tensor(out), ru)
    out = (am if alpha == 1.0 else am * alpha) + (bm if beta == 1.0 else bm * beta)
    return make(out if gamma == 0.0 else out + gamma, ru)


def add(a, b):
    return _additive("+", a, b)


def sub(a, b):
    return _additive("-", a, b)


def mul(a, b):
    am, au = split(a)
    bm, bu = split(b)
    if au is None:
        return make(am * bm, scalable(bu, "multiply"))
    if bu is None:
        return make(am * bm, scalable(au, "multiply"))
    return make(am * bm, R.mul(au, bu))


def scalable(u, what):
    """u, unless it is an offset temperature: pint refuses 2 * (1 °C) and (10 °C) / 2 as ambiguous
    (OffsetUnitCalculusError), and so does Apsi."""
    if u is not None and u._offset:
        raise ApsiError(f"cannot {what} a temperature in {u._text} by a number: on an offset scale "
                        f"that is ambiguous (pint refuses it too); make it with quantity(20, "
                        f"\"{u._pint!s}\"), convert it to K first, or scale a difference "
                        f"(delta_{u._pint!s})")
    return u


def div(a, b):
    am, au = split(a)
    bm, bu = split(b)
    if bu is None:
        return make(am / bm, scalable(au, "divide"))
    if au is None:
        return make(am / bm, R.power(bu, -1))
    return make(am / bm, R.div(au, bu))


def matmul(a, b):
    from apsi_layers.nn import matmul as mm

    am, au = split(a)
    bm, bu = split(b)
    u = scalable(bu, "multiply") if au is None else scalable(au, "multiply") if bu is None else R.mul(au, bu)
    return make(mm(am, bm), u)


def power(a, b):
    bm = plain(b, "**", "the exponent")
    am, au = split(a)
    if au is None:
        return am ** bm
    if type(bm) not in _NUMBER:
        n = getattr(bm, "size", 0)
        if n != 1:
            raise ApsiError(f"**: a value in {R.describe_unit(au)} can only be raised to one number "
                            "(its unit would differ per element); take magnitude(q, unit) first")
        bm = float(bm.item())
    return make(am ** bm, R.power(au, bm))


def plain(x, fn, what="the argument"):
    """x as a plain number/tensor: a dimensionless quantity is converted (deg -> rad, km/m -> 1000);
    a quantity with a dimension is an ApsiError naming `fn`."""
    t = type(x)
    if t is not Quantity and t is not Unit:
        return x
    m, u = split(x)
    if not u._dimless:
        raise ApsiError(f"{fn}: {what} must be dimensionless (a plain number or an angle), not "
                        f"{R.describe_unit(u)}; divide by a unit or take magnitude(q, unit) first")
    scale = R.factor(u, R.dimensionless_unit(), fn)[0]
    if scale == 1.0:
        return m
    if type(m) is Tensor and STATE.tape is None:
        return Tensor(m.data * scale)
    return m * scale


def same_unit(a, b, fn):
    """(a's magnitude, b's magnitude in a's unit, the unit): for comparisons, maximum, where, concat."""
    am, au = split(a)
    bm, bu = split(b)
    if au is bu:
        return am, bm, au
    if au is None and _is_zero(am):
        return am, bm, bu
    if bu is None and _is_zero(bm):
        return am, bm, au
    src, dst = bu or R.dimensionless_unit(), au or R.dimensionless_unit()
    if src._dim != dst._dim:
        raise ApsiError(f"{fn}: {R.describe_unit(dst)} and {R.describe_unit(src)} have different "
                        "dimensions: give both in units of one dimension")
    scale, offset = R.factor(src, dst, fn)
    bm = bm if scale == 1.0 else bm * scale
    return am, (bm if offset == 0.0 else bm + offset), au


def convert(q, unit, fn="to"):
    """q's magnitude expressed in `unit` (a Unit)."""
    m, u = split(q)
    if u is unit:
        return m
    scale, offset = R.factor(u or R.dimensionless_unit(), unit, fn)
    m = m if scale == 1.0 else m * scale
    return m if offset == 0.0 else m + offset


def _unit_ops():
    """Unit's operators: unit*unit is a unit, number*unit a quantity (9.81 * u.m)."""
    def u_mul(a, b):
        if type(a) is Unit and type(b) is Unit:
            return R.mul(a, b)
        return mul(a, b)

    def u_div(a, b):
        if type(a) is Unit and type(b) is Unit:
            return R.div(a, b)
        return div(a, b)

    def u_pow(a, n):
        if type(n) in _NUMBER:
            return R.power(a, n)
        return power(a, n)

    Unit.__mul__ = u_mul
    Unit.__rmul__ = lambda a, b: u_mul(b, a)
    Unit.__truediv__ = u_div
    Unit.__rtruediv__ = lambda a, b: u_div(b, a)
    Unit.__pow__ = u_pow


_unit_ops()


def _hook_into_fit():
    """Quantities exist from now on: fit and predict must look for them (apsi_layers/fit_hooks.py)."""
    from apsi_layers import fit_hooks

    fit_hooks.add("apsi_layers.units.training")


_hook_into_fit()
