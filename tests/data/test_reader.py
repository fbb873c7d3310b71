"""fit over mapped .npy files reads rows ahead in a forked reader process (apsi_layers/data/reader.py):
the right batch or its error at its batch, whatever was skipped or left in flight; the same fit as
with the read-ahead thread; a reader that dies is replaced by reads in the program; no reader
outlives the program (Ctrl-C, kill -9)."""

import os
import select
import signal
import subprocess
import sys
import types

import numpy as np
import pytest

from apsi_lang.errors import ApsiError

from .run import ok
from .test_sources import FIT, files  # noqa: F401 (the fixture)
from .test_workers import HANG_GUARD, _children, _gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reader is forked on Linux")


def _rows(idx):
    if int(idx[0]) == 40:
        raise ApsiError("fit: 'x.npy' changed size while it was in use")
    return [np.repeat(idx[:, None].astype(np.float64), 3, axis=1), idx * 2]


@pytest.fixture
def source(monkeypatch):
    monkeypatch.setenv("APSI_READ_AHEAD", "process")
    src = types.SimpleNamespace(reader=None, read=_rows, what="fit", row_bytes=lambda: 32)
    yield src
    if src.reader is not None:
        src.reader.close()


def _same(got, idx):
    want = _rows(idx)
    return len(got) == 2 and all(np.array_equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))


@pytest.mark.parametrize(("cores", "load", "chosen"), [(2, 0.9, True), (2, 1.6, False), (1, 0.0, False),
                                                       (16, 8.0, True)])
def test_a_reader_process_where_a_core_is_free(monkeypatch, cores, load, chosen):
    from apsi_layers.data import reader

    monkeypatch.delenv("APSI_READ_AHEAD", raising=False)
    monkeypatch.setattr(reader.os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(reader.os, "getloadavg", lambda: (load, load, load))
    assert reader.use_process() is chosen
    monkeypatch.setenv("APSI_READ_AHEAD", "thread" if chosen else "process")     # the environment decides
    assert reader.use_process() is not chosen


def test_the_first_epoch_chooses_for_the_whole_fit(source, monkeypatch):
    from apsi_layers.data.reader import Prefetcher, ReadAhead, read_ahead

    batches = [np.arange(k * 4, k * 4 + 4) for k in range(3)]
    monkeypatch.setenv("APSI_READ_AHEAD", "thread")
    first = read_ahead(source, batches)
    first.close()
    monkeypatch.setenv("APSI_READ_AHEAD", "process")        # (the load fell): the thread stays
    second = read_ahead(source, batches)
    second.close()
    assert isinstance(first, Prefetcher) and isinstance(second, Prefetcher)
    other = types.SimpleNamespace(reader=None, read=_rows, what="fit", row_bytes=lambda: 32)
    assert isinstance(read_ahead(other, batches), ReadAhead)      # (another fit's source chooses anew)
    other.reader.close()


def test_replies_are_taken_by_serial_never_for_another_batch(source):
    from apsi_layers.data.reader import ReadAhead, read_ahead

    batches = [np.arange(k * 4, k * 4 + 4) for k in range(8)]
    ahead = read_ahead(source, batches)
    assert isinstance(ahead, ReadAhead) and source.reader.pid != os.getpid()
    assert _same(ahead.get(batches[1]), batches[1])        # batch 0 skipped: its reply is dropped
    assert _same(ahead.get(batches[0]), batches[0])        # not ahead any more: read here
    ahead.close()                                          # batches 2 and 3 still in flight
    again = read_ahead(source, batches[::-1][:5])          # the next epoch: same reader, same slots
    assert isinstance(again, ReadAhead)
    for b in batches[::-1][:5]:
        assert _same(again.get(b), b)


def test_slots_sized_by_a_short_first_epoch_grow_with_the_batches(source):
    """A resumed fit whose first epoch is only its last, short batch: the next epoch's full batches
    need larger slots (a new reader), never a write past a slot."""
    from apsi_layers.data.reader import read_ahead

    short = [np.arange(96, 98)]
    assert _same(read_ahead(source, short).get(short[0]), short[0])
    first = source.reader.pid
    batches = [np.arange(100 + k * 8, 108 + k * 8) for k in range(12)]
    ahead = read_ahead(source, batches)
    assert source.reader.pid != first
    for b in batches:
        assert _same(ahead.get(b), b)


def test_an_error_in_the_reader_is_raised_at_its_batch(source):
    from apsi_layers.data.reader import read_ahead

    batches = [np.arange(k * 20, k * 20 + 20) for k in range(4)]       # batch 2 starts at row 40
    ahead = read_ahead(source, batches)
    assert _same(ahead.get(batches[0]), batches[0])
    assert _same(ahead.get(batches[1]), batches[1])       # (batch 2's error is already back by now)
    with pytest.raises(ApsiError, match="'x.npy' changed size"):
        ahead.get(batches[2])


def test_a_reader_that_died_is_replaced_by_reads_here(source):
    from apsi_layers.data.reader import Prefetcher, read_ahead

    batches = [np.arange(k * 4, k * 4 + 4) for k in range(6)]
    ahead = read_ahead(source, batches)
    assert _same(ahead.get(batches[0]), batches[0])
    os.kill(source.reader.pid, signal.SIGKILL)
    for b in batches[1:]:
        assert _same(ahead.get(b), b)
    later = read_ahead(source, batches)           # the next epoch: the thread reads ahead
    assert isinstance(later, Prefetcher) and _same(later.get(batches[0]), batches[0])
    later.close()


@pytest.mark.parametrize("how", ["thread", "process"])
def test_fit_over_mapped_shards_is_the_in_memory_fit_with_either_reader(tmp_path, files, monkeypatch,  # noqa: F811
                                                                         how):
    monkeypatch.setenv("APSI_READ_AHEAD", how)
    assert ok(tmp_path, FIT.replace("BACKEND", 'backend="numpy"')).split() == ["true"] * 4


PROGRAM = """use layers
use nn
let x = load_npy("x.npy")
let y = load_npy("y.npy", mmap=false)
let net = mlp(4, 1)
fn said(epoch, logs):
    if epoch == 1:
        print("training")
let r = fit(net, net.init(seed=0), x, y, loss="mse", epochs=100000, batch_size=16, verbose=false,
            on_epoch=said)
"""


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_no_reader_outlives_the_program(tmp_path, how):
    np.save(tmp_path / "x.npy", np.ones((200, 4), np.float32))
    np.save(tmp_path / "y.npy", np.ones((200, 1), np.float32))
    (tmp_path / "prog.apsi").write_text(PROGRAM)
    err = open(tmp_path / "stderr.txt", "w+")     # noqa: SIM115 (a file: a reader left over cannot hold it open)
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "prog.apsi"], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=err, text=True,
                            env={**os.environ, "APSI_READ_AHEAD": "process"})
    readers = []
    try:
        assert select.select([proc.stdout], [], [], HANG_GUARD)[0], "the program never trained"
        assert proc.stdout.readline() == "training\n", (tmp_path / "stderr.txt").read_text()
        readers = _children(proc.pid)
        assert len(readers) == 1, readers       # forked at the first epoch, before "training"
        if how == "ctrl-c":     # the terminal sends it to the whole process group, the reader included
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG_GUARD)
        assert _gone(readers), f"reader {readers} still runs after {how}"
        if how == "ctrl-c":
            said = (tmp_path / "stderr.txt").read_text()
            assert proc.returncode == 130, said
            assert 'File "/' not in said, said       # no Python traceback
    finally:
        for pid in [proc.pid, *readers]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.stdout.close()
        err.close()
