"""Issue 35's functions as data: each name with the NumPy/SciPy function it matches, what its
gradient is, and how a `use units` quantity passes through it. tests/nn/test_toolbox_spec.py holds
every layer to this table: nn exports each name, `use nn` binds it, the torch backend and units
implement it (or refuse it by name), and docs/nn.md lists it.
"""
# ruff: noqa: E501  (one entry per line reads best as a table)

# units: "keep" (the result has x's unit), "delta" (a difference: Δ°C for °C), "square" (unit**2),
# "plain" (dimensionless or indices: no unit), "dimensionless" (the argument must be a plain number),
# "product" (the arguments' units multiplied), "interp" (x in xp's unit, the result in fp's),
# "none" (makes a tensor from numbers: a quantity is refused with units' message to take its magnitude)
TOOLBOX = {
    # statistics (nn/numlib/statistics.py)
    "nanmax": {"ref": "numpy.nanmax", "grad": "ties share, NaN entries 0", "units": "keep"},
    "nanmin": {"ref": "numpy.nanmin", "grad": "ties share, NaN entries 0", "units": "keep"},
    "nanargmax": {"ref": "numpy.nanargmax", "grad": "none (ints)", "units": "plain"},
    "nanargmin": {"ref": "numpy.nanargmin", "grad": "none (ints)", "units": "plain"},
    "nanvar": {"ref": "numpy.nanvar", "grad": "any order; NaN entries 0", "units": "square"},
    "nanstd": {"ref": "numpy.nanstd", "grad": "any order; NaN at zero spread", "units": "delta"},
    "nanmedian": {"ref": "numpy.nanmedian", "grad": "to the middle element(s), as torch.nanquantile(x, 0.5)", "units": "keep"},
    "nanquantile": {"ref": "numpy.nanquantile", "grad": "to the interpolated elements, as torch.nanquantile", "units": "keep"},
    "average": {"ref": "numpy.average", "grad": "in a and weights, any order", "units": "keep"},
    "ptp": {"ref": "numpy.ptp", "grad": "max's minus min's (ties share)", "units": "delta"},
    "cov": {"ref": "numpy.cov", "grad": "any order, as torch.cov", "units": "square"},
    "corrcoef": {"ref": "numpy.corrcoef", "grad": "any order, as torch.corrcoef", "units": "plain"},
    # special functions (nn/numlib/special.py)
    "arccosh": {"ref": "numpy.arccosh", "grad": "any order; inf at 1", "units": "dimensionless"},
    "logaddexp": {"ref": "numpy.logaddexp", "grad": "any order; sigmoid(a - b)", "units": "dimensionless"},
    "gammaln": {"ref": "scipy.special.gammaln", "grad": "any order (digamma, polygamma)", "units": "dimensionless"},
    "erfc": {"ref": "scipy.special.erfc", "grad": "any order", "units": "dimensionless"},
    "logit": {"ref": "scipy.special.logit", "grad": "any order; inf at 0 and 1", "units": "dimensionless"},
    "expit": {"ref": "scipy.special.expit", "grad": "any order (sigmoid's)", "units": "dimensionless"},
    "digamma": {"ref": "scipy.special.digamma", "grad": "any order (polygamma)", "units": "dimensionless"},
    "polygamma": {"ref": "scipy.special.polygamma", "grad": "any order", "units": "dimensionless"},
    # sequences and curves (nn/numlib/sequences.py)
    "logspace": {"ref": "numpy.logspace", "grad": "in start and stop, any order", "units": "none"},
    "geomspace": {"ref": "numpy.geomspace", "grad": "in start and stop, any order", "units": "none"},
    "cummax": {"ref": "numpy.maximum.accumulate", "grad": "to the running maximum's element, as torch.cummax", "units": "keep"},
    "cummin": {"ref": "numpy.minimum.accumulate", "grad": "to the running minimum's element, as torch.cummin", "units": "keep"},
    "convolve": {"ref": "numpy.convolve", "grad": "in both arguments, any order", "units": "product"},
    "interp": {"ref": "numpy.interp", "grad": "in x, xp and fp; one-sided at knots", "units": "interp"},
    "trapezoid": {"ref": "numpy.trapezoid", "grad": "in y and x, any order, as torch.trapezoid", "units": "product"},
    # indices (nn/numlib/indices.py)
    "nonzero": {"ref": "numpy.nonzero", "grad": "none (ints)", "units": "plain"},
    "argwhere": {"ref": "numpy.argwhere", "grad": "none (ints)", "units": "plain"},
    "digitize": {"ref": "numpy.digitize", "grad": "none (ints)", "units": "plain"},
}
