"""Argument adapters fit and predict apply before their checks, registered by the module that needs them.

`use units` registers apsi_layers.units.training when its quantities come into existence (importing
units/quantity.py), so fit and predict learn of quantities without testing sys.modules. A hook is a
module name; the module has

    adapt_fit(inputs, targets, options) -> (inputs, targets, options)
    adapt_predict(x, options) -> (x, options, back)      back(y) -> the output the caller gets

Importing this file imports nothing: it is read at every fit and predict.
"""

from importlib import import_module

_hooks: list[str] = []


def add(module: str) -> None:
    if module not in _hooks:
        _hooks.append(module)


def active() -> list:
    """The hook modules, in the order they were added."""
    return [import_module(name) for name in _hooks]
