"""fit over a mapped file 4× larger than the memory the process may still take (issue 32): a child
process caps its data segment (RLIMIT_DATA: heap and private mappings) at what it uses plus CAP
bytes, shows the cap holds (reading the file whole fails), then trains over the file; its resident
memory, file pages included (the cap does not count them), peaks at most a quarter of the file."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.slow

CAP = 24 << 20

CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from apsi_lang import permissions
    from apsi_layers.data.memmap import load_npy
    from apsi_layers.layers import fit, mlp

    permissions.set_current(permissions.Grants(granted=frozenset(), project_root="."))
    x = load_npy("x.npy")
    y = np.zeros((len(x), 1))
    net = mlp(32, 1, hidden=[16])
    p = net.init(seed=0)
    fit(net, p, x[0:5000], y[0:5000], loss="mse", epochs=1, batch_size=1024)     # imports, threads
    used = int(next(l for l in open("/proc/self/status") if l.startswith("VmData")).split()[1]) * 1024
    CAP = int(sys.argv[1])
    cap = used + CAP
    resource.setrlimit(resource.RLIMIT_DATA, (cap, resource.RLIM_INFINITY))
    try:
        load_npy("x.npy", mmap=False)
        print("whole file read under the cap", flush=True)
        sys.exit(1)
    except MemoryError:
        print("reading the file whole: MemoryError", flush=True)
    def status(key):
        return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1]) * 1024
    reader = []
    def readers_memory(epoch, logs):    # the reader process's own pages (not those it shares with us)
        import os
        for t in os.listdir("/proc/self/task"):
            for pid in open(f"/proc/self/task/{t}/children").read().split():
                reader.append(sum(int(l.split()[1]) * 1024 for l in open(f"/proc/{pid}/smaps_rollup")
                                  if l.startswith(("Private_Clean", "Private_Dirty"))))
    open("/proc/self/clear_refs", "w").write("5")       # VmHWM: the peak from here (exact, the kernel's)
    before = status("VmHWM")
    r = fit(net, p, x, y, loss="mse", epochs=1, batch_size=2048, on_epoch=readers_memory)
    print("trained", r.steps, r.history[0] >= 0, flush=True)
    rise = status("VmHWM") - before
    print("peak rise <= 1/4 of the file", rise <= CAP, round(rise / 2**20, 1), flush=True)
    print("with the reader's", rise + sum(reader) <= CAP, len(reader), round(sum(reader) / 2**20, 1),
          flush=True)
""")


def test_fit_over_a_file_four_times_the_memory_cap(tmp_path):
    rows = 4 * CAP // (32 * 4)
    x = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype=np.float32, shape=(rows, 32))
    x[:] = np.random.default_rng(0).normal(size=(1, 32)).astype(np.float32)
    x.flush()
    del x
    r = subprocess.run([sys.executable, "-c", CHILD, str(CAP)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600, env={"MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1",
                                         "OPENBLAS_NUM_THREADS": "1", "APSI_READ_AHEAD": "process",
                                         "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["reading the file whole: MemoryError", f"trained {-(-rows // 2048)} True"], lines
    # the file's pages are read, not mapped: the rise is the fit's own memory (indices, targets, batches)
    assert lines[2].startswith("peak rise <= 1/4 of the file True"), lines
    # and with what the reader process holds of its own at the epoch's end
    assert lines[3].startswith("with the reader's True 1 "), lines
