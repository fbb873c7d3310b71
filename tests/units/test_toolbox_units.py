# ruff: noqa: E501  (pint references kept on one line)
"""Issue 35's nn functions on quantities, against pint computed here: levels keep the unit, spreads
are deltas (Δ°C for °C), products multiply units, special functions and offset areas are refused;
and the same through a real `apsi -e` program."""

import math
import os
import subprocess
import sys

import numpy as np
import pint
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn

PINT = pint.UnitRegistry()
T = [20.0, 30.0, 45.0, 12.5]


def parts(U, q):
    """(magnitude as an ndarray or float, the unit's text)."""
    m = U.magnitude(q, str(U.unit_of(q)))
    return (m.data if isinstance(m, nn.Tensor) else m), str(U.unit_of(q))


def pint_text(q):
    return format(q.units, "~P")


@pytest.mark.parametrize("name, call", [
    ("nanmax", lambda q: np.nanmax(q)), ("nanmin", lambda q: np.nanmin(q)),
    ("nanmedian", lambda q: np.nanmedian(q)), ("nanstd", lambda q: np.nanstd(q)),
    ("nanvar", lambda q: np.nanvar(q)), ("average", lambda q: np.average(q, weights=[1.0, 2.0, 3.0, 4.0])),
    ("nanquantile", lambda q: np.nanquantile(q, 0.3)),
])
@pytest.mark.parametrize("unit", ["m", "degC", "km/h"])
def test_reductions_follow_pint(U, name, call, unit):
    q = U.quantity(nn.array(T), unit)
    ours = {"average": lambda: nn.average(q, weights=[1.0, 2.0, 3.0, 4.0]),
            "nanquantile": lambda: nn.nanquantile(q, 0.3)}.get(name, lambda: getattr(nn, name)(q))()
    theirs = call(PINT.Quantity(np.array(T), unit))
    m, text = parts(U, ours)
    assert math.isclose(float(m), theirs.magnitude, rel_tol=1e-14)
    assert text == pint_text(theirs)


def test_ptp_and_cov_are_differences_and_their_squares(U):
    t = U.quantity(nn.array(T), "degC")
    m, text = parts(U, nn.ptp(t))
    pt = PINT.Quantity(np.array(T), "degC")
    diff = pt.max() - pt.min()                     # pint's subtraction: a delta
    assert text == pint_text(diff) == "Δ°C" and m == diff.magnitude
    m, text = parts(U, nn.cov(t))
    assert text == pint_text(np.nanvar(pt)) and math.isclose(float(m), np.cov(T), rel_tol=1e-15)
    d = U.quantity(nn.array([[1.0, 2.0, 4.0], [0.5, 0.0, 1.0]]), "m")
    m, text = parts(U, nn.cov(d, y=U.quantity(nn.array([300.0, 100.0, 0.0]), "cm")))
    assert text == "m²" and np.allclose(m, np.cov([[1.0, 2.0, 4.0], [0.5, 0.0, 1.0]], [3.0, 1.0, 0.0]), rtol=1e-15)
    r = nn.corrcoef(d[0], U.quantity(nn.array([3.0, 1.0, 0.0]), "s"))
    assert type(r) is nn.Tensor and np.allclose(r.data, np.corrcoef([1.0, 2.0, 4.0], [3.0, 1.0, 0.0]))


def test_products_multiply_units_as_pint(U):
    y = U.quantity(nn.array([1.0, 2.0, 4.0]), "m")
    x = U.quantity(nn.array([0.0, 1.0, 3.0]), "s")
    theirs = np.trapezoid(PINT.Quantity([1.0, 2.0, 4.0], "m"), x=PINT.Quantity([0.0, 1.0, 3.0], "s"))
    m, text = parts(U, nn.trapezoid(y, x))
    assert text == pint_text(theirs) and m == theirs.magnitude
    m, text = parts(U, nn.trapezoid(y, dx=U.quantity(0.5, "s")))
    assert text == "m·s" and m == np.trapezoid([1.0, 2.0, 4.0], dx=0.5)
    m, text = parts(U, nn.convolve(y, U.quantity(nn.array([1.0, -1.0]), "N")))
    assert text == pint_text(PINT.Quantity(1.0, "m") * PINT.Quantity(1.0, "N"))
    assert np.array_equal(m, np.convolve([1.0, 2.0, 4.0], [1.0, -1.0]))
    with pytest.raises(ApsiError, match="cannot multiply °C"):
        nn.trapezoid(U.quantity(nn.array(T), "degC"))
    with pytest.raises(pint.errors.OffsetUnitCalculusError):      # pint refuses it too
        np.trapezoid(PINT.Quantity(np.array(T), "degC"), x=PINT.Quantity(np.arange(4.0), "s"))


def test_interp_and_digitize_convert_x_into_xps_unit(U):
    xp, fp = U.quantity(nn.array([1.0, 2.0, 3.0]), "m"), U.quantity(nn.array([10.0, 20.0, 0.0]), "kg")
    x = U.quantity(nn.array([150.0, 250.0]), "cm")
    theirs = np.interp(PINT.Quantity([150.0, 250.0], "cm").to("m"), PINT.Quantity([1.0, 2.0, 3.0], "m"),
                       PINT.Quantity([10.0, 20.0, 0.0], "kg"))
    m, text = parts(U, nn.interp(x, xp, fp))
    assert text == "kg" and np.allclose(m, theirs.magnitude, rtol=1e-15)
    assert nn.digitize(x, xp).tolist() == np.digitize([1.5, 2.5], [1.0, 2.0, 3.0]).tolist()
    with pytest.raises(ApsiError, match="different dimensions"):
        nn.interp(U.quantity(1.0, "s"), xp, fp)


def test_levels_and_indices(U):
    q = U.quantity(nn.array([3.0, 1.0, 4.0, 1.0]), "degC")
    m, text = parts(U, nn.cummax(q))
    assert text == "°C" and m.tolist() == np.maximum.accumulate([3.0, 1.0, 4.0, 1.0]).tolist()
    assert nn.nanargmax(q).item() == 2 and nn.argwhere(q).shape == (4, 1)
    assert [t.tolist() for t in nn.nonzero(q)] == [[0, 1, 2, 3]]


@pytest.mark.parametrize("name", ["gammaln", "erfc", "logit", "expit", "arccosh", "digamma"])
def test_special_functions_need_plain_numbers(U, name):
    with pytest.raises(ApsiError, match=f"{name}: the argument must be dimensionless"):
        getattr(nn, name)(U.quantity(2.0, "m"))
    assert math.isclose(float(getattr(nn, name)(U.quantity(0.5, "m") / U.quantity(50.0, "cm"))),
                        float(getattr(nn, name)(1.0)), rel_tol=1e-15)


def test_an_apsi_program_prints_pints_units():
    src = """use nn
use units
let t = quantity([20.0, 30.0, 45.0], "degC")
print(nanmax(t), "|", nanstd(t), "|", ptp(t), "|", to(nanstd(t), "delta_degF"), "|", nanvar(t))
print(gammaln(3 * u.m))
"""
    env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    out = subprocess.run([sys.executable, "-m", "apsi", "-e", src], capture_output=True, text=True, env=env,
                         timeout=120)
    first = out.stdout.splitlines()[0].split(" | ")
    pt = PINT.Quantity(np.array([20.0, 30.0, 45.0]), "degC")
    std = np.nanstd(pt)
    assert first[0] == "45.0 °C"
    assert first[1] == f"{float(std.magnitude)!r} {pint_text(std)}" == f"{float(std.magnitude)!r} Δ°C"
    assert first[2] == "25.0 Δ°C"
    assert math.isclose(float(first[3].split()[0]), std.to("delta_degF").magnitude, rel_tol=1e-14)
    assert first[3].split()[1] == "Δ°F"
    assert first[4].split()[1] == pint_text(np.nanvar(pt)) == "Δ°C²"
    assert out.returncode == 1 and "<-e>:5:" in out.stderr and "gammaln: the argument must be dimensionless" in out.stderr
    assert "File \"" not in out.stderr
