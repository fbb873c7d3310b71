"""batch_threads: parts cover the batch once, errors surface after every part ended, a forked child
(use web's workers) gets a working pool, and one thread asked for means no split."""

import importlib
import os
import threading
import time

import numpy as np
import pytest

bt = importlib.import_module("apsi_layers.nn.fused.batch_threads")


@pytest.fixture
def three_threads(monkeypatch):
    monkeypatch.setattr(bt, "MIN_BYTES", 0)
    monkeypatch.setitem(bt._pool, "size", 3)
    monkeypatch.setitem(bt._pool, "executor", None)


def test_the_parts_cover_the_batch_once_on_several_threads(three_threads):
    seen, names = np.zeros(10, int), set()

    started = threading.Barrier(3, timeout=20)

    def part(lo, hi):
        seen[lo:hi] += 1
        names.add(threading.current_thread().name)
        started.wait()                    # no thread can take two parts

    bt.over_batch(part, 10, 1)
    assert seen.tolist() == [1] * 10 and len(names) == 3


def test_an_error_in_a_part_waits_for_the_others(three_threads):
    started, done = [], []

    def part(lo, hi):
        if lo == 0:
            time.sleep(0.05)              # the pool threads start their parts meanwhile (or not: then
            raise ValueError("first part")  # nobody runs them)
        started.append(lo)
        time.sleep(0.1)
        done.append(lo)

    with pytest.raises(ValueError, match="first part"):
        bt.over_batch(part, 9, 1)
    assert sorted(done) == sorted(started)    # nothing still writes once the caller sees the error


def test_a_part_that_splits_again_runs_its_slices_itself(monkeypatch):
    monkeypatch.setattr(bt, "MIN_BYTES", 0)
    monkeypatch.setitem(bt._pool, "size", 2)
    monkeypatch.setitem(bt._pool, "executor", None)
    seen = np.zeros(8, int)

    def inner(lo, hi):
        seen[lo:hi] += 1

    def outer(lo, hi):
        time.sleep(0.05)                  # both pool threads busy at once: nesting would wait for ever
        bt.over_batch(inner, 8, 1)

    runner = threading.Thread(target=bt.over_batch, args=(outer, 4, 1), daemon=True)   # 2 parts
    runner.start()
    runner.join(20)
    assert not runner.is_alive(), "a nested over_batch waits for ever"
    assert seen.tolist() == [2] * 8       # each part ran inner over the whole batch


def test_the_caller_runs_the_parts_no_pool_thread_has_started(monkeypatch):
    # a pool thread that gets no core (here: busy with other work) must not hold the caller up
    monkeypatch.setattr(bt, "MIN_BYTES", 0)
    monkeypatch.setitem(bt._pool, "size", 3)
    monkeypatch.setitem(bt._pool, "executor", None)
    release = threading.Event()
    busy = [bt._executor().submit(release.wait, 30) for _ in range(2)]
    calls = []
    runner = threading.Thread(target=bt.over_batch, args=(lambda lo, hi: calls.append((lo, hi)), 9, 1))
    runner.start()
    runner.join(10)
    stuck = runner.is_alive()
    release.set()
    runner.join(30)
    for f in busy:
        f.result()
    assert not stuck, "over_batch waited for pool threads that had not started its parts"
    assert sorted(calls) == [(0, 3), (3, 6), (6, 9)]


def test_one_thread_or_little_work_runs_on_the_caller(monkeypatch):
    monkeypatch.setitem(bt._pool, "size", 1)
    calls = []
    bt.over_batch(lambda lo, hi: calls.append((lo, hi, threading.current_thread())), 8, 1 << 30)
    assert calls == [(0, 8, threading.current_thread())]
    monkeypatch.setitem(bt._pool, "size", 4)
    calls.clear()
    bt.over_batch(lambda lo, hi: calls.append((lo, hi)), 8, bt.MIN_BYTES - 1)
    assert calls == [(0, 8)]


def test_the_thread_count_follows_the_blas_setting(monkeypatch):
    monkeypatch.setitem(bt._pool, "size", None)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert bt.thread_count() == 1
    monkeypatch.setitem(bt._pool, "size", None)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert bt.thread_count() == 5


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_gets_a_pool_that_works(three_threads):
    bt.over_batch(lambda lo, hi: time.sleep(0.1), 6, 1)          # the parent's pool has two threads,
    time.sleep(0.2)                                                # both idle: the child would count on them
    pid = os.fork()
    if pid == 0:                                  # the child: a hang here would fail the test by timeout
        ok = np.zeros(6)
        bt.over_batch(lambda lo, hi: ok.__setitem__(slice(lo, hi), 2), 6, 1)
        os._exit(0 if ok.tolist() == [2] * 6 else 1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung on the parent's thread pool")
