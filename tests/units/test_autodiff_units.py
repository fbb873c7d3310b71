"""grad, value_and_grad, jacobian and hessian through quantities: the gradient carries
unit(f)/unit(x), and its numbers are those of the same function on SI-free magnitudes."""

import numpy as np
import pytest

from apsi_layers import nn


def test_grad_carries_unit_f_over_unit_x(U):
    u = U.u
    g = 9.81 * u.m / u.s ** 2
    v = nn.grad(lambda t: 0.5 * g * t ** 2)(2 * u.s)
    assert str(U.unit_of(v)) == "m/s"
    assert U.magnitude(v).item() == pytest.approx(9.81 * 2)


def test_grad_of_a_plain_output_is_per_unit_of_x(U):
    u = U.u
    d = nn.grad(lambda x: nn.sum(x / (1 * u.km)))(nn.array([1.0, 2.0]) * u.m)
    assert str(U.unit_of(d)) == "1/km"       # f is in m/km (dimensionless), so d f/d x is in 1/km
    np.testing.assert_allclose(U.magnitude(d, "1/m").data, [1e-3, 1e-3])


def test_value_and_grad_with_two_arguments(U):
    u = U.u
    value, (da, db) = nn.value_and_grad(lambda a, b: a * b, argnums=[0, 1])(3 * u.m, 2 * u.s)
    assert str(value) == "6.0 m·s"
    assert str(da) == "2.0 s" and str(db) == "3.0 m"


def test_only_the_variable_gets_a_gradient_other_quantities_pass_through(U):
    u = U.u
    f = lambda x, k: nn.sum(k * x ** 2)       # noqa: E731
    d = nn.grad(f)(nn.array([1.0, 3.0]) * u.m, 2 * u.N / u.m)
    assert str(U.unit_of(d)) == "N"
    np.testing.assert_allclose(U.magnitude(d).data, [4.0, 12.0])


def test_jacobian_and_hessian_units(U):
    u = U.u
    j = nn.jacobian(lambda x: x * (2 * u.kg))(nn.array([1.0, 2.0]) * u.s)
    assert str(U.unit_of(j)) == "kg"
    np.testing.assert_allclose(U.magnitude(j).data, 2 * np.eye(2))
    h = nn.hessian(lambda x: x ** 3)(2 * u.s)
    assert str(U.unit_of(h)) == "s"
    assert U.magnitude(h).item() == pytest.approx(12.0)


def test_grad_is_the_derivative_in_the_units_it_names(U):
    """An independent check: a central difference of the same physics in the gradient's unit."""
    u = U.u
    f = lambda v: 0.5 * (3 * u.kg) * v ** 2      # noqa: E731  kinetic energy
    d = nn.grad(f)(U.quantity(72, "km/h"))       # momentum, in J/(km/h)
    h = 1e-4
    e = lambda kmh: 0.5 * 3 * (kmh / 3.6) ** 2  # noqa: E731  joules for a speed in km/h
    assert U.magnitude(d, "J/(km/h)").item() == pytest.approx((e(72 + h) - e(72 - h)) / (2 * h), rel=1e-6)
    assert U.magnitude(d, "kg*m/s").item() == pytest.approx(3 * 20.0)


def test_a_conversion_inside_grad_is_differentiated(U):
    """m + cm inside grad takes the taped path (the one-pass NumPy conversion is only for no tape)."""
    u = U.u
    y = nn.array([100.0, 250.0]) * u.cm
    d = nn.grad(lambda x: nn.sum((x + y) ** 2))(nn.array([1.0, 2.0]) * u.m)
    assert str(U.unit_of(d)) == "m"
    np.testing.assert_allclose(U.magnitude(d).data, [2 * (1 + 1.0), 2 * (2 + 2.5)])


def test_a_unit_mistake_inside_grad_is_an_error(U):
    from apsi_lang.errors import ApsiError

    u = U.u
    with pytest.raises(ApsiError, match=r"cannot add m \(length\) and s \(time\)"):
        nn.grad(lambda x: nn.sum(x + 1 * u.s))(2 * u.m)


def test_has_aux_keeps_the_extra_value(U):
    u = U.u
    (value, extra), d = nn.value_and_grad(lambda x: (x * x, "aux"), has_aux=True)(3 * u.m)
    assert str(value) == "9.0 m²" and extra == "aux" and str(d) == "6.0 m"
    g, extra = nn.grad(lambda x: (x * x, 7), has_aux=True)(3 * u.m)
    assert str(g) == "6.0 m" and extra == 7
