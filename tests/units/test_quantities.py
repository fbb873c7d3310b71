"""Quantities from Python: conversions against pint's own results, and every arithmetic rule."""

import math

import numpy as np
import pint
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apsi_lang.errors import ApsiError
from apsi_layers import nn

PINT = pint.UnitRegistry()

CONVERSIONS = [("km/h", "m/s"), ("mi", "km"), ("degC", "degF"), ("degF", "K"), ("kWh", "J"),
               ("psi", "Pa"), ("lb", "kg"), ("deg", "rad"), ("eV", "J"), ("ly", "pc"),
               ("kg*m/s^2", "N"), ("gallon", "L"), ("hp", "W"), ("delta_degC", "delta_degF")]


@pytest.mark.parametrize("src, dst", CONVERSIONS)
@pytest.mark.parametrize("value", [0.0, 1.0, -3.5, 1234.5])
def test_conversions_match_pint(U, src, dst, value):
    expected = PINT.Quantity(value, src).to(dst).magnitude
    got = U.magnitude(U.to(U.quantity(value, src), dst))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-9)


def test_conversions_of_tensors_match_pint(U):
    values = np.array([0.0, 1.5, 100.0])
    got = U.magnitude(U.quantity(nn.array(values.tolist()), "km/h"), "ft/s")
    assert type(got) is nn.Tensor
    np.testing.assert_allclose(got.data, PINT.Quantity(values, "km/h").to("ft/s").magnitude, rtol=1e-13)


def test_the_catalogue_holds_si_prefixes_imperial_and_constants(U):
    u = U.u
    assert str(u.m) == "m" and str(u.km) == "km" and str(u.kilometer) == "km"
    assert U.magnitude(1 * u.c, "m/s") == 299792458.0
    assert U.magnitude(1 * u.G, "m^3/kg/s^2") == pytest.approx(6.6743e-11)
    assert U.magnitude(1 * u.hbar, "J*s") == pytest.approx(1.054571817e-34)
    assert U.magnitude(1 * u.inch, "cm") == pytest.approx(2.54)
    assert U.dimension(u.N) == "length·mass/time²"


def test_add_converts_to_the_left_units_unit(U):
    u = U.u
    s = 3 * u.km + 250 * u.m
    assert str(s) == "3.25 km"
    assert str(250 * u.m + 3 * u.km) == "3250.0 m"
    assert str(3 * u.km - 250 * u.m) == "2.75 km"


def test_add_of_different_dimensions_is_an_error_naming_units_and_dimensions(U):
    u = U.u
    with pytest.raises(ApsiError, match=r"cannot add m \(length\) and s \(time\)"):
        (1 * u.m) + (1 * u.s)
    with pytest.raises(ApsiError, match=r"cannot subtract m \(length\) and dimensionless"):
        (1 * u.m) - 2
    with pytest.raises(ApsiError, match="cannot add"):
        nn.linspace(0, 1, 3) * u.m + nn.ones(3)


def test_zero_may_be_added_as_pint_allows(U):
    u = U.u
    assert str(0 + 2 * u.m) == "2 m" and str(2 * u.m - 0) == "2 m"
    assert str(sum([1 * u.m, 2 * u.m])) == "3 m"


def test_multiply_divide_power_combine_units(U):
    u = U.u
    g = 9.81 * u.m / u.s ** 2
    assert str(g) == "9.81 m/s²"
    assert str(g * (2 * u.s) ** 2) == "39.24 m"
    assert (2 * u.m) / (4 * u.m) == 0.5          # m/m is a plain number
    assert type((2 * u.m) / (4 * u.m)) is float
    assert str(u.km / u.h) == "km/h" and str(u.m * u.m) == "m²"
    assert str((4 * u.m ** 2) ** 0.5) == "2.0 m"


def test_power_needs_a_plain_exponent(U):
    u = U.u
    with pytest.raises(ApsiError, match=r"exponent must be dimensionless.*m \(length\)"):
        (2 * u.m) ** (1 * u.m)
    with pytest.raises(ApsiError, match="only be raised to one number"):
        (2 * u.m) ** nn.array([1.0, 2.0])
    assert 2 ** ((1 * u.km) / (500 * u.m)) == pytest.approx(4.0)


def test_comparisons_convert_and_need_one_dimension(U):
    u = U.u
    x = nn.array([1.0, 2.0, 3.0]) * u.m
    assert (x > 150 * u.cm).tolist() == [False, True, True]
    assert (x == 100 * u.cm).tolist() == [True, False, False]
    assert (1 * u.km) > (999 * u.m)
    with pytest.raises(ApsiError, match=r"m \(length\) and s \(time\) have different dimensions"):
        assert (1 * u.m) < (1 * u.s)


def test_offset_temperatures_follow_pint(U):
    q = U.quantity
    diff = q(20, "degC") - q(68, "degF")
    expected = PINT.Quantity(20, "degC") - PINT.Quantity(68, "degF")
    assert str(U.unit_of(diff)) == "Δ°C" and U.magnitude(diff) == pytest.approx(expected.magnitude, abs=1e-9)
    assert str(q(5, "degC") + q(2, "delta_degC")) == "7 °C"
    with pytest.raises(ApsiError, match="cannot add °C and °C: on an offset scale"):
        q(1, "degC") + q(2, "degC")
    with pytest.raises(ApsiError, match="cannot multiply °C"):
        q(1, "degC") * q(2, "m")
    assert U.magnitude(q(25, "degC"), "K") == pytest.approx(298.15)


def test_printing_and_format_show_the_unit(U):
    u = U.u
    v = 3 * u.m / u.s
    assert format(v, ".2f") == "3.00 m/s"
    assert str(nn.array([1.0, 2.0]) * u.m) == "tensor([1., 2.]) m"
    assert str(U.to(nn.linspace(0, 2, 5) * u.m, "cm")[1]) == "50.0 cm"


def test_functions_on_quantities(U):
    u = U.u
    x = nn.array([1.0, 4.0, 9.0]) * u.m ** 2
    assert str(nn.sqrt(x)) == "tensor([1., 2., 3.]) m"
    assert str(U.unit_of(nn.mean(x))) == "m²" and U.magnitude(nn.mean(x)).item() == pytest.approx(14 / 3)
    assert str(nn.sum(x)) == "14.0 m²" and str(nn.max(x)) == "9.0 m²" and str(nn.min(x)) == "1.0 m²"
    assert nn.argmax(x).item() == 2
    assert nn.sin(90 * u.deg).item() == pytest.approx(1.0)
    assert nn.exp((1 * u.m) / (1 * u.km)).item() == pytest.approx(math.exp(0.001))
    with pytest.raises(ApsiError, match=r"exp: the argument must be dimensionless.*m \(length\)"):
        nn.exp(1 * u.m)
    with pytest.raises(ApsiError, match=r"log: the argument must be dimensionless"):
        nn.log(x)


def test_matmul_multiplies_units(U):
    u = U.u
    f = nn.array([[1.0, 2.0], [3.0, 4.0]]) * u.N
    d = nn.array([1.0, 1.0]) * u.m
    w = nn.matmul(f, d)
    assert U.magnitude(w, "J").tolist() == [3.0, 7.0]
    assert U.magnitude(f @ d, "J").tolist() == [3.0, 7.0]


def test_where_concat_stack_clip_need_compatible_units(U):
    u = U.u
    x = nn.array([1.0, 2.0]) * u.m
    y = nn.array([100.0, 300.0]) * u.cm
    assert U.magnitude(nn.where(nn.array([True, False]), x, y), "m").tolist() == [1.0, 3.0]
    assert U.magnitude(nn.concat([x, y]), "m").tolist() == [1.0, 2.0, 1.0, 3.0]
    assert U.magnitude(nn.stack([x, y]), "m").shape == (2, 2)
    assert U.magnitude(nn.clip(x, 150 * u.cm, None), "m").tolist() == [1.5, 2.0]
    for bad in (lambda: nn.concat([x, x / u.s]), lambda: nn.where(nn.array([True, False]), x, 1 * u.s),
                lambda: nn.stack([x, nn.ones(2)])):
        with pytest.raises(ApsiError, match="have different dimensions"):
            bad()


def test_tensor_with_plain_ops_unchanged(U):
    """nn's own values never see units: registering quantities leaves plain tensors as they were."""
    a = nn.array([1.0, 2.0])
    assert type(a + a) is nn.Tensor and type(nn.exp(a)) is nn.Tensor
    with pytest.raises(ApsiError, match="argument x must be a tensor"):
        nn.exp("text")


def test_unit_texts_and_errors(U):
    assert str(U.unit("kg*m/s^2")) == "kg·m/s²"
    assert U.unit("km/h") is U.u.km / U.u.h
    with pytest.raises(ApsiError, match="unit: 'furlongs per' is not a unit pint knows"):
        U.unit("furlongs per")
    with pytest.raises(ApsiError, match="to: cannot convert m \\(length\\) to s \\(time\\)"):
        U.to(1 * U.u.m, "s")
    with pytest.raises(ApsiError, match="quantity: the unit must be a text"):
        U.quantity(1, 3)
    assert U.dimensionless(U.u.rad) and not U.dimensionless(U.u.m)
    assert U.dimension(2.0) == "dimensionless"
    assert str(U.si(U.quantity(36, "km/h"))) == "10.0 m/s"


def test_values_that_are_not_numbers_are_refused_by_name(U):
    with pytest.raises(ApsiError, match="a value with units combines with numbers.*not a str"):
        1 * U.u.m + "a"


UNITS = ["m", "cm", "km", "inch", "ft", "mi", "s", "ms", "h", "kg", "g", "lb", "N", "J", "m/s", "km/h",
         "degC", "K", "degF", "delta_degC", "rad", "deg"]


def _pint_or_error(fn):
    try:
        return fn(), None
    except (pint.DimensionalityError, pint.OffsetUnitCalculusError) as e:
        return None, e


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(UNITS), st.sampled_from(UNITS), st.sampled_from("+-*/<"),
       st.floats(-1e3, 1e3, allow_nan=False), st.floats(-1e3, 1e3, allow_nan=False))
def test_arithmetic_agrees_with_pint(ua, ub, op, x, y):
    """Any two units, any operator: the same value as pint's, or an error exactly when pint raises."""
    from apsi_layers.units.exports import units_exports

    U = units_exports()
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "/": lambda a, b: a / b, "<": lambda a, b: a < b}
    if op == "/" and y == 0:
        return
    expected, error = _pint_or_error(lambda: ops[op](PINT.Quantity(x, ua), PINT.Quantity(y, ub)))
    if op == "<" and error is None:
        # pint compares °C with Δ°C in kelvin (0 °C > 1 Δ°C); Apsi refuses, as pint's own `to` does
        error = _pint_or_error(lambda: PINT.Quantity(y, ub).to(ua))[1]
    if error is not None:
        with pytest.raises(ApsiError):
            ops[op](U["quantity"](x, ua), U["quantity"](y, ub))
        return
    got = ops[op](U["quantity"](x, ua), U["quantity"](y, ub))
    if op == "<":
        assert bool(got) == bool(expected)
        return
    if not isinstance(expected, PINT.Quantity):
        assert U["magnitude"](got) == pytest.approx(expected, rel=1e-12, abs=1e-9)
        return
    text = format(expected.units, "~C") or "dimensionless"
    assert U["magnitude"](got, text) == pytest.approx(expected.magnitude, rel=1e-12, abs=1e-9)
