"""Offset temperatures, spreads, products and gradients over records of quantities (issue 35), as
users run them, against pint computed here: what pint refuses Apsi refuses at the line; what pint
computes Apsi computes in the same unit."""

import traceback

import numpy as np
import pint
import pytest

from apsi_lang.errors import ApsiError

from .test_programs import apsi

UREG = pint.UnitRegistry()
Q = UREG.Quantity
T = [20.0, 30.0, 45.0]


HEAD = "use nn\nuse units\nlet t = quantity(" + str(T) + ", \"degC\")\n"


def run_program(tmp_path, body):
    prog = tmp_path / "temps.apsi"
    prog.write_text(HEAD + body)
    return apsi(prog, tmp_path)


REFUSED = [
    ("2 * quantity(1, \"degC\")", lambda: 2 * Q(1, "degC")),
    ("quantity(1, \"degC\") * 2", lambda: Q(1, "degC") * 2),
    ("quantity(10, \"degC\") / 2", lambda: Q(10, "degC") / 2),
    ("dot([1.0, 2.0], t[:2])", lambda: np.dot(np.array([1.0, 2.0]), Q(np.array(T[:2]), "degC"))),
    ("dot(t[:2], [1.0, 2.0])", lambda: np.dot(Q(np.array(T[:2]), "degC"), np.array([1.0, 2.0]))),
    ("sum(t)", lambda: np.sum(Q(np.array(T), "degC"))),
    ("cumsum(t)", lambda: np.cumsum(Q(np.array(T), "degC"))),
    ("nansum(t)", lambda: np.nansum(Q(np.array(T), "degC"))),
]


@pytest.mark.parametrize("expr,pint_call", REFUSED, ids=[e for e, _ in REFUSED])
def test_what_pint_refuses_on_an_offset_scale_is_refused(run, expr, pint_call):
    with pytest.raises(pint.errors.OffsetUnitCalculusError):
        pint_call()
    with pytest.raises(ApsiError, match="offset scale") as e:
        run(HEAD + f"let x = {expr}\nprint(\"not reached\")\n")
    apsi_lines = [f.lineno for f in traceback.extract_tb(e.tb) if f.filename.endswith("t.apsi")]
    assert apsi_lines == [4]                 # raised at the line that scaled or summed


def test_a_refusal_names_the_line_without_a_python_traceback(tmp_path):
    p = run_program(tmp_path, "let x = 2 * quantity(1, \"degC\")\nprint(\"not reached\")\n")
    assert p.returncode != 0 and "not reached" not in p.stdout
    assert "temps.apsi:4:" in p.stderr and "offset scale" in p.stderr
    assert "Traceback (most recent call last):\n  File" not in p.stderr


def test_spreads_of_temperatures_are_deltas_as_in_pint(tmp_path):
    p = run_program(tmp_path, "print(magnitude(std(t), \"delta_degC\"), unit_of(std(t)))\n"
                      "print(magnitude(to(std(t), \"delta_degF\")))\n"
                      "print(magnitude(diff(t), \"delta_degC\").tolist(), unit_of(diff(t)))\n"
                      "print(magnitude(var(t)), unit_of(var(t)))\n"
                      "print(magnitude(mean(t), \"degC\"), unit_of(mean(t)))\n")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    t = Q(np.array(T), "degC")
    std, diff, var, mean = np.std(t), np.diff(t), np.var(t), np.mean(t)
    value, unit = lines[0].split()
    assert float(value) == pytest.approx(std.m, rel=1e-14) and unit == f"{std.units:~P}" == "Δ°C"
    assert float(lines[1]) == pytest.approx(std.to("delta_degF").m, rel=1e-14)
    assert lines[2].startswith(str(diff.m.tolist())) and lines[2].endswith(f"{diff.units:~P}")
    value, unit = lines[3].split()
    assert float(value) == pytest.approx(var.m, rel=1e-14) and unit == f"{var.units:~P}"
    value, unit = lines[4].split()
    assert float(value) == pytest.approx(mean.m, rel=1e-14) and unit == f"{mean.units:~P}" == "°C"


def test_var_prod_dot_norm_of_quantities_carry_pint_units(tmp_path):
    x, s = [2.0, 3.0, 4.0], [1.0, 0.5, 2.0]
    p = run_program(tmp_path, f"let x = quantity({x}, \"m\")\nlet s = quantity({s}, \"s\")\n"
                      "for v in [var(x), prod(x), dot(x, s), norm(x), inner(x, s), vdot(x, s), std(x)]:\n"
                      "    print(magnitude(v), unit_of(v))\n")
    assert p.returncode == 0, p.stderr
    qx, qs = Q(np.array(x), "m"), Q(np.array(s), "s")
    want = [np.var(qx), np.prod(qx), np.dot(qx, qs), np.linalg.norm(qx), np.inner(qx, qs),
            np.vdot(qx, qs), np.std(qx)]
    for line, w in zip(p.stdout.splitlines(), want, strict=True):
        value, unit = line.split()
        assert float(value) == pytest.approx(float(w.m), rel=1e-14)
        assert UREG.parse_units(unit.replace("·", "*").replace("²", "**2").replace("³", "**3")) == w.units


def test_grad_over_a_record_of_quantities(tmp_path):
    p = run_program(tmp_path, "let g = grad(fn(p) => p.a * p.b)({a: 2 * u.m, b: 3 * u.s})\n"
                      "print(magnitude(g.a), unit_of(g.a), magnitude(g.b), unit_of(g.b))\n"
                      "let gl = grad(fn(p) => p[0] * p[1] + p[0] ** 2)([2 * u.m, 3 * u.m])\n"
                      "print(magnitude(gl[0]), unit_of(gl[0]), magnitude(gl[1]), unit_of(gl[1]))\n"
                      "let h = hessian(fn(p) => p.a ** 2 * p.b)({a: 2 * u.m, b: 3 * u.s})\n"
                      "print(magnitude(h.a.a), unit_of(h.a.a), magnitude(h.a.b), unit_of(h.a.b))\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["3.0 s 2.0 m", "7.0 m 2.0 m", "6.0 s 4.0 m"]
