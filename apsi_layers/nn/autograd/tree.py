"""Parameter trees: nested records, lists (and tuples, dicts from Python) whose leaves are tensors.

Leaves are visited in a fixed order (record fields in definition order, list items by index), so a
flattened tree, an optimizer's state and a saved file all line up. Dotted names spell the path:
`layers.0.w` is field w of item 0 of field layers.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, record_from

from .tensor import Tensor, describe, plain_array

_BRANCHES = (Record, list, tuple, dict)


def is_leaf(x):
    return not isinstance(x, _BRANCHES)


def _children(x):
    """(key, child) pairs of a branch, in leaf order."""
    if isinstance(x, Record):
        return list(vars(x).items())
    if isinstance(x, dict):
        return list(x.items())
    return list(enumerate(x))


def _rebuild(x, values):
    if isinstance(x, Record):
        return record_from(dict(zip(vars(x), values, strict=True)), "tree_map")
    if isinstance(x, dict):
        return dict(zip(x, values, strict=True))
    return type(x)(values) if isinstance(x, tuple) else list(values)


def leaves(tree):
    """The leaves in order."""
    out = []
    _collect(tree, out)
    return out


def _collect(x, out):
    if is_leaf(x):
        out.append(x)
    else:
        for _, child in _children(x):
            _collect(child, out)


def unflatten_like(tree, values):
    """A tree with the structure of `tree` and the leaves `values` (in leaf order)."""
    it = iter(values)
    out = _fill(tree, it)
    return out


def _fill(x, it):
    if is_leaf(x):
        return next(it)
    return _rebuild(x, [_fill(child, it) for _, child in _children(x)])


def tree_map(fn, tree, *rest):
    """fn applied to each leaf (and the matching leaves of `rest`, trees of the same structure)."""
    if not callable(fn):
        raise ApsiError(f"tree_map: the first argument must be a function, not {describe(fn)}")
    columns = [leaves(tree)] + [_same_structure("tree_map", tree, r) for r in rest]
    return unflatten_like(tree, [fn(*vals) for vals in zip(*columns, strict=True)])


def _same_structure(fn, tree, other):
    a, b = named_leaves(tree), named_leaves(other)
    if [n for n, _ in a] != [n for n, _ in b]:
        raise ApsiError(f"{fn}: the trees differ in structure: {_diff([n for n, _ in a], [n for n, _ in b])}")
    return [v for _, v in b]


def _diff(names_a, names_b):
    only_a = [n for n in names_a if n not in set(names_b)]
    only_b = [n for n in names_b if n not in set(names_a)]
    parts = []
    if only_a:
        parts.append(f"only in the first: {', '.join(only_a[:5])}")
    if only_b:
        parts.append(f"only in the second: {', '.join(only_b[:5])}")
    return "; ".join(parts) or "the same names in a different order"


def named_leaves(tree, prefix=""):
    """[(dotted name, leaf)] in leaf order; a lone leaf is named 'value'."""
    if is_leaf(tree):
        return [(prefix or "value", tree)]
    out = []
    for key, child in _children(tree):
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(key, str) and ("." in key or not key):
            raise ApsiError(f"flatten: the field name {key!r} cannot be part of a dotted name")
        out.extend(named_leaves(child, name))
    return out


def flatten(tree):
    """[(dotted name, tensor)] pairs, e.g. [("layers.0.w", ...), ("layers.0.b", ...)]."""
    return [(name, leaf) for name, leaf in named_leaves(tree)]


def unflatten(pairs):
    """The tree back from (dotted name, value) pairs: numeric parts make lists, others records."""
    root = {}
    for item in pairs:
        if not (isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise ApsiError(f"unflatten: expects (name, value) pairs like ('w', x), got {describe(item)}")
        name, value = item
        node = root
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ApsiError(f"unflatten: {name!r} nests under a name that is already a value")
        if parts[-1] in node:
            raise ApsiError(f"unflatten: the name {name!r} appears twice")
        node[parts[-1]] = value
    return _build(root, "")


def _build(node, path):
    if not isinstance(node, dict):
        return node
    keys = list(node)
    if all(k.isdigit() for k in keys):
        if sorted(int(k) for k in keys) != list(range(len(keys))):
            raise ApsiError(f"unflatten: list items under {path or 'the root'!r} must be numbered "
                            f"0..{len(keys) - 1}, got {sorted(keys, key=int)}")
        return [_build(node[str(i)], f"{path}.{i}".lstrip(".")) for i in range(len(keys))]
    return record_from({k: _build(v, f"{path}.{k}".lstrip(".")) for k, v in node.items()}, "unflatten")


def param_count(tree):
    """The number of numbers in the tree's leaves."""
    return int(sum(np.size(_data(v)) for v in leaves(tree)))


def _data(v):
    return plain_array(v, "tree", "leaf")


def global_norm(tree):
    """sqrt of the sum of squares of every number in the tree."""
    return float(np.sqrt(sum(float(np.vdot(d, d)) for d in (_data(v) for v in leaves(tree)))))


def clip_by_global_norm(tree, max_norm):
    """The tree scaled by min(1, max_norm / (norm + 1e-6)), as torch's clip_grad_norm_ does."""
    if not isinstance(max_norm, int | float) or max_norm <= 0:
        raise ApsiError(f"clip_by_global_norm: max_norm must be a positive number, got {max_norm!r}")
    norm = global_norm(tree)
    scale = min(max_norm / (norm + 1e-6), 1.0)
    return tree_map(lambda v: Tensor(_data(v) * scale), tree)



