"""What `use units` gives Apsi code: the catalogue `u` and the functions on quantities."""

from apsi_lang.errors import ApsiError
from apsi_lang.values import a_type

from . import registry as R
from .quantity import Quantity, convert, split
from .registry import Unit


class Catalogue:
    """`u.m`, `u.km`, `u.hbar`: every unit of pint's registry, looked up on first use and cached.
    Its allow-list (every unit name, with prefixes) is set when the module loads."""

    __slots__ = ()
    __apsi_type__ = "unit catalogue"
    __apsi_attrs__ = frozenset()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return R.parse(name, f"u.{name}")

    @staticmethod
    def __apsi_refusal__(name):
        return R.no_such_unit(name)

    def __repr__(self):
        return "<units: u.m, u.km, u.s, u.kg, u.N, u.degC, u.c, u.G, u.hbar, … (docs/units.md)>"

    __str__ = __repr__


def _unit_arg(unit, fn):
    if type(unit) is Unit:
        return unit
    if type(unit) is Quantity and unit._m == 1:
        return unit._u
    if type(unit) is str:
        return R.parse(unit, fn)
    raise ApsiError(f"{fn}: the unit must be a text such as \"km/h\" or a unit such as u.m, not "
                    f"{a_type(unit)}")


def unit(text):
    """The unit a text names: unit("kg*m/s^2")."""
    return _unit_arg(text, "unit")


def quantity(value, unit):
    """value (a number, a list or a tensor) in `unit`: quantity(3, "km/h")."""
    u = _unit_arg(unit, "quantity")
    t = type(value)
    if t is Quantity or t is Unit:
        return Quantity(convert(value, u, "quantity"), u)
    if t is not int and t is not float:
        from apsi_layers import nn

        value = nn.as_tensor(value, "quantity", "value")
    return Quantity(value, u)


def to(q, unit):
    """q converted to `unit`: to(v, "km/h")."""
    u = _unit_arg(unit, "to")
    _check_value(q, "to")
    return Quantity(convert(q, u, "to"), u)


def magnitude(q, unit=None):
    """The plain number/tensor of q in `unit` (in q's own unit when none is given)."""
    _check_value(q, "magnitude")
    if unit is None:
        return split(q)[0]
    return convert(q, _unit_arg(unit, "magnitude"), "magnitude")


def si(q):
    """q in SI base units (km/h -> m/s, degC -> K)."""
    _check_value(q, "si")
    m, u = split(q)
    if u is None:
        return m
    base = R.base(u)
    return Quantity(convert(q, base, "si"), base)


def unit_of(q):
    """The unit of q (`dimensionless` for a plain value)."""
    _check_value(q, "unit_of")
    return split(q)[1] or R.dimensionless_unit()


def dimension(q):
    """The dimension of q (or of a unit) as text: "length/time²"."""
    return R.dimension_text(unit_of(q))


def dimensionless(q):
    """Whether q (or a unit) has no dimension."""
    return unit_of(q)._dimless


def _check_value(q, fn):
    t = type(q)
    if t is Quantity or t is Unit or t is int or t is float:
        return
    from apsi_layers import nn

    if t is not nn.Tensor:
        raise ApsiError(f"{fn}: expects a value with a unit (e.g. 3 * u.m), a number or a tensor, "
                        f"not {a_type(q)}")


def units_exports():
    from . import autodiff, nn_impls

    R.registry()
    R.dimensionless_unit()
    if not Catalogue.__apsi_attrs__:
        Catalogue.__apsi_attrs__ = R.names()
    nn_impls.install()
    nn_impls.IMPLS.update(autodiff.IMPLS)
    from . import toolbox_impls  # issue 35's statistics, special functions, curves

    nn_impls.IMPLS.update(toolbox_impls.IMPLS)
    from apsi_lang import csv_read

    csv_read.QUANTITY = quantity            # read_csv(units=true): "speed [km/h]" columns
    return {"u": Catalogue(), "unit": unit, "quantity": quantity, "to": to, "magnitude": magnitude,
            "si": si, "unit_of": unit_of, "dimension": dimension, "dimensionless": dimensionless}
