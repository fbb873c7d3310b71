"""Keep freed array memory for reuse (glibc only).

A training step allocates and frees the same large temporaries every step (activations, gathered
edge messages, their gradients). glibc serves blocks above its mmap threshold with a fresh mmap and
returns them to the kernel on free, so every step pays a page fault for each 4 KiB of them: on a GCN
step (2000 nodes, 12k edges, 64 wide) that was half the step's time. Raising the mmap and trim
thresholds makes freed blocks stay in the heap for the next step, as PyTorch's caching allocator
keeps its blocks. Memory stays flat over a fit: the same blocks are reused, not added to.
"""

import ctypes
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20          # blocks above this still get their own mapping
TRIM_THRESHOLD = 256 << 20         # free memory at the heap's top kept before it is given back

_done = False


def keep_freed_memory():
    """Raise glibc's thresholds once per process; anywhere else (macOS, musl, Windows) do nothing."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return
    _done = True
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):     # glibc's own symbol: not musl's mallopt
            return
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    except (OSError, AttributeError):
        pass
