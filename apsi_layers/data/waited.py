"""How long the step waited for a dataset's batches: the seconds the process that trains spent
blocked in the read-ahead's get (a worker's pipe, the read-ahead thread's queue, or a call made on
the spot), summed over the batches taken. Private: scripts/bench_data.py reads it to show that the
read-ahead hides the calls (the target is about 0 per step)."""

import time


class Waited:
    def __init__(self):
        self.seconds, self.batches = 0.0, 0

    def since(self, t0):
        """Count one batch whose wait began at t0 (time.perf_counter())."""
        self.seconds += time.perf_counter() - t0
        self.batches += 1


WAITED = Waited()
