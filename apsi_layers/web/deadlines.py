"""Request time limits for the predict route, kept by one sweeper instead of a timer per request.

asyncio.timeout arms a timer on the loop's heap when a request starts and again for each stage,
and disarms it when the stage ends: under load that bookkeeping cost about a tenth of the event loop's
time per request. Here a request only notes its deadline in a dict; a task wakes every TICK seconds and
cancels the requests past theirs, so a limit is kept to within TICK. The route tells its own
cancellation from any other (a server stopping) by `expired`.
"""

import asyncio

TICK = 0.25


class Limit:
    __slots__ = ("task", "until", "stage", "expired")

    def __init__(self, task, until, stage):
        self.task, self.until, self.stage, self.expired = task, until, stage, False


class Deadlines:
    def __init__(self, seconds):
        self.seconds = seconds
        self.open = {}              # id(limit) -> limit
        self.sweeper = self.loop = None

    def start(self):
        self.loop = asyncio.get_running_loop()
        self.sweeper = self.loop.create_task(self._sweep())

    async def stop(self):
        self.sweeper.cancel()
        try:
            await self.sweeper
        except asyncio.CancelledError:
            pass

    def begin(self, stage):
        """A limit of `seconds` from now for the running task."""
        # (with the loop given, current_task does not ask for the running loop: a getpid() call)
        limit = Limit(asyncio.current_task(self.loop), self.loop.time() + self.seconds, stage)
        self.open[id(limit)] = limit
        return limit

    def next(self, limit, stage):
        """The same task's next stage, with `seconds` of its own."""
        limit.until, limit.stage = self.loop.time() + self.seconds, stage

    def end(self, limit):
        self.open.pop(id(limit), None)
        if limit.expired:
            limit.task.uncancel()        # (the cancellation was this limit's, and it has been handled)

    async def _sweep(self):
        while True:
            await asyncio.sleep(TICK)
            now = self.loop.time()
            late = [limit for limit in self.open.values() if limit.until <= now and not limit.expired]
            for limit in late:
                limit.expired = True
                limit.task.cancel()
