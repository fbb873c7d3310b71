"""Issue 16: out of memory on either backend is one clear message with the hint that helps (lower
batch_size), not NumPy's _ArrayMemoryError or PyTorch's allocator text. Each run is a child process
whose address space is capped 1.5 GB above what it uses after the imports."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import resource, sys
    backend, hidden = sys.argv[1], int(sys.argv[2])
    import numpy as np
    from apsi_layers.layers import fit, mlp, predict
    if backend == "torch":
        import torch
        from apsi_layers.backends.torch import loop as _loaded  # noqa: F401
    size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (size + 1_500_000_000, size + 1_500_000_000))
    net = mlp(100, 2, hidden=[hidden])
    x, y = np.ones((2048, 100)), np.zeros(2048, dtype=int)
    fit(net, net.init(seed=0), x, y, loss="cross_entropy", batch_size=2048, verbose=False,
        backend=backend)
""")


@pytest.mark.parametrize("backend, hidden", [("numpy", 50_000),
                                             pytest.param("torch", 200_000, marks=pytest.mark.torch)])
def test_out_of_memory_names_batch_size(backend, hidden):
    if backend == "torch":
        pytest.importorskip("torch")
    p = subprocess.run([sys.executable, "-c", SCRIPT, backend, str(hidden)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last == ("apsi_lang.errors.ApsiError: fit: ran out of memory in main memory with batch_size=2048 "
                    "(2048 samples); lower batch_size (e.g. batch_size=1024), use a smaller model, or, on "
                    'torch, a lower precision (precision="bf16")'), p.stderr[-2000:]
