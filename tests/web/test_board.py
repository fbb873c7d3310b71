"""The shared board on which worker processes post their counters (no server): what a scrape adds up,
a slot caught half written, a worker that takes over a dead one's slot."""

import os
import sys

import pytest

from apsi_layers.web.board import HEAD, Board
from apsi_layers.web.observe import Observer


def observer_with(board, slot, requests):
    o = Observer(False, board=board)
    o.join(slot)
    for status in requests:
        o.arrived()
        o.finished("127.0.0.1", "POST", "/predict", "/predict", status, 0.003)
    o.batch(len(requests))
    o.post()
    return o


def test_a_scrape_shows_the_sum_of_every_workers_counts():
    board = Board(3)
    observer_with(board, 0, [200, 200, 422])
    observer_with(board, 1, [200])
    mine = Observer(False, board=board)
    mine.join(2)
    mine.arrived()                      # (the scrape itself, in flight)
    text = mine.text()
    assert 'apsi_requests_total{method="POST",route="/predict",status="200"} 3\n' in text
    assert 'apsi_requests_total{method="POST",route="/predict",status="422"} 1\n' in text
    assert "apsi_request_errors_total 1\n" in text and "apsi_request_seconds_count 4\n" in text
    assert 'apsi_batch_rows_bucket{le="+Inf"} 2\n' in text and "apsi_batch_rows_sum 4.0\n" in text
    assert "apsi_requests_in_flight 1\n" in text


def test_a_slot_caught_half_written_shows_what_was_read_there_last():
    board = Board(2)
    observer_with(board, 0, [200, 200])
    reader = Board.__new__(Board)
    reader.__dict__.update(board.__dict__, last={}, mine=1)
    assert reader.read(0)["requests"] == [["POST", "/predict", 200, 2]]
    board.memory[HEAD.size + 5] ^= 0xFF                 # a byte the writer is changing now
    assert reader.read(0)["requests"] == [["POST", "/predict", 200, 2]]
    assert Board(1).read(0) is None                     # nothing posted yet


def test_a_worker_in_a_dead_ones_slot_goes_on_from_its_counts():
    board = Board(1)
    observer_with(board, 0, [200] * 5)
    heir = observer_with(board, 0, [200])               # (the dead one's in-flight count is not taken)
    assert heir.requests == {("POST", "/predict", 200): 6} and heir.in_flight == 0
    assert board.read(0)["requests"] == [["POST", "/predict", 200, 6]]


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_the_board_is_shared_with_a_forked_worker():
    board = Board(2)
    pid = os.fork()
    if pid == 0:
        try:
            observer_with(board, 1, [200] * 7)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert board.read(1)["requests"] == [["POST", "/predict", 200, 7]]


def _worker_view(board, slot):
    """The board as another worker process sees it: the same memory, its own slot and last reads."""
    view = Board.__new__(Board)
    view.__dict__.update(board.__dict__, last={}, mine=None)
    o = Observer(False, board=view)
    o.join(slot)
    return o


def test_a_counter_never_goes_backwards_between_scrapes_answered_by_different_workers():
    """A (115 answered, last posted at 100) answers a scrape that shows 200 with B's 85; B answers the
    next: it must count A's 115, not the 100 A had posted before (Prometheus reads a drop as a reset)."""
    board = Board(2)
    a, b = _worker_view(board, 0), _worker_view(board, 1)
    for o, n in ((a, 100), (b, 85)):
        for _ in range(n):
            o.finished("127.0.0.1", "POST", "/predict", "/predict", 200, 0.003)
        o.post()
    for _ in range(15):                 # answered since A's last post (posts are about a second apart)
        a.finished("127.0.0.1", "POST", "/predict", "/predict", 200, 0.003)
    line = 'apsi_requests_total{method="POST",route="/predict",status="200"} 200\n'
    assert line in a.text()
    assert line in b.text()
