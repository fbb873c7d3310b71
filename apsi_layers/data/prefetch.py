"""Read ahead: a background thread prepares the next batches of an epoch while a step runs.

The driver announces the epoch's batches in order; the thread reads up to DEPTH of them ahead into a
bounded queue (so memory stays at DEPTH batches). A consumer asking for the batch at the head of the
queue gets it; asking for anything else (a rank's share, a validation pass) reads it directly, so a
wrong guess costs time, never a wrong batch. An error in the thread (a file cut short, a batch
function that raised) is raised in the consumer at that batch, not before and not lost.
"""

import collections
import queue
import threading

DEPTH = 2
SMALL_STACK = 1 << 20
LOOK = 8        # how far down the announced order a request is looked for


class Prefetcher:
    def __init__(self, read, batches, small_stack=False):
        self.read = read
        self.items = queue.Queue(maxsize=DEPTH)
        self.stop = threading.Event()
        # the epoch's index arrays (views of its permutation): the consumer's view (it pops) and the
        # thread's; keys are made only for the few looked at (a copy of every index would be memory
        # the size of the permutation again)
        self.expected = collections.deque(batches)
        self.todo = tuple(batches)
        self.thread = threading.Thread(target=self._run, name="apsi-prefetch", daemon=True)
        # a file reader needs little stack (an Apsi batch function keeps the default): memory that a
        # process capped near its data's size does not have to spare
        old = threading.stack_size(SMALL_STACK) if small_stack else None
        try:
            self.thread.start()
        finally:
            if old is not None:
                threading.stack_size(old)

    def _run(self):
        for idx in self.todo:
            key = _key(idx)
            try:
                item = (key, self.read(idx), None)
            except BaseException as e:        # handed to the consumer at this batch  # noqa: BLE001
                item = (key, None, e)
            while not self.stop.is_set():
                try:
                    self.items.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if self.stop.is_set() or item[2] is not None:
                return

    def get(self, idx):
        """The batch for idx: from the queue when it is the next one read ahead, else read now."""
        key = _key(idx)
        ahead = next((j for j, b in zip(range(LOOK), self.expected) if _key(b) == key), None)
        if ahead is None:
            return self.read(idx)
        for _ in range(ahead + 1):          # batches the consumer skipped (nothing to learn) first
            self.expected.popleft()
            got, value, error = self.items.get()
            if error is not None:
                self.close()
                raise error
        return value

    def close(self):
        self.stop.set()
        while True:         # unblock a put waiting for room
            try:
                self.items.get_nowait()
            except queue.Empty:
                break
        self.thread.join(timeout=5)


def _key(idx):
    return idx.tobytes()


def pop_ahead(pending, key):
    """The entry for batch `key` among the first LOOK of `pending` (a deque of tuples whose first item
    is a batch's key, in the order asked), the entries before it (batches the consumer skipped)
    dropped; None when it was not asked ahead."""
    ahead = next((j for j, p in zip(range(LOOK), pending) if p[0] == key), None)
    if ahead is None:
        return None
    for _ in range(ahead):
        pending.popleft()
    return pending.popleft()
