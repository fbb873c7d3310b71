# ruff: noqa: E501  (a table: one entry per line reads best)
"""Names NumPy/PyTorch users try that Apsi spells differently: the hint an `undefined name` error
gives (issue 19). Names only: apsi_lang does not import NumPy."""

_NN = ", with 'use nn'"

NUMPY_SPELLINGS = {
    "amax": "Apsi writes max(x, axis=...)" + _NN, "amin": "Apsi writes min(x, axis=...)" + _NN,
    "absolute": "Apsi writes abs(x)", "fabs": "Apsi writes abs(x)",
    "concatenate": "Apsi writes concat([a, b], axis=0)" + _NN, "cat": "Apsi writes concat([a, b], axis=0)" + _NN,
    "vstack": "Apsi writes concat([a, b], axis=0)" + _NN, "hstack": "Apsi writes concat([a, b], axis=1)" + _NN,
    "asarray": "Apsi writes array(x)" + _NN, "tensor": "Apsi writes array(x)" + _NN,
    "power": "Apsi writes a ** b", "float_power": "Apsi writes a ** b",
    "asinh": "Apsi writes arcsinh(x)" + _NN, "atanh": "Apsi writes arctanh(x)" + _NN,
    "remainder": "Apsi writes mod(a, b) or a % b" + _NN, "fmod": "Apsi writes mod(a, b) or a % b" + _NN,
    "fix": "Apsi writes trunc(x)" + _NN, "rint": "Apsi writes round(x)", "around": "Apsi writes round(x)",
    "clamp": "Apsi writes clip(x, lo, hi)" + _NN, "permute": "Apsi writes transpose(x, axes)" + _NN,
    "swapaxes": "Apsi writes moveaxis(x, a, b) or transpose(x, axes)" + _NN,
    "unsqueeze": "Apsi writes expand_dims(x, axis)" + _NN, "view": "Apsi writes reshape(x, shape)" + _NN,
    "ravel": "Apsi writes reshape(x, [-1]) or x.flatten()" + _NN,
    "numel": "Apsi writes x.size", "cumulative_sum": "Apsi writes cumsum(x, axis)" + _NN,
    "cumulative_prod": "Apsi writes cumprod(x, axis)" + _NN,
    "average": "Apsi writes mean(x, axis) (weighted: sum(w * x) / sum(w))" + _NN,
    "ptp": "Apsi writes max(x) - min(x)" + _NN, "nanstd": "Apsi writes std(x[isfinite(x)])" + _NN,
    "argpartition": "Apsi writes topk(x, k) (values and indices)" + _NN,
    "partition": "Apsi writes sort(x)" + _NN, "kthvalue": "Apsi writes sort(x)[k - 1]" + _NN,
    "default_rng": "Apsi writes rng(seed), a generator value passed as seed=" + _NN,
    "seed": "Apsi has no global seed: g = rng(0), then seed=g (spawn(g, 2) for independent ones)" + _NN,
    "random_sample": "Apsi writes uniform(size=shape, seed=g)" + _NN,
    "standard_normal": "Apsi writes normal(size=shape, seed=g)" + _NN,
    "randperm": "Apsi writes permutation(n, seed=g)" + _NN, "permuted": "Apsi writes shuffle(x, seed=g)" + _NN,
    "integers": "Apsi writes randint(low, high, shape, seed=g)" + _NN,
    "nonzero": "Apsi writes arange(len(x))[x != 0]" + _NN, "argwhere": "Apsi writes arange(len(x))[mask]" + _NN,
    "isreal": "Apsi's tensors are real: isfinite(x)" + _NN, "empty": "Apsi writes zeros(shape)" + _NN,
    "empty_like": "Apsi writes zeros_like(x)" + _NN,
}

# numlib names a program reaches for before it has written `use nn`
_NEEDS_NN = ("std", "var", "median", "quantile", "percentile", "cumsum", "cumprod", "prod", "argsort",
             "unique", "bincount", "histogram", "isclose", "allclose", "array_equal", "topk", "nanmean",
             "nansum", "arctan2", "erf", "astype", "meshgrid", "normal", "uniform", "choice", "shuffle",
             "rng", "array", "zeros", "ones", "arange", "linspace")
NUMPY_SPELLINGS.update({name: f"'{name}' comes with 'use nn': add it at the top" for name in _NEEDS_NN})
