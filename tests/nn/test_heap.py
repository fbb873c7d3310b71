"""nn keeps freed array memory for the next training step (glibc): no page faults per step."""

import subprocess
import sys

import pytest

PROBE = r"""
import resource, sys
import numpy as np
if sys.argv[1] == "nn":
    import apsi_layers.nn
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def step():                                     # a step's temporaries: 6, 1, 6, 12 and 6 MiB, then freed
    xs = [np.ones(n) for n in (800_000, 100_000, 800_000, 1_600_000, 800_000)]
    del xs
for _ in range(3):                              # warm up: the heap grows once
    step()
before = faults()
for _ in range(20):
    step()
print(faults() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator only")
def test_freed_arrays_are_reused_without_page_faults():
    def faults(mode):
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
        return int(out.stdout)

    plain, with_nn = faults("plain"), faults("nn")
    pages = 20 * 4_100_000 * 8 // 4096          # what the 20 steps touch
    assert with_nn < pages // 100, (with_nn, plain)   # nn's thresholds: the same heap blocks again
    assert plain > with_nn, (with_nn, plain)          # glibc's default maps and unmaps some of them
