"""The metrics of several worker processes, added up: a board in shared memory where each worker posts
its counters, so that GET /metrics, answered by whichever worker accepts the scrape, shows the whole
server's numbers.

The memory is an anonymous shared mapping made before the workers are forked (no file: the kernel's
confinement lets a confined program make none in /dev/shm). Each worker owns one slot and posts there,
about once a second, its counters as JSON with their length and CRC-32; a reader that catches a slot
half written (the CRC does not match) uses what it read there last. A worker that replaces a dead one
takes its slot and starts from what that one posted last, so that the server's counters never go
backwards. So the other workers' numbers in a scrape are up to a second old; the answering worker's
own are exact.
"""

import json
import struct
import zlib

SLOT = 1 << 16                      # bytes per worker (its counters: a few KB)
HEAD = struct.Struct("<II")         # length, CRC-32 of the JSON that follows


class Board:
    def __init__(self, slots):
        import mmap

        self.slots = slots
        self.memory = mmap.mmap(-1, slots * SLOT)      # (MAP_SHARED | MAP_ANONYMOUS: kept across fork)
        self.mine = None
        self.last = {}                  # slot -> the last state read whole from it

    def join(self, slot):
        """In a worker: take `slot`; the state a previous worker left there, or None."""
        self.mine = slot
        return self.read(slot)

    def post(self, state):
        data = json.dumps(state, separators=(",", ":")).encode()
        if HEAD.size + len(data) > SLOT:
            return                      # (cannot happen with bounded labels; the old post stays)
        base = self.mine * SLOT
        self.memory[base + HEAD.size:base + HEAD.size + len(data)] = data
        self.memory[base:base + HEAD.size] = HEAD.pack(len(data), zlib.crc32(data))

    def read(self, slot):
        """The state posted in `slot` (what was read there last when it is being written now)."""
        base = slot * SLOT
        length, crc = HEAD.unpack_from(self.memory, base)
        if 0 < length <= SLOT - HEAD.size:
            data = self.memory[base + HEAD.size:base + HEAD.size + length]
            if zlib.crc32(data) == crc:
                try:
                    self.last[slot] = json.loads(data)
                except ValueError:
                    pass
        return self.last.get(slot)

    def others(self):
        """The states the other workers posted."""
        return [s for i in range(self.slots) if i != self.mine and (s := self.read(i)) is not None]
