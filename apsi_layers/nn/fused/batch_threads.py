"""The fused ops' memory-bound loops, split over the batch axis and run on every core.

NumPy runs each ufunc on one core; PyTorch runs its element-wise and pooling kernels on all of them.
Where an op's work splits over the batch (pooling, the copies around a convolution's GEMM), its parts
run at once on a small thread pool: NumPy releases the GIL inside its loops. Each part writes only its
own slice of the outputs, so the results are bit for bit those of one call.

The number of threads follows the BLAS setting (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS), else the
cores this process may run on: one thread asked for means one thread everywhere.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

MIN_BYTES = 1 << 20          # below this, handing work to a thread costs more than it saves
# over_rows (GELU, layer norm, attention) splits only when this is true. Off: on the project's shared
# 2-core machine a transformer_lm fit was 5-40% slower with it in three interleaved before/after pairs
# (docs/nn.md); the bit-for-bit split is kept and tested, to be measured on a quiet many-core CPU.
SPLIT_ROWS = False
# in_blocks: GELU's chain on [2048, 512] (three or four 8 MB operands, nine and eleven passes) took
# 2.0 -> 1.8 ms forward and 2.0 -> 1.5 ms backward of one core's time in blocks of 32k-64k elements
# (256-512 KB per operand); 8k was slower than one call
BLOCK = 1 << 15
_pool = {"executor": None, "size": None}
_lock = threading.Lock()
_worker = threading.local()           # .inside: this thread is one of the pool's


def thread_count():
    if _pool["size"] is None:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            value = os.environ.get(var, "")
            if value.isdigit() and int(value) > 0:
                _pool["size"] = int(value)
                break
        else:
            _pool["size"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
                os.cpu_count() or 1)
    return _pool["size"]


def _executor():
    with _lock:
        if _pool["executor"] is None:
            _pool["executor"] = ThreadPoolExecutor(thread_count() - 1, thread_name_prefix="apsi-batch")
        return _pool["executor"]


def _forget_after_fork():
    # A forked child (use web's workers) has none of the parent's threads, and a lock one of them held
    # would stay held: start a new pool and lock if needed.
    global _lock
    _pool["executor"] = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


class _Parts:
    """The slices of one split, each run once: by whichever thread claims it first. The caller claims
    every slice no pool thread has started, so it never waits for a thread that is not running (on a
    busy machine a woken pool thread may get no core for milliseconds), only for slices under way."""

    def __init__(self, part, edges):
        self.part, self.edges = part, edges
        self.taken = [False] * (len(edges) - 1)
        self.lock = threading.Lock()

    def claim(self, i):
        with self.lock:
            if self.taken[i]:
                return False
            self.taken[i] = True
            return True

    def run(self, i):
        if self.claim(i):
            self.part(self.edges[i], self.edges[i + 1])

    def in_worker(self, i):
        _worker.inside = True
        self.run(i)


def over_batch(part, batch, nbytes):
    """Run part(lo, hi) over slices covering range(batch): one call when the work (nbytes touched)
    is small or there is one thread, else one slice per thread, this thread doing the first and any
    other that no pool thread has started yet. Called from inside a part on a pool thread, it runs on
    that thread alone."""
    parts = min(thread_count(), batch) if nbytes >= MIN_BYTES else 1
    if parts <= 1 or getattr(_worker, "inside", False):
        part(0, batch)
        return
    split = _Parts(part, [batch * i // parts for i in range(parts + 1)])
    futures = [_executor().submit(split.in_worker, i) for i in range(1, parts)]
    try:
        for i in range(parts):
            split.run(i)
    finally:
        # every part finishes before the arrays are used, even on an error; a queued call whose slice
        # the caller ran is dropped, not waited for
        waited = [f for f in futures if not f.cancel()]
        for f in waited:
            f.exception()
    for f in waited:
        f.result()


def over_rows(fn, *arrays):
    """fn(*parts) on matching row slices of arrays of one shape (first axis split; fn reads some and
    writes others, each element depending only on its own row): an elementwise chain or a reduction
    over the last axis runs on every core with the bits of one call. Arrays of under two axes (whose
    one axis may be the reduced one) or empty: one call."""
    first = arrays[0]
    if not SPLIT_ROWS or first.ndim < 2 or not first.size:
        fn(*arrays)
        return

    def part(lo, hi):
        fn(*(a[lo:hi] for a in arrays))

    over_batch(part, first.shape[0], sum(a.nbytes for a in arrays))


def in_blocks(fn, *arrays):
    """fn(*parts) on matching blocks of BLOCK elements of C-contiguous arrays of one shape, in order:
    for an elementwise chain (each element depends only on the elements at its own position), so that
    its passes find the block in cache instead of streaming whole arrays through memory once per pass.
    Same bits as one call. Small or non-contiguous arrays: one call."""
    first = arrays[0]
    if first.size <= BLOCK or not all(a.shape == first.shape and a.flags.c_contiguous for a in arrays):
        fn(*arrays)
        return
    flat = [a.reshape(-1) for a in arrays]
    for lo in range(0, first.size, BLOCK):
        fn(*(a[lo:lo + BLOCK] for a in flat))


def copy_over_batch(dst, src, axis=0):
    """dst[...] = src (same shape; a strided view for src is the point), the batch axis split."""
    def part(lo, hi):
        index = (slice(None),) * axis + (slice(lo, hi),)
        dst[index] = src[index]

    over_batch(part, dst.shape[axis], dst.nbytes)
    return dst
