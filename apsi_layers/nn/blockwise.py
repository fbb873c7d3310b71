"""Elementwise updates of large arrays, one block at a time, on one or more cores.

NumPy runs each `a op= b` as a pass over the whole array: an optimizer rule of a dozen ops streams a
parameter, its gradient and its moments through memory a dozen times, and a 1024 x 1024 float64 array
(8 MB each) does not stay in cache from one pass to the next. Applying the whole rule to one block of
every operand before moving to the next block keeps those passes in the core's cache. Blocks are
independent, so several cores can take a share each, as PyTorch's CPU kernels do (at::parallel_for).
Elementwise IEEE arithmetic gives the same bits whatever the block size, order or thread.
"""

import os
import threading

import numpy as np

BLOCK = 1 << 15        # elements per block: a block of each of ~6 operands fits a core's L2 (1 MB)
PARALLEL_MIN = 1 << 18  # below this many elements in one call, threads cost more than they save

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
    arrays, or one on the whole arrays when they cannot be walked together (a and b are scratch arrays
    of the block's shape). fn must only ever touch the elements of the views it is given."""
    views = flat(arrays)
    if views is None:
        return [(arrays[0].shape, fn, args, arrays)]
    n = views[0].size
    return [(min(n - i, BLOCK), fn, args, [v[i:i + BLOCK] for v in views]) for i in range(0, n, BLOCK)]


def run(work):
    """Run the tasks (independent of each other) in this thread and, when large enough, in the pool's."""
    workers = threads()
    total = sum(_size(t) for t in work)
    if workers == 1 or len(work) < 2 or total < PARALLEL_MIN:
        _run_share(work)
        return
    shares = _split(work, workers, total)
    futures = [_executor(workers).submit(_run_share, share) for share in shares[1:]]
    _run_share(shares[0])
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
    return n if isinstance(n, int) else int(np.prod(n))


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
    a, b = _scratch()
    for n, fn, args, views in share:
        if isinstance(n, int):
            fn(*args, *views, a[:n], b[:n])
        else:                                   # the whole arrays: scratch of their shape
            fn(*args, *views, np.empty(n), np.empty(n))


def _scratch():
    """Two block-sized buffers per thread (a thread runs one task at a time)."""
    s = getattr(_local, "scratch", None)
    if s is None:
        s = _local.scratch = (np.empty(BLOCK), np.empty(BLOCK))
    return s


def _executor(workers):
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers != workers - 1:
            from concurrent.futures import ThreadPoolExecutor

            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=workers - 1, thread_name_prefix="apsi-blockwise")
        return _pool


def _forget_pool():
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()  # a forked child has none of its parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
