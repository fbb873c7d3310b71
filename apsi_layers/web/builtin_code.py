"""Whether a model's predict runs only Apsi's own layers, and so may run on the event loop's thread.

A program's function inside the model (lambda_layer's fn, activation=fn) or a Python custom layer may
take any time, and while it ran on the event loop nothing else would be answered, timeouts included;
such a model always computes on the batcher's thread. This is an allow-list: every layer of a built-in
type (not a CustomLayer), and every value a layer holds plain data (lists, maps, records of it), a
layer, or one of the built-in activations; anything else (a function, an object) counts as the program's code.
"""

from apsi_lang.values import Record
from apsi_layers.layers.base import Layer

PLAIN = (str, int, float, bool, type(None))


def only_builtin_code(model):
    from apsi_layers.layers.core import ACTIVATIONS
    from apsi_layers.layers.custom import CustomLayer

    builtin = {id(f) for f in ACTIVATIONS.values()}
    seen = set()
    pending = [model]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind in PLAIN or id(value) in builtin:
            continue
        if kind in (list, tuple):
            pending.extend(value)
        elif kind is dict:
            pending.extend(value.values())
        elif kind is Record:
            pending.extend(vars(value).values())
        elif isinstance(value, Layer) and not isinstance(value, CustomLayer) \
                and kind.__module__.startswith("apsi_layers.layers."):
            if id(value) not in seen:
                seen.add(id(value))
                pending.extend(vars(value).values())
                pending.extend(value.layers)
        else:
            return False
    return True
