"""The parameter tree's running statistics and an optimizer's state in nn's layout: what every backend's
session and torch_module share (here, so no backend imports a sibling's files)."""

import numpy as np

from apsi_lang.values import Record


def replace_states(value, updates):
    """The tree with each state record that a layer replaced (ctx.set_state) swapped for the new one."""
    hit = updates.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    if isinstance(value, Record):
        return Record(**{k: replace_states(v, updates) for k, v in vars(value).items()})
    if isinstance(value, list | tuple):
        return type(value)(replace_states(v, updates) for v in value)
    return value


def restore_opt(opt, steps, states, names, shapes):
    """Put a checkpoint's optimizer state (nn's layout) into `opt`."""
    opt.steps = steps
    if states is None:
        opt._state, opt._names, opt._shapes = None, None, None
        return
    opt._state = [{k: (np.array(v) if np.ndim(v) else float(v)) for k, v in s.items()} for s in states]
    # fit steps the optimizer over the list of trainable leaves, whose names are their positions
    opt._names, opt._shapes = [str(i) for i in range(len(names))], [tuple(s) for s in shapes]
