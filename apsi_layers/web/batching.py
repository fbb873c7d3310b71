"""Dynamic batching: requests that arrive together are answered by one predict call.

The first waiting request opens a batch; others join until it holds `max_batch` rows or `max_wait`
seconds have passed since it opened (it waits only while other requests are being read: with none
on its way, a lone request goes at once instead of paying max_wait), then one call runs in a worker
thread (the event loop goes on accepting requests meanwhile, so under load the next batch fills while
this one computes). A call that is cheap (on a model of Apsi's own layers only: builtin_code.py)
runs on the event loop's thread instead: handing it to the worker thread and back cost more than
the call (a 1-row mlp: ~50 µs to compute, while each hand-off wakes a thread and passes the GIL).
"Cheap" is measured, not guessed: each call's CPU time is kept per size of batch (rows, in powers of
two), and a size runs on the loop while its calls take under INLINE_SECONDS. Only
requests of the same kind (key) join a batch: rows of equal per-sample shapes, with or without a mask;
a request that must run alone (a graph) has a key of its own. A request larger than max_batch runs
alone. Results are handed back in order, one per request.

A batch whose call fails is split in halves and each half run again, down to the requests that fail
on their own (bisection: one bad request among 64 costs about a dozen calls, not 64), so a request's
answer never depends on the rows of others: each failing request gets `explain(its error)`, and the
others their outputs.

The calls run on one thread with the stack the program's thread has (apsi_lang/bigstack.py): the
model's own code runs there under the program's recursion limit, and a deep recursion through C code
(sorted(key=…)) must end as an error, not overflow the default 8 MiB stack and kill the server.
"""

import asyncio
import collections
import time

# A batch whose calls took less CPU time than this (a moving average, per size) runs on the event loop:
# it holds the loop no longer than parsing a few requests does
INLINE_SECONDS = 0.0003


class Batcher:
    def __init__(self, run, max_batch, max_wait, on_batch, explain=None, inline=False):
        self.run = run                  # run(list of items) -> list of results, on the worker thread
        self.inline = inline            # whether run may run on the event loop when cheap (see above)
        self.cost = {}                  # rows.bit_length() -> CPU seconds per call (moving average)
        self.explain = explain or (lambda e: e)     # a request's own error -> what its client gets
        self.max_batch, self.max_wait, self.on_batch = max_batch, max_wait, on_batch
        self.waiting = collections.deque()      # (item, future)
        self.arrived = None
        self.coming = 0                 # requests being read and checked, not yet submitted
        self.task = self.executor = self.loop = None

    def start(self):
        from apsi_lang.bigstack import big_stack_executor

        self.arrived = asyncio.Event()
        self.executor = big_stack_executor("apsi-predict")
        self.loop = asyncio.get_running_loop()
        self.task = self.loop.create_task(self._serve())

    async def stop(self):
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass
        self.executor.shutdown(wait=True)

    async def submit(self, item):
        future = self.loop.create_future()          # (the loop kept: asking for it is a getpid() call)
        self.waiting.append((item, future))
        self.arrived.set()
        return await future

    async def _serve(self):
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._gather(loop)
            live = [(item, f) for item, f in batch if not f.done()]     # (a client that left)
            if not live:
                continue
            rows = sum(item.n for item, _ in live)
            self.on_batch(rows)
            items = [i for i, _ in live]
            if not self.inline:
                outcomes = await loop.run_in_executor(self.executor, self._outcomes, items)
            elif self.cost.get(rows.bit_length(), INLINE_SECONDS) < INLINE_SECONDS:
                outcomes = self._timed(items, rows)
            else:
                outcomes = await loop.run_in_executor(self.executor, self._timed, items, rows)
            for (_, f), (ok, value) in zip(live, outcomes):
                if f.done():
                    continue
                if ok:
                    f.set_result(value)
                else:
                    f.set_exception(value)

    def _timed(self, items, rows):
        """_outcomes, noting the CPU time the call took on this thread (not the time it waited for the
        GIL or a core) for its size of batch."""
        start = time.thread_time()
        outcomes = self._outcomes(items)
        took, size = time.thread_time() - start, rows.bit_length()
        known = self.cost.get(size)
        self.cost[size] = took if known is None else 0.8 * known + 0.2 * took
        return outcomes

    def _outcomes(self, items):
        """[(True, result) or (False, error)] per item, on the worker thread: the whole batch in one
        call, and when that fails, each half again (see above)."""
        try:
            return [(True, r) for r in self.run(items)]
        except (Exception, SystemExit) as e:    # noqa: BLE001 (each request is told its own error)
            if len(items) == 1:
                return [(False, self.explain(e))]
        half = len(items) // 2
        return self._outcomes(items[:half]) + self._outcomes(items[half:])

    async def _gather(self, loop):
        while not self.waiting:
            self.arrived.clear()
            await self.arrived.wait()
        first = self.waiting.popleft()
        batch, rows, key = [first], first[0].n, first[0].key
        if first[0].alone:
            return batch
        deadline = loop.time() + self.max_wait
        while rows < self.max_batch:
            fits = self._take(key, self.max_batch - rows)
            if fits is not None:
                batch.append(fits)
                rows += fits[0].n
                continue
            remaining = deadline - loop.time()
            # (what waits does not fit; or nothing is on its way: send this one)
            if remaining <= 0 or self.waiting or not self.coming:
                break
            self.arrived.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self.arrived.wait()
            except TimeoutError:
                break
        return batch

    def _take(self, key, room):
        """The first waiting request of this kind that fits in `room` rows (taken off the queue)."""
        for i, (item, future) in enumerate(self.waiting):
            if item.key == key and not item.alone and item.n <= room:
                del self.waiting[i]
                return item, future
        return None
