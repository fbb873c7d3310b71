"""predict and adapt over a mapped array or a dataset: the same predict (or statistics) on pieces that
fit in memory, the outputs put together in order (rows in file order; a dataset's calls 0, 1, …,
count-1).

A dataset's calls are read as fit reads them (sources.DatasetSource): ahead of the model, in the
dataset's worker processes (a read-ahead thread with workers=0), call i with its random stream from
(seed 0, epoch 0, i), so the pieces are the same whatever the number of workers; an error in a call
is raised at its batch. The workers are forked when the reading starts and stopped when it ends
(adapt's passes, one per preprocessing layer, share them)."""

import contextlib

import numpy as np

from apsi_lang.errors import ApsiError

from .memmap import Mapped

CHUNK_BYTES = 32 << 20
WINDOW = 1024           # a dataset's calls announced to the read-ahead at a time


@contextlib.contextmanager
def reading(x, what):
    """A function giving one pass over x: (where, tensor) per piece, in order; `where` names a
    dataset's batch (" (dataset batch 7)") for the errors a piece meets later, else ""."""
    if isinstance(x, Mapped):
        yield lambda: _rows(x, what)
        return
    from .sources import DatasetSource

    src = DatasetSource(x, 0, what, [_same_as_first(what)])
    try:
        yield lambda: _calls(src, x.count)
    finally:
        src.close()


def _rows(x, what):
    from apsi_layers.nn.autograd.tensor import Tensor

    row = max(1, x.size // max(1, len(x))) * 8
    step = max(1, CHUNK_BYTES // row)
    for start in range(0, len(x), step):
        rows = x.take(np.arange(start, min(start + step, len(x))), what)
        yield "", Tensor(rows.astype(np.float64) if rows.dtype.kind == "f" else rows)


def _calls(src, count):
    """Calls 0, 1, …, announced WINDOW at a time (the read-ahead holds what it is told of: a count of
    millions is not millions of index arrays); each window's first call is read ahead like the rest
    once the previous window's last is taken."""
    from apsi_layers.nn.autograd.tensor import Tensor

    for start in range(0, count, WINDOW):
        order = np.arange(start, min(start + WINDOW, count), dtype=np.int64).reshape(-1, 1)
        src.announce(order, 0)
        for idx in order:
            yield f" (dataset batch {int(idx[0])})", Tensor(src.fetch(idx)[0])


def _same_as_first(what):
    """Every call's x has batch 0's shape after the first axis (checked as it comes, named by batch)."""
    from .fit_data import _same_tail as same_tail

    rule = []

    def check(a, i, epoch):
        if not rule:            # (each pass reads batch 0 first)
            rule.append(same_tail(what, "x", a))
        return rule[0](a, i, epoch)
    return check


def at_piece(where, run, *args):
    """run(*args), an error it raises naming the dataset batch the piece came from."""
    try:
        return run(*args)
    except ApsiError as e:
        if not where or "batch" in e.message:
            raise
        raise ApsiError(e.message + where, e.kind) from None


def predict_pieces(run, x):
    """run(piece) -> the model's output for a piece; the outputs of all pieces, concatenated."""
    from apsi_layers.nn.autograd.tensor import Tensor

    with reading(x, "predict") as each:
        outs = [at_piece(where, run, piece) for where, piece in each()]
    if isinstance(outs[0], list | tuple):
        return [Tensor(np.concatenate([o[k].data for o in outs])) for k in range(len(outs[0]))]
    return Tensor(np.concatenate([o.data for o in outs]))
