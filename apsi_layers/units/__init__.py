"""`use units`: quantities with units of measurement on numbers and nn tensors (pint's registry).

Usable from Python (`from apsi_layers.units import exports`); pint is imported only when a program
uses the module. See docs/units.md.
"""
