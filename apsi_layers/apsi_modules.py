"""What Apsi programs see: `use nn` binds every name that nn_module() returns.

The names sum, max, min, abs and round shadow Apsi's builtins, so they keep the builtins' meaning
for numbers and lists and act on tensors when given one.
"""

import builtins


def _tensor_aware(nn):
    Tensor = nn.Tensor
    foreign = nn.foreign        # torch tensors, once the torch backend has loaded (nn/autograd/foreign.py)

    from apsi_layers.data.memmap import Mapped

    def whole(name, args):
        # a mapped array loops as rows (a list's sum would give column sums), where a tensor's
        # sum/max/... reduce every number: refused, saying what to do
        for a in args:
            if isinstance(a, Mapped):
                a.refuse_whole(name)

    def sum(x, *rest, axis=None, keepdims=False):  # noqa: A001
        whole("sum", (x,))
        if type(x) is Tensor or isinstance(x, foreign.TYPES):
            if len(rest) > 2:
                raise nn.ApsiError("sum(x, axis, keepdims): at most three arguments for a tensor")
            if rest:                      # sum(x, 1) as mean(x, 1): the second argument is the axis
                axis = rest[0]
                keepdims = rest[1] if len(rest) > 1 else keepdims
            return nn.sum(x, axis=axis, keepdims=keepdims)
        return builtins.sum(x, *rest)

    def _extreme(name, reduce, pairwise, builtin):
        def fn(*args, axis=None, keepdims=False, **kw):
            whole(name, args)
            if len(args) == 1 and (type(args[0]) is Tensor or isinstance(args[0], foreign.TYPES)):
                return reduce(args[0], axis=axis, keepdims=keepdims)
            if len(args) == 2 and (Tensor in (type(args[0]), type(args[1]))
                                   or isinstance(args[0], foreign.TYPES)
                                   or isinstance(args[1], foreign.TYPES)):
                return pairwise(*args)
            return builtin(*args, **kw)
        fn.__name__ = name
        return fn

    def abs(x):  # noqa: A001
        return nn.abs(x) if type(x) is Tensor or isinstance(x, foreign.TYPES) else builtins.abs(x)

    def round(x, ndigits=None, decimals=None):  # noqa: A001
        if type(x) is Tensor or isinstance(x, foreign.TYPES):
            return nn.round_(x, decimals if decimals is not None else ndigits or 0)
        return builtins.round(x, ndigits if decimals is None else decimals)

    def _boolean(name, reduce, builtin):
        # all/any: Apsi's builtins for lists, NumPy's for tensors (axis=, keepdims=)
        def fn(x, axis=None, keepdims=False):
            whole(name, (x,))
            if type(x) is Tensor or isinstance(x, foreign.TYPES) or axis is not None or keepdims:
                return reduce(x, axis=axis, keepdims=keepdims)     # all(rows, axis=1) as NumPy
            return builtin(x)
        fn.__name__ = name
        return fn

    from apsi_lang.builtins import BUILTINS

    def _number_builtin(name, nn_name=None):
        # floor(2.5) stays Apsi's int 2 (an index, a count) under `use nn`; tensors and lists get nn's
        builtin, tensor_fn = BUILTINS[name], getattr(nn, nn_name or name)

        def fn(*args, **kw):
            if not kw and all(type(a) in (int, float) for a in args):
                return builtin(*args)
            return tensor_fn(*args, **kw)
        fn.__name__ = name
        fn.__doc__ = tensor_fn.__doc__
        return fn

    numeric = {name: _number_builtin(name) for name in NUMBER_NAMES if name in BUILTINS}
    # the math builtins' short names (asin, atan2, ...) act on tensors as NumPy's arcsin, arctan2, ...
    numeric.update({name: _number_builtin(name, nn_name) for name, nn_name in MATH_ALIASES.items()
                    if name in BUILTINS})
    return {**numeric, "sum": sum, "abs": abs, "round": round,
            "all": _boolean("all", nn.all, builtins.all), "any": _boolean("any", nn.any, builtins.any),
            "max": _extreme("max", nn.max, nn.maximum, builtins.max),
            "min": _extreme("min", nn.min, nn.minimum, builtins.min)}


# numlib names that are also Apsi's number builtins: plain numbers keep the builtin's result
NUMBER_NAMES = ("floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "hypot", "log2", "log10", "tan")
MATH_ALIASES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2"}

NN_EXPORTS = (
    # making tensors
    "array", "zeros", "ones", "full", "zeros_like", "ones_like", "arange", "linspace", "eye",
    "randn", "rand", "randint", "permutation", "one_hot",
    # elementwise and linear algebra
    "exp", "log", "log1p", "sqrt", "tanh", "sigmoid", "relu", "gelu", "softplus", "sin", "cos",
    "clip", "where", "maximum", "minimum", "matmul",
    # reductions and shapes
    "mean", "argmax", "argmin", "logsumexp", "softmax", "log_softmax", "reshape", "transpose",
    "expand_dims", "broadcast_to", "concat", "stack", "take_along",
    # differentiation
    "grad", "value_and_grad", "jacobian", "hessian",
    # training
    "sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam",
    "cosine_lr", "warmup_lr", "step_lr", "exp_lr",
    "mse", "mae", "huber", "cross_entropy", "bce", "vae",
    "tree_map", "flatten", "unflatten", "param_count", "global_norm", "clip_by_global_norm",
    "save_params", "load_params", "load_csv",
    # linear algebra (issue 19; nn/numlib/linalg.py, nn/numlib/einsum_op.py)
    "dot", "vdot", "outer", "inner", "einsum", "tensordot", "trace", "diag", "tril", "triu", "kron",
    "norm", "inv", "pinv", "solve", "lstsq", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh",
    "svd", "matrix_power", "cond",
    # NumPy's and SciPy's other linear algebra (issue 35; nn/numlib/linalg_more.py)
    "diagonal", "swapaxes", "cross", "multi_dot", "svdvals", "matrix_rank", "solve_triangular",
    "cho_solve", "lu", "expm", "logm", "sqrtm", "eig", "eigvals",
    # numlib (issue 19): NumPy's elementwise functions
    "sign", "floor", "ceil", "trunc", "mod", "expm1", "log2", "log10", "tan", "arcsin", "arccos",
    "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arctanh", "erf", "hypot", "isnan", "isinf",
    "isfinite", "nan_to_num",
    # numlib: reductions and scans (sum, all, any and round are tensor-aware builtins, see above)
    "prod", "std", "var", "median", "quantile", "percentile", "cumsum", "cumprod", "diff",
    "nanmean", "nansum", "count_nonzero",
    # numlib: sorting and sets
    "sort", "argsort", "topk", "unique", "bincount", "histogram", "searchsorted", "isin",
    # numlib: shapes, construction, dtypes
    "squeeze", "flip", "roll", "tile", "repeat", "pad", "split", "meshgrid", "moveaxis", "identity",
    "full_like", "astype", "float64", "float32", "int64", "int32",
    # numlib: comparisons and random generators
    "isclose", "allclose", "array_equal", "rng", "spawn", "normal", "uniform", "choice", "shuffle",
    "bernoulli",
    # metrics as plain functions (issue 19; nn/train/metrics.py, shared with fit's metrics=)
    "accuracy", "r2_score", "confusion_matrix", "precision_recall_f1", "roc_auc",
    # issue 35 (nn/numlib/toolbox.py lists them): statistics, special functions, sequences, index finders
    "nanmax", "nanmin", "nanargmax", "nanargmin", "nanvar", "nanstd", "nanmedian", "nanquantile",
    "average", "ptp", "cov", "corrcoef", "arccosh", "logaddexp", "gammaln", "erfc", "logit", "expit",
    "digamma", "polygamma", "logspace", "geomspace", "cummax", "cummin", "convolve", "interp",
    "trapezoid", "nonzero", "argwhere", "digitize",
    # issue 32 (apsi_layers/data): data larger than memory
    "load_npy", "save_npy", "dataset", "windows", "csv_to_npy",
)


def nn_module():
    """{name: value} for `use nn`."""
    import warnings

    from apsi_layers import nn

    # NumPy's "invalid value encountered in log" would reach Apsi users as a Python warning; in Apsi,
    # NaN and inf are reported by grad and the optimizers instead, naming the op that made them. NumPy's
    # own Python functions (np.prod, np.cumsum, np.logspace) warn from numpy's modules, with the path of
    # its installation and a line of its source.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(apsi_layers|numpy)\.")

    exports = {name: getattr(nn, name) for name in NN_EXPORTS}
    exports.update(_tensor_aware(nn))
    from apsi_layers.layers import dual  # flatten and vae also mean a layer and a model

    exports.update(flatten=dual.flatten, vae=dual.vae)
    return exports


def layers_module():
    """{name: value} for `use layers` (declared in apsi_layers/layers/exports.py)."""
    from apsi_layers.layers.exports import layers_exports

    return layers_exports()


def plot_module():
    """{name: value} for `use plot` (apsi_layers/plot; matplotlib is imported only when a figure is saved)."""
    from apsi_layers.plot import plot_exports

    return plot_exports()


def units_module():
    """{name: value} for `use units` (pint is imported here, not before)."""
    from apsi_layers.units.exports import units_exports

    return units_exports()


def web_module():
    """{name: value} for `use web` (uvicorn and starlette are imported when a server starts)."""
    from apsi_layers.web import web_exports

    return web_exports()


# The documentation help() and `apsi doc` show for each module (apsi_lang/doc_source.py): plain data,
# read without importing the module itself.
nn_module.docs = "apsi_layers.docs.nn"
layers_module.docs = "apsi_layers.docs.layers"
plot_module.docs = "apsi_layers.docs.plot"
units_module.docs = "apsi_layers.docs.units"
web_module.docs = "apsi_layers.docs.web"
