"""How long the step waited for a dataset's batches: the seconds the process that trains spent
blocked in the read-ahead's get (a worker's pipe, the read-ahead thread's queue, or a call made on
the spot), summed over the batches taken, and the part of it spent on the first batch after an
announcement (an epoch's first: its order is drawn when it starts, so that call cannot have been made
ahead). Private: scripts/bench_data.py reads it to show that the read-ahead hides the calls (the
target is about 0 per step)."""

import time


class Waited:
    def __init__(self):
        self.seconds, self.batches, self.first, self.cpu = 0.0, 0, 0.0, 0.0

    @staticmethod
    def start():
        return time.perf_counter(), time.thread_time()

    def since(self, t0, first):
        """Count one batch whose wait began at t0 (start()); first: an epoch's first. The CPU time
        the waiting thread used meanwhile (taking the batch) is summed apart: on a busy machine a
        wall-clock wait is that time stretched by the others' turns."""
        waited = time.perf_counter() - t0[0]
        self.seconds += waited
        self.cpu += time.thread_time() - t0[1]
        self.batches += 1
        if first:
            self.first += waited


WAITED = Waited()
