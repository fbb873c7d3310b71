"""Elementwise updates of large arrays, one block at a time, on one or more cores.

NumPy runs each `a op= b` as a pass over the whole array: an optimizer rule of a dozen ops streams a
parameter, its gradient and its moments through memory a dozen times, and a 1024 x 1024 float64 array
(8 MB each) does not stay in cache from one pass to the next. Applying the whole rule to one block of
every operand before moving to the next block keeps those passes in the core's cache. Blocks are
independent, so several cores can take a share each, as PyTorch's CPU kernels do (at::parallel_for).
Elementwise IEEE arithmetic gives the same bits whatever the block size, order or thread.
"""

import math
import os
import threading

import numpy as np

BLOCK = 1 << 15        # elements per block: a block of each of ~6 operands fits a core's L2 (1 MB)
PER_THREAD = 1 << 16   # elements a thread must get to be worth waking (about 0.2 ms of an optimizer rule)

_local = threading.local()
_pool = None
_pool_lock = threading.Lock()


def flat(arrays):
    """1-D views of `arrays` (all of one shape) that walk them in the same element order, or None when
    their memory layouts differ (a C-ordered parameter with an F-ordered gradient)."""
    for order, flag in (("C", "C_CONTIGUOUS"), ("F", "F_CONTIGUOUS")):
        if all(a.flags[flag] for a in arrays):
            return [a.ravel(order) for a in arrays]
    return None


def tasks(fn, arrays, *args):
    """The calls that apply fn(*args, *arrays, a, b) to every element: one per block of the aligned
    arrays, or one on the whole arrays when they are no larger than a block or cannot be walked
    together (a and b are scratch arrays of the block's shape). fn must only ever touch the elements
    of the views it is given."""
    views = flat(arrays) if arrays[0].size > BLOCK else None
    if views is None:                   # small (one block anyway) or not walkable together
        return [(arrays[0].shape, fn, args, arrays)]
    n = views[0].size
    return [(min(n - i, BLOCK), fn, args, [v[i:i + BLOCK] for v in views]) for i in range(0, n, BLOCK)]


def run(work):
    """Run the tasks (independent of each other) here and, when there are enough elements to share,
    on the pool's threads too. Returns when every task has finished, even after an exception (a
    KeyboardInterrupt included): no thread is still writing once the caller goes on."""
    total = sum(_size(t) for t in work)
    most = threads()
    workers = min(most, len(work), total // PER_THREAD)
    if workers <= 1:
        _run_share(work)
        return
    shares = _split(work, workers, total)
    pool = _executor(most - 1)
    futures = [pool.submit(_run_share, share) for share in shares[1:]]
    try:
        _run_share(shares[0])
    finally:
        for f in futures:
            f.exception()               # waits; a worker's error is re-raised below
    for f in futures:
        f.result()


def threads():
    """How many cores the updates may use: OMP_NUM_THREADS when set (what NumPy's BLAS and PyTorch
    follow), else the cores this process may run on."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _size(task):
    n = task[0]
    return n if isinstance(n, int) else math.prod(n)


def _split(work, workers, total):
    """Consecutive runs of tasks of about equal size, one per worker."""
    shares, share, done = [], [], 0
    for t in work:
        share.append(t)
        done += _size(t)
        if done * workers >= total * (len(shares) + 1) and len(shares) < workers - 1:
            shares.append(share)
            share = []
    return shares + [share] if share else shares


def _run_share(share):
    a, b = _scratch(BLOCK)
    for n, fn, args, views in share:
        if isinstance(n, int):
            if n > a.size:                      # (BLOCK grew since this thread's scratch was made)
                a, b = _scratch(n)
            fn(*args, *views, a[:n], b[:n])
        else:                                   # the whole arrays: scratch of their shape
            fn(*args, *views, np.empty(n), np.empty(n))


def _scratch(n):
    """Two buffers of at least n elements per thread (a thread runs one task at a time)."""
    s = getattr(_local, "scratch", None)
    if s is None or s[0].size < n:
        s = _local.scratch = (np.empty(n), np.empty(n))
    return s


def _executor(size):
    """The pool of `size` threads, made on first use (and again if the thread count was changed)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers != size:
            from concurrent.futures import ThreadPoolExecutor

            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="apsi-blockwise")
        return _pool


def _forget_pool():
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()  # a forked child has none of its parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
