"""predict over a mapped array or a dataset: the same predict on pieces that fit in memory, the
outputs put together in order (rows in file order; a dataset's calls 0, 1, …, count-1)."""

import numpy as np

from .memmap import Mapped

CHUNK_BYTES = 32 << 20


def pieces(x, seed=0):
    """The inputs of each piece, as tensors, in order."""
    from apsi_layers.nn.autograd.tensor import Tensor

    if isinstance(x, Mapped):
        row = max(1, x.size // max(1, len(x))) * 8
        step = max(1, CHUNK_BYTES // row)
        for start in range(0, len(x), step):
            rows = x.take(np.arange(start, min(start + step, len(x))), "predict")
            yield Tensor(rows.astype(np.float64) if rows.dtype.kind == "f" else rows)
        return
    for i in range(x.count):
        yield Tensor(x.call(i, seed, 0, "predict")[0])


def predict_pieces(run, x):
    """run(piece) -> the model's output for a piece; the outputs of all pieces, concatenated."""
    from apsi_layers.nn.autograd.tensor import Tensor

    outs = [run(p) for p in pieces(x)]
    if isinstance(outs[0], list | tuple):
        return [Tensor(np.concatenate([o[k].data for o in outs])) for k in range(len(outs[0]))]
    return Tensor(np.concatenate([o.data for o in outs]))
