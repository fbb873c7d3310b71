"""What keeps the step from waiting for a dataset worker on a busy machine (docs/data.md, Measured):
its finished batches lie whole in the kernel until the step takes them (the step's read is one copy,
never a wait for the worker to be scheduled again to write the rest), and a worker woken by a request
does not preempt the step (batch scheduling)."""

import array
import fcntl
import os
import sys
import termios
import time
from pathlib import Path

import numpy as np
import pytest

from apsi_layers.data.workers import Pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux")
HANG_GUARD = 30         # seconds: only a failure reaches this


def _queued(conn):
    """Bytes the worker has written that the step has not read (the socket's receive queue)."""
    n = array.array("i", [0])
    fcntl.ioctl(conn.fileno(), termios.FIONREAD, n)
    return n[0]


def _most_a_socket_may_hold():
    try:        # (the kernel doubles what it is asked for, up to twice net.core.wmem_max)
        return 2 * int(Path("/proc/sys/net/core/wmem_max").read_text())
    except (OSError, ValueError):
        return 0


def test_three_results_of_100_kb_wait_whole_in_the_socket_of_a_batch_scheduled_worker():
    rows = 12_500            # 100 kB a result: three are more than Linux's default socket buffer
    if _most_a_socket_may_hold() < 4 * rows * 8:
        pytest.skip("this kernel caps a socket's buffer below 3 results (net.core.wmem_max)")
    pool = Pool(lambda i, epoch: [np.full(rows, float(i))], 1, "test")
    try:
        serials = [pool.submit(0, 1, i) for i in range(3)]
        deadline = time.monotonic() + HANG_GUARD
        while _queued(pool.conns[0]) < 3 * rows * 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _queued(pool.conns[0]) >= 3 * rows * 8
        got = [pool.result(0, serial, i)[0] for i, serial in enumerate(serials)]
        for i, a in enumerate(got):     # (each its own copy: the step's read buffer is reused)
            assert np.array_equal(a, np.full(rows, float(i)))
        assert os.sched_getscheduler(pool.pids[0]) == os.SCHED_BATCH
    finally:
        pool.close()


def test_the_steps_wait_for_its_batches_is_counted(tmp_path):
    """The bench's measure (apsi_layers/data/waited.py): each batch taken is counted once, with and
    without workers, and the first of each pass apart (its call, 50 ms here, was barely begun)."""
    from apsi_lang import permissions, run_source
    from apsi_layers.data.waited import WAITED

    program = """use layers
use nn
let net = dense(1)
let p = net.init(seed=0, input_shape=[2])
fn batch(i):
    let t = clock()
    let s = 0
    while clock() - t < 0.05 if i == 0 else false:
        s = s + 1
    return [ones(3, 2)]
for w in [0, 2]:
    let y = predict(net, p, dataset(7, batch, workers=w))
"""
    before = (WAITED.batches, WAITED.first, WAITED.seconds)
    run_source(program, str(tmp_path / "prog.apsi"),
               grants=permissions.Grants(granted=frozenset(), project_root=str(tmp_path)))
    assert WAITED.batches - before[0] == 14
    assert WAITED.first - before[1] > 0
    assert WAITED.seconds - before[2] >= WAITED.first - before[1]
