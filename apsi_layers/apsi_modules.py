"""What Apsi programs see: `use nn` binds every name that nn_module() returns.

The names sum, max, min, abs and round shadow Apsi's builtins, so they keep the builtins' meaning
for numbers and lists and act on tensors when given one.
"""

import builtins


def _tensor_aware(nn):
    Tensor = nn.Tensor
    foreign = nn.foreign        # torch tensors, once the torch backend has loaded (see nn/foreign.py)

    def sum(x, *rest, axis=None, keepdims=False):  # noqa: A001
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

    def round(x, ndigits=None):  # noqa: A001
        if type(x) is Tensor:
            return Tensor(nn.round_values(x, ndigits or 0))
        return builtins.round(x, ndigits)

    return {"sum": sum, "abs": abs, "round": round,
            "max": _extreme("max", nn.max, nn.maximum, builtins.max),
            "min": _extreme("min", nn.min, nn.minimum, builtins.min)}


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
)


def nn_module():
    """{name: value} for `use nn`."""
    import warnings

    from apsi_layers import nn

    # NumPy's "invalid value encountered in log" would reach Apsi users as a Python warning; in Apsi,
    # NaN and inf are reported by grad and the optimizers instead, naming the op that made them.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"apsi_layers\.")

    exports = {name: getattr(nn, name) for name in NN_EXPORTS}
    exports.update(_tensor_aware(nn))
    from apsi_layers.layers import dual  # flatten and vae also mean a layer and a model

    exports.update(flatten=dual.flatten, vae=dual.vae)
    return exports


def layers_module():
    """{name: value} for `use layers` (declared in apsi_layers/layers/exports.py)."""
    from apsi_layers.layers.exports import layers_exports

    return layers_exports()


def web_module():
    """{name: value} for `use web` (uvicorn and starlette are imported when a server starts)."""
    from apsi_layers.web import web_exports

    return web_exports()
