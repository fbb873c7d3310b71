"""nn's numeric library: NumPy's and SciPy's functions under their own names on nn tensors, each
differentiable where NumPy's is (issues 19 and 35): making and reshaping tensors (creation.py,
construct.py), elementwise and special functions, scans, sorting, statistics, sequences, linear
algebra (linalg*.py, spectral.py, matrix_functions.py, lapack.py), einsum, random generators.
toolbox.py lists issue 35's functions with the NumPy/SciPy function each matches."""
