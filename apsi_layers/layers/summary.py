"""summary(model, params): each layer's path, kind, output shape and parameter count, and the total.
A rich table on a terminal, aligned plain text otherwise."""

import sys

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show
from apsi_layers.nn.autograd import tree

from .base import Layer, build_root, fmt, leaf_shapes
from .init_rng import ShapeRng

HEADER = ("layer", "kind", "output shape", "params")


def rows(model, params=None, input_shape=None):
    """([(indented path, kind, output shape, parameter count)], total) with parents before their
    layers; a combinator's count is the sum of what it holds."""
    if not isinstance(model, Layer):
        raise ApsiError(f"summary: expects a model (a layer), not {show(model, True)}")
    shape = model.resolve_input(input_shape, "summary")
    rng = ShapeRng()
    build_root(model, rng, shape)
    table, previous = [], None
    for path, layer, _, output, spec in rng.trace:
        if path == previous:           # residual's inner layer sits at the residual's own path
            continue
        previous = path
        count = sum(s.size for s in tree.leaves(spec)) if tree.leaves(spec) else 0
        depth = path.count(".") + (1 if path else 0)
        table.append(("  " * depth + (path.rsplit(".", 1)[-1] if path else "(model)"), layer.label(),
                      fmt(output), f"{count:,}"))
    spec = rng.trace[0][4]
    if params is not None:
        _check_tree(params, spec)
    return table, sum(s.size for s in tree.leaves(spec)) if tree.leaves(spec) else 0


def _check_tree(params, spec):
    """The parameters must be this model's: the same dotted names with the same shapes."""
    if not isinstance(params, Record):
        raise ApsiError(f"summary: params must be the parameter tree from model.init(seed=0), "
                        f"not {show(params, True)}")
    want = dict(leaf_shapes(spec)) if tree.leaves(spec) else {}
    have = dict(leaf_shapes(params)) if tree.leaves(params) else {}
    for name in list(want) + [n for n in have if n not in want]:
        if name not in have:
            problem = f"is missing (the model needs shape {list(want[name])})"
        elif name not in want:
            problem = "is not part of the model"
        elif have[name] != want[name]:
            problem = f"has shape {list(have[name])} but the model needs {list(want[name])}"
        else:
            continue
        raise ApsiError(f"summary: parameter {name} {problem}; use model.init(seed=0) of this model")


def summary(model, params=None, input_shape=None):
    """Print the table; returns none."""
    table, total = rows(model, params, input_shape)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        t = Table(title=repr(model))         # what the model is, every option not at its default
        for col in HEADER:
            t.add_column(col, justify="right" if col == "params" else "left")
        for row in table:
            t.add_row(*row)
        Console().print(t)
    else:
        print(repr(model))
        widths = [max(len(r[i]) for r in [HEADER, *table]) for i in range(4)]
        for row in [HEADER, *table]:
            cells = [c.ljust(w) for c, w in zip(row[:3], widths, strict=False)] + [row[3].rjust(widths[3])]
            print("  ".join(cells))
    print(f"total parameters: {total:,}")
