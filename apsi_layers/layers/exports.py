"""What `use layers` binds (the entry point in pyproject.toml calls layers_exports()).

Two names are shared with `use nn`: `flatten` (a layer with no arguments, nn's tree flatten with a
tree) and `vae` (a model from two ints, nn's loss from tensors). Both modules bind the same two-way
function (dual.py), so a program may `use` them in either order.

Python packages can add layers to `use layers` through the entry-point group "apsi.layers": each
entry point names a callable returning {name: layer constructor}; their layer classes (subclasses of
CustomLayer) become readable by Apsi code like the built-in ones.
"""

# besides the registered layers (registry.py): what `use layers` binds from this package
FUNCTIONS = ("fit", "predict", "summary", "generate", "adapt")
# whole models in one file (apsi_layers/models, docs/models.md)
MODEL_NAMES = ("save_model", "load_model", "predict_labels", "predict_proba", "model_from_checkpoint",
               "export_onnx")
GROUP = "apsi.layers"


def layers_exports():
    from apsi_lang import sandbox
    from apsi_layers import layers

    from . import dual

    exports = layers.registry.constructors()
    exports.update({name: getattr(layers, name) for name in FUNCTIONS})
    exports["flatten"] = dual.flatten       # flatten and vae: `use nn` binds them too (dual.py)
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
    exports.update(_backend_exports())
    for name, value in plugin_layers().items():
        exports.setdefault(name, value)
        if isinstance(value, type):
            sandbox.register(value)
    return exports


def _backend_exports():
    """What the backends add: devices(), check_torch(), torch_module(), params_from_torch() when the
    torch backend is part of this installation (importing them must not import torch itself)."""
    from apsi_layers.backends import registry

    return registry.exports()


def plugin_layers():
    """{name: constructor} of the layers Python plug-ins give (entry points 'apsi.layers')."""
    from apsi_lang.installed import entry_points

    found = {}
    for ep in entry_points(GROUP).values():
        try:
            found.update(ep.load()())
        except Exception as e:  # a broken plugin must not take `use layers` down with it
            import sys

            print(f"apsi: layers plugin {ep.name!r} failed to load: {e}", file=sys.stderr)
    return found
