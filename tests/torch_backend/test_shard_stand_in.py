"""A rank with no share of the last global batch joins the gradient all-reduce with weight 0 on
stand-in rows: one other rank's share, never the whole global batch. With a dataset (one call per
step) the whole batch was the error "fit: a dataset is read one call per step" on 3 processes and 5
calls (apsi launch --nproc 3, rank 2)."""

import types

import numpy as np
import pytest

pytest.importorskip("torch")


def _shard(rank, world):
    from apsi_layers.backends.torch.sharded import Shard

    shard = object.__new__(Shard)       # (no process group: rows() only needs its place in it)
    shard.rank, shard.world = rank, world
    return shard


def _plan(batch_size, mask=None):
    data = types.SimpleNamespace(mask=mask, targets=[np.zeros((5, 1))])
    return types.SimpleNamespace(batch_size=batch_size, data=data)


def test_a_rank_with_no_share_takes_one_share_that_keeps_a_position():
    last = np.array([3, 4])                    # 5 calls over 3 ranks, 1 each: the last step has 2
    rows, weight, total = _shard(2, 3).rows(last, _plan(1))
    assert rows.tolist() == [3] and weight == 0.0 and total == 2
    mask = np.array([True, True, True, False, True])   # rank 0's share of the last batch keeps nothing
    rows, weight, total = _shard(2, 3).rows(last, _plan(1, mask))
    assert rows.tolist() == [4] and weight == 0.0 and total == 1
    rows, weight, _ = _shard(1, 3).rows(last, _plan(1))         # a rank with a share keeps it
    assert rows.tolist() == [4] and weight == 3 / 2
