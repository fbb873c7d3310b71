"""The torch view of a model: the same layers, with the torch versions Python code gave some of them.

A layer never asks which backend it runs on, so the choice is made once per model, here: a copy of
the model (shared layers stay shared: deepcopy keeps identity) in which
- a CustomLayer with `torch_forward(params, x, ctx)` (or `torch_apply`) runs that instead of forward,
- a lambda_layer with `torch_fn=` runs torch_fn instead of fn,
and the rest run as they are. An Apsi function that meets something with no torch version, and a
custom layer whose forward fails on torch tensors, stop with "the torch backend has no implementation
of ..." naming the layer and what to do. Models without such layers are used as they are.
"""

import copy

from apsi_lang.errors import ApsiError
from apsi_layers.nn.autograd.foreign import Foreign


def _walk(layer, seen):
    if id(layer) in seen:
        return
    seen[id(layer)] = layer
    for _, child in layer.children():
        _walk(child, seen)


def _special(layer):
    from apsi_layers.layers.core import Lambda
    from apsi_layers.layers.custom import CustomLayer

    return isinstance(layer, Lambda | CustomLayer)


def torch_view(model):
    """The model to run on the torch op set (the model itself when nothing needs changing)."""
    seen = {}
    _walk(model, seen)
    if not any(_special(layer) for layer in seen.values()):
        return model
    view = copy.deepcopy(model)
    seen = {}
    _walk(view, seen)
    for layer in seen.values():
        if _special(layer):
            _adapt(layer)
    return view


def _adapt(layer):
    from apsi_layers.layers.core import Lambda

    if isinstance(layer, Lambda):
        fn = layer.torch_fn or layer.fn
        has_torch = layer.torch_fn is not None
        layer.apply = lambda params, x, ctx: _guarded(layer, lambda: fn(x), has_torch)
        return
    forward = getattr(layer, "torch_forward", None) or getattr(layer, "torch_apply", None)
    has_torch = forward is not None
    forward = forward or layer.forward
    layer.apply = lambda params, x, ctx: _guarded(layer, lambda: forward(params, x, ctx), has_torch)


def _guarded(layer, run, has_torch):
    try:
        out = run()
        if not _all_torch(out):
            raise TypeError(f"it returned {_kind(out)}, not a torch tensor")
        return out
    except ApsiError as e:
        if isinstance(e, Foreign):
            raise ApsiError(f"{e.message} (in {layer.label()})") from None
        raise
    except (TypeError, AttributeError, ValueError, RuntimeError) as e:
        if has_torch:
            raise
        from apsi_layers.layers.core import Lambda

        fix = ("give it a torch version: lambda_layer(fn, torch_fn=...) from Python"
               if isinstance(layer, Lambda) else
               "give its class a torch_forward(params, x, ctx) method")
        raise ApsiError(f"the torch backend has no implementation of {layer.label()}: on torch tensors "
                        f"{_reason(e)}; {fix}, or use backend=\"numpy\"") from None


def _all_torch(out):
    import torch

    if isinstance(out, list | tuple):
        return all(_all_torch(v) for v in out)
    return isinstance(out, torch.Tensor)


def _kind(out):
    from apsi_lang.values import a_type
    from apsi_layers.nn.autograd.tensor import Tensor

    return "an nn tensor (NumPy)" if type(out) is Tensor else a_type(out)


def _reason(error):
    text = str(error)
    return text if text.startswith("it returned") else f"it failed ({type(error).__name__}: {text})"
