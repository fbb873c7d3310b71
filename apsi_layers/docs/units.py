"""The documentation of `use units` (apsi_lang/doc_source.py): the table docs/units.md shows."""

from apsi_lang.doc_source import Table

TABLES = (
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
)

MODULE = "quantities with units (pint's registry): numbers and tensors times units, converted and checked (docs/units.md)."

EXAMPLES = {}
