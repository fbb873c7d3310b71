"""What `use layers` binds (the entry point in pyproject.toml calls layers_exports()).

Two names are shared with `use nn`: `flatten` (a layer with no arguments, nn's tree flatten with a
tree) and `vae` (a model from two ints, nn's loss from tensors). Both modules bind the same two-way
function (dual.py), so a program may `use` them in either order.

Python packages can add layers to `use layers` through the entry-point group "apsi.layers": each
entry point names a callable returning {name: layer constructor}; their layer classes (subclasses of
CustomLayer) become readable by Apsi code like the built-in ones.
"""

from importlib import import_module

LAYER_NAMES = (
    "dense", "embedding", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "global_avg_pool", "dropout", "batch_norm", "layer_norm", "rms_norm", "activation",
    "lambda_layer", "lstm_layer", "gru_layer", "attention", "transformer_block", "positions",
    "gcn_layer", "sage_layer", "gat_layer", "gin_layer",
    "sequential", "residual", "parallel", "merge", "dag",
    "mlp", "resnet_mlp", "cnn_classifier", "lstm_classifier", "transformer_lm", "gcn_classifier",
    "fit", "predict", "summary", "generate",
)
# whole models in one file (apsi_layers/models, docs/models.md)
MODEL_NAMES = ("save_model", "load_model", "predict_labels", "predict_proba", "model_from_checkpoint",
               "export_onnx")
GROUP = "apsi.layers"


def layers_exports():
    from apsi_lang import sandbox
    from apsi_layers import layers

    from . import dual

    exports = {name: getattr(layers, name) for name in LAYER_NAMES}
    exports["flatten"] = dual.flatten
    exports["vae"] = dual.vae
    from apsi_layers.nn import param_count

    exports["param_count"] = param_count
    from apsi_layers.plot import plot_history  # imports no matplotlib until a plot is saved

    exports["plot_history"] = plot_history
    from apsi_layers import distributed

    exports["rank"], exports["world_size"] = distributed.rank, distributed.world_size
    from apsi_layers import models

    for name in MODEL_NAMES:
        exports[name] = getattr(models, name)
    exports.update(_torch_exports())
    for name, value in _plugin_layers().items():
        exports.setdefault(name, value)
        if isinstance(value, type):
            sandbox.register(value)
    return exports


def _torch_exports():
    """devices(), check_torch(), torch_module(), params_from_torch() when the torch backend's package
    is part of this installation (importing it must not import torch itself)."""
    try:
        module = import_module("apsi_layers.backends.torch.exports")
    except ModuleNotFoundError:
        return {}
    return dict(module.torch_exports())


def _plugin_layers():
    from apsi_lang.installed import entry_points

    found = {}
    for ep in entry_points(GROUP).values():
        try:
            found.update(ep.load()())
        except Exception as e:  # a broken plugin must not take `use layers` down with it
            import sys

            print(f"apsi: layers plugin {ep.name!r} failed to load: {e}", file=sys.stderr)
    return found
