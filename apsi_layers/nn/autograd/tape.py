"""The flat tape that records operations while a function is being differentiated.

One tape is active at a time (`STATE.tape`). Each recorded op appends one entry and its output tensor
gets the entry's index as its node id, so the tape is in topological order by construction and the
backward pass is a single reverse loop over a list: no graph objects, no sorting.

Nested differentiation (hessian = grad of grad) reuses the outer tape: the inner backward pass then
runs its VJP rules on tensors, which are recorded on the same tape, so the outer pass can
differentiate through them (reverse over reverse).
"""

from .tensor import Tensor


class _State:
    __slots__ = ("tape",)

    def __init__(self):
        self.tape = None


STATE = _State()


class Tape:
    """A list of entries; entry i produced node i. A leaf's entry is None."""

    __slots__ = ("entries",)

    def __init__(self):
        self.entries = []

    def leaf(self, data):
        node = len(self.entries)
        self.entries.append(None)
        return Tensor(data, self, node)

    def record(self, rules, parents, datas, out_data, params, args):
        """Append an op: `rules[k]` is the VJP for argument k; `parents[k]` its node or -1 (constant)."""
        entries = self.entries
        out = Tensor(out_data, self, len(entries))
        entries.append((rules, parents, datas, out_data, params, args, out))
        return out
