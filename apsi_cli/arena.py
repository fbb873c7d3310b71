"""One malloc arena for the whole process (glibc only).

Apsi programs run on their own thread (apsi_lang/bigstack.py), and glibc gives a new thread its own
arena: heaps of 64 MiB at most, each unmapped as soon as it empties. The large temporaries of a
training step (columns, activations, their gradients) therefore came back as fresh pages on every
step, page faults included, whatever apsi_layers/nn/autograd/heap.py asks of the main heap: `fit` ran about
15% slower under `apsi` than the same call from Python. With a single arena the program's thread
allocates from the main heap, where freed blocks stay for the next step. The call must come before
that thread's first allocation, which picks its arena.
"""

import sys

_M_ARENA_MAX = -8


def use_one_arena():
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        if hasattr(libc, "gnu_get_libc_version"):          # glibc's own symbol: not musl's mallopt
            libc.mallopt(_M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass
