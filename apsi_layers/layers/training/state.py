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


def opt_state(opt):
    """(steps, [state per leaf] or None): an nn optimizer's state as a checkpoint keeps it."""
    state = opt._state
    return opt.steps, None if state is None else [{k: np.array(v) for k, v in s.items()} for s in state]


def restore_opt(opt, steps, states, names, shapes):
    """Put a checkpoint's optimizer state (nn's layout) into `opt`."""
    opt.steps = steps
    if states is None:
        opt._state, opt._names, opt._shapes = None, None, None
        return
    opt._state = [{k: (np.array(v) if np.ndim(v) else float(v)) for k, v in s.items()} for s in states]
    # fit steps the optimizer over the list of trainable leaves, whose names are their positions
    opt._names, opt._shapes = [str(i) for i in range(len(names))], [tuple(s) for s in shapes]


class NnState:
    """The session methods (driver.py's protocol) for a session stepping an nn optimizer (self.opt)
    over the trainable leaves self.train of self.names/self.leaves_ (nn tensors), with a NumPy
    Generator as its noise stream (self.noise)."""

    def opt_state(self):
        return opt_state(self.opt)

    def set_opt_state(self, steps, states):
        restore_opt(self.opt, steps, states, [self.names[i] for i in self.train],
                    [self.leaves_[i].data.shape for i in self.train])

    def noise_state(self):
        return self.noise.bit_generator.state, None

    def set_noise_state(self, meta, array):
        self.noise.bit_generator.state = meta
