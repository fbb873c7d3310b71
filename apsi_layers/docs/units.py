"""The documentation of `use units` (apsi_lang/doc_source.py): the table docs/units.md shows."""

from apsi_lang.doc_table import Table

TABLES = (
    Table('docs/units.md', 'form', None,
          ('Write', 'Gives'),
          (
              ('`3 * u.m`, `linspace(0, 1, 5) * u.s`, `[1, 2] * u.kg`', 'a quantity: a number or tensor with a unit'),
              ('`u.km / u.h`, `u.m ** 2`', 'a unit (units combine with `*`, `/`, `**`)'),
              ('`unit("kg*m/s^2")`', "the unit a text names (pint's syntax: `*`, `/`, `^` or `**`, prefixes)"),
              ('`quantity(3, "km/h")`, `quantity([1, 2], u.m)`', 'a quantity from a value and a unit (text or unit)'),
              ('`read_csv("runs.csv", units=true)`', 'a column whose header names a unit, `speed [km/h]`, is named `speed` and holds quantities (with `as="columns"`: one quantity tensor); it must hold only numbers'),
          )),
    Table('docs/units.md', 'function', None,
          ('Function', 'Result'),
          (
              ('`to(q, "km/h")`', 'q converted to that unit (a quantity)'),
              ('`magnitude(q, "m")`', "the plain number or tensor of q in that unit; `magnitude(q)` in q's own unit"),
              ('`si(q)`', 'q in SI base units (`km/h` → `m/s`, `degC` → `K`)'),
              ('`unit_of(q)`', "q's unit (`dimensionless` for a plain value)"),
              ('`dimension(q)`', 'q\'s dimension as text: `"length/time²"`'),
              ('`dimensionless(q)`', 'whether q has no dimension (plain numbers, angles, `m/km`)'),
          )),
    Table('docs/units.md', 'option', 'magnitude',
          ('Option', 'Default', 'Meaning'),
          (
              ('`q`', 'required', 'a quantity (or a plain value)'),
              ('`unit`', '`none`', "the unit to read it in (none: q's own)"),
          )),
)

MODULE = "quantities with units (pint's registry): numbers and tensors times units, converted and checked (docs/units.md)."

EXAMPLES = {
    'u': 'use units\nprint(3 * u.km + 200 * u.m, to(1 * u.c, "km/s"))',
    'unit': 'use units\nlet force = unit("kg*m/s^2")\nprint(to(2 * force, "N"))',
    'quantity': 'use units\nprint(quantity(3, "km/h"), quantity([1, 2], u.m))',
    'to': 'use units\nprint(to(100 * u.km / u.h, "m/s"))',
    'magnitude': 'use units\nlet d = 1.5 * u.km\nprint(magnitude(d, "m"), magnitude(d))',
    'si': 'use units\nprint(si(36 * u.km / u.h), si(quantity(25, "degC")))',
    'unit_of': 'use units\nprint(unit_of(9.81 * u.m / u.s ** 2), unit_of(2.0))',
    'dimension': 'use units\nprint(dimension(9.81 * u.m / u.s ** 2))',
    'dimensionless': 'use units\nprint(dimensionless(u.m / u.km), dimensionless(3 * u.s))',
}

PARAGRAPHS = {
    'u': "`u` holds pint's whole catalogue: SI base and derived units (`u.m`, `u.kg`, `u.N`, `u.J`, `u.Pa`), every prefix (`u.km`, `u.mg`, `u.kilometer`, `u.MHz`), imperial and common units (`u.inch`, `u.ft`, `u.mi`, `u.lb`, `u.psi`, `u.gallon`, `u.h`, `u.deg`), temperatures (`u.degC`, `u.degF`, `u.K`) and physical constants (`u.c`, `u.hbar`, `u.k` for Boltzmann's constant, `u.e`, `u.N_A`). Two names mean what physicists expect rather than pint's symbol: `u.G` is the gravitational constant (pint's `G` is the gauss; write `u.gauss` for that) and `u.g0` standard gravity.",
}
