"""fit's and predict's Data from sources that stay out of memory: mapped .npy inputs (checked in one
streamed pass) and dataset(count, fn) batches (checked call by call, named by batch)."""

import numpy as np

from apsi_lang.errors import ApsiError

from .memmap import Mapped
from .sources import Column, Dataset, DatasetSource, mapped_column
from .sources import read_whole as read_whole  # (data_checks reads targets and masks through here)

CHUNK_BYTES = 1 << 20          # the streamed checks read this much at a time


def is_source(x):
    return isinstance(x, Mapped | Dataset)


def mapped_input(fn, arg, m, ids_vocab, nan_ok=False):
    """A mapped input as a column of float64 rows (token ids: int64), after one streamed pass that
    finds NaN/inf (or ids out of range) and names the row, as in-memory inputs are checked."""
    step = max(1, CHUNK_BYTES // max(1, m.size // max(1, len(m)) * m.np_dtype.itemsize))
    key = (ids_vocab, nan_ok)
    checked = m.__dict__.setdefault("checked", set())     # a second fit over the same files: once
    for start in range(0, 0 if key in checked else len(m), step):
        rows = np.arange(start, min(start + step, len(m)))
        block = m.take(rows, fn)
        if ids_vocab is not None:
            _check_ids(fn, block, ids_vocab, lambda k, s=start: m.place(s + k))
        elif block.dtype.kind == "f" and not nan_ok and not np.isfinite(block).all():
            where = np.argwhere(~np.isfinite(block))[0]
            raise ApsiError(f"{fn}: {arg} hold {block[tuple(where)]} at {m.place(start + int(where[0]))}; "
                            "replace those values first (an imputation layer fills them)")
    checked.add(key)
    return mapped_column(fn, arg, m, np.int64 if ids_vocab is not None else np.float64)


def _check_ids(fn, block, vocab, where):
    """Token ids must be whole numbers in 0..vocab-1; where(k) names the place of block's row k (a
    file's row, a dataset's batch), as the other checks of a source do."""
    frac = block != np.round(block) if block.dtype.kind == "f" else np.zeros(block.shape, bool)
    if frac.any():
        k = int(np.argwhere(frac)[0][0])
        raise ApsiError(f"{fn}: the model starts with an embedding, so inputs must be int token ids; "
                        f"{where(k)} holds fractional numbers")
    out = (block < 0) | (block >= vocab)
    if out.any():
        at = tuple(np.argwhere(out)[0])
        raise ApsiError(f"{fn}: token id {block[at]:.0f} at {where(at[0])} is out of range "
                        f"(ids 0..{vocab - 1})")


def dataset_data(fn, ds, seed, ids_vocab, nan_ok=False):
    """Data whose inputs and targets are the columns of a dataset's calls; call 0 is made now, so
    shapes are checked (and errors met) before training."""
    from apsi_layers.layers.training.arrays import Data

    first = ds.call(0, seed, 0, fn)
    if len(first) < 2 and fn == "fit":
        raise ApsiError("fit: the dataset function returned only x at batch 0; fit needs [x, y]")
    x0 = first[0]
    if len(x0) and 0 in x0.shape[1:]:      # as in memory (data_checks._empty_sample), not a layer's 1/0
        raise ApsiError(f"{fn}: the dataset function returned x of shape {list(x0.shape)} at batch 0: "
                        f"samples of per-sample shape {list(x0.shape[1:])}, with no numbers; return at "
                        "least one number per sample")
    x_rule = _input_rule(fn, x0, ids_vocab, nan_ok)
    src = DatasetSource(ds, seed, fn, [x_rule] + ([_same_tail(fn, "y", first[1])] if len(first) > 1 else []))
    x0 = x_rule(x0, 0, 0)
    xs = [Column(src, 0, (ds.count, *x0.shape[1:]), x0.dtype)]
    ys = [Column(src, 1, (ds.count, *first[1].shape[1:]), first[1].dtype)] if len(first) > 1 else None
    return Data(inputs=xs, targets=ys if fn == "fit" else None, n=ds.count, first=first)


def _epoch(epoch):
    return f" (epoch {epoch})" if epoch else ""     # call 0, made before training, has no epoch


def _same_tail(fn, k, like):
    tail = tuple(like.shape[1:])

    def rule(a, i, epoch):
        if tuple(a.shape[1:]) != tail:
            raise ApsiError(f"{fn}: the dataset function returned {k} of shape {list(a.shape)} at batch "
                            f"{i}{f' (epoch {epoch})' if epoch else ''}, but batch 0's {k} has per-sample "
                            f"shape {list(tail)}; every batch needs the same shape after the first axis")
        return a
    return rule


def _input_rule(fn, x0, ids_vocab, nan_ok):
    same = _same_tail(fn, "x", x0)

    def rule(a, i, epoch):
        a = same(a, i, epoch)
        if ids_vocab is not None:
            _check_ids(fn, a, ids_vocab, lambda k: f"row {k} of x at batch {i}{_epoch(epoch)}")
            return a.astype(np.int64)
        if a.dtype.kind == "f" and not nan_ok and not np.isfinite(a).all():
            raise ApsiError(f"{fn}: the dataset function returned x holding NaN or inf at batch {i}"
                            f"{f' (epoch {epoch})' if epoch else ''}; replace those values first")
        return a.astype(np.float64)
    return rule


def target_rule(fn, column, check, y0):
    """check(y) -> y (data_checks._target's conversions and messages), applied to every call's y."""
    src = column.source
    tail = src.rules[1]

    def rule(a, i, epoch):
        try:
            return check(tail(a, i, epoch))
        except ApsiError as e:
            if f"batch {i}" in e.message:
                raise
            raise ApsiError(f"{e.message} (dataset batch {i}{f', epoch {epoch}' if epoch else ''})") from None
    src.rules[1] = rule
    y0 = rule(y0, 0, 0)
    column.shape = (column.shape[0], *y0.shape[1:])
    column.dtype = y0.dtype
