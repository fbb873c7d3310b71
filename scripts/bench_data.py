"""Data larger than memory (issue 32): fit over memory-mapped .npy shards and dataset(count, fn).
Each measurement runs in its own child process on the same generated files. Prints ratios; asserts
nothing.

    python scripts/bench_data.py [--rows 400000] [--features 32] [--epochs 2] [--skip-torch]
                                 [--repeat 3] [--pairs 3] [--big-mb 1024 --big-dir /tmp]

1. fit (NumPy) over load_npy shards vs the same fit from the array in memory (the page cache warm:
   one untimed epoch first), --repeat pairs alternating: seconds per epoch and the ratio (target
   <= 1.15). Then, in a fresh child, the rise of the resident memory during the mapped fit (Linux
   VmHWM, reset after the imports and the model's init) as a share of the data plus the model
   (target <= 25%), and of its anonymous and file-page parts (RssAnon, RssFile, sampled every 2 ms).
   With --big-mb, the same over one file of that size (written in pieces, deleted after), the
   child's anonymous memory capped (RLIMIT_DATA) at a quarter of the file: the cgroup v1 of this
   machine belongs to what runs it, so the file pages are reported, not capped.
2. fit (torch, fp32, CPU) over the shards vs a hand-written torch.utils.data.DataLoader over the same
   file (np.load(mmap_mode="r"), a per-sample Dataset, shuffle=True, num_workers 0 and 2), the same
   model, optimizer, batch size and epochs: the ratio (target <= 1.0).
3. fit over dataset(count, fn) whose Apsi function computes for 1 ms per call (a loop calibrated to
   1 ms alone: a wait on the clock would pass while other threads run) vs the same batches from a
   function that returns at once, with workers=0 (a thread) and the default workers (processes),
   --pairs pairs alternating, each run its own child: the ratio 1 ms / 0 ms (1.0 when the
   read-ahead hides the call), and the CPU seconds per epoch of the program's process (the step and
   a read-ahead thread) and of its workers: what a call adds to the step's process (0 when the calls
   run elsewhere), which the machine's load does not blur as it blurs the wall times; and the time
   the step's process spent blocked waiting for its next batch (apsi_layers/data/waited.py), per
   step, and the part of it at epochs' first batches (drawn when the epoch starts: never made
   ahead). The model (--ds-hidden) makes a step longer than a call: no read-ahead hides a call
   slower than the step it runs beside.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMON = r"""
import json, os, sys, time
import numpy as np
from apsi_lang import permissions
permissions.set_current(permissions.Grants(granted=frozenset({"python"}), project_root=os.getcwd()))
from apsi_layers.data.memmap import load_npy
from apsi_layers.layers import fit, mlp
files = sorted(f for f in os.listdir(".") if f.startswith("x-"))
EPOCHS, BATCH, FEATURES = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
net = mlp(FEATURES, 1, hidden=[64])
p0 = net.init(seed=0)
y = np.load("y.npy")

def cpu():
    import resource
    return [u.ru_utime + u.ru_stime
            for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))]

def timed_cpu(x):
    # wall seconds per epoch, and CPU seconds per epoch of this process and of its children
    fit(net, p0, x, y, loss="mse", epochs=1, batch_size=BATCH)     # warm
    t, c = time.perf_counter(), cpu()
    fit(net, p0, x, y, loss="mse", epochs=EPOCHS, batch_size=BATCH)
    return [(time.perf_counter() - t) / EPOCHS] + [(b - a) / EPOCHS for a, b in zip(c, cpu())]

def timed(x, backend="numpy"):
    fit(net, p0, x, y, loss="mse", epochs=1, batch_size=BATCH, backend=backend)     # warm
    t = time.perf_counter()
    fit(net, p0, x, y, loss="mse", epochs=EPOCHS, batch_size=BATCH, backend=backend)
    return (time.perf_counter() - t) / EPOCHS
"""

CHILDREN = {
    "memory": "print(json.dumps(timed_cpu(np.concatenate([np.load(f) for f in files]))))",
    "mapped": "print(json.dumps(timed_cpu(load_npy(files))))",
    "rss": textwrap.dedent("""
        import resource, threading
        x = load_npy(files)
        fit(net, p0, x[0:1000], y[0:1000], loss="mse", epochs=1, batch_size=BATCH)   # imports, threads
        def status(key):
            line = next(l for l in open("/proc/self/status") if l.startswith(key))
            return int(line.split()[1]) * 1024
        cap = int(sys.argv[6])
        if cap:     # anonymous memory may grow by `cap` bytes at most from here (RLIMIT_DATA)
            resource.setrlimit(resource.RLIMIT_DATA, (status("VmData") + cap, resource.RLIM_INFINITY))
        open("/proc/self/clear_refs", "w").write("5")
        base, anon0, file0 = status("VmHWM"), status("RssAnon"), status("RssFile")
        peak, done = {"RssAnon": 0, "RssFile": 0, "reader": 0}, threading.Event()
        def reader():             # the reader process's own memory (not what it shares with us)
            total = 0
            for t in os.listdir("/proc/self/task"):
                for pid in open(f"/proc/self/task/{t}/children").read().split():
                    try:
                        total += sum(int(l.split()[1]) * 1024 for l in open(f"/proc/{pid}/smaps_rollup")
                                     if l.startswith(("Private_Clean", "Private_Dirty")))
                    except OSError:
                        pass
            return total
        def sample():             # the kernel keeps no peak of these: sample them
            while not done.wait(0.002):
                for k in ("RssAnon", "RssFile"):
                    peak[k] = max(peak[k], status(k))
                peak["reader"] = max(peak["reader"], reader())
        t = threading.Thread(target=sample)
        t.start()
        t0 = time.perf_counter()
        fit(net, p0, x, y, loss="mse", epochs=1, batch_size=BATCH)
        took = time.perf_counter() - t0
        done.set()
        t.join()
        print(json.dumps([status("VmHWM") - base, peak["RssAnon"] - anon0, peak["RssFile"] - file0, took,
                          peak["reader"]]))
    """),
    "torch_mapped": "print(json.dumps(timed(load_npy(files), 'torch')))",
    "loader": textwrap.dedent("""
        import torch
        torch.manual_seed(0)
        workers = int(sys.argv[6])
        class Rows(torch.utils.data.Dataset):
            def __init__(self):
                self.x, self.y = np.load("whole.npy", mmap_mode="r"), y
            def __len__(self):
                return len(self.x)
            def __getitem__(self, i):
                return torch.from_numpy(np.array(self.x[i])), torch.tensor(self.y[i], dtype=torch.float32)
        model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loader = torch.utils.data.DataLoader(Rows(), batch_size=BATCH, shuffle=True, num_workers=workers,
                                             persistent_workers=workers > 0)
        def epoch():
            for xb, yb in loader:
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                opt.step()
        epoch()
        t = time.perf_counter()
        for _ in range(EPOCHS):
            epoch()
        print(json.dumps((time.perf_counter() - t) / EPOCHS))
    """),
}

DATASET = """use layers
use nn
let x = load_npy("whole.npy")
let y = load_npy("y.npy", mmap=false)
let EPOCHS, B, MS, WORKERS = int(args[0]), int(args[1]), float(args[3]), int(args[4])
fn work(n):                # Apsi code computing (a wall-clock wait would pass while other threads run)
    let s = 0
    for k in range(n):
        s = s + k
    return s
fn per_call(ms):           # the count that takes `ms` alone (the fastest of a few tries: load slows it)
    let best = 1000000.0
    for t in range(5):
        let t0 = clock()
        work(100000)
        best = min(best, clock() - t0)
    return int(ms / 1000.0 / best * 100000)
let N = per_call(MS)
fn batch(i):
    work(N)
    return [x[i * B:(i + 1) * B], y[i * B:(i + 1) * B]]
let ds = dataset(len(x) // B, batch) if WORKERS < 0 else dataset(len(x) // B, batch, workers=WORKERS)
let net = mlp(x.shape[1], 1, hidden=[int(h) for h in args[2].split(",")])
let p = net.init(seed=0)
let r0 = fit(net, p, ds, loss="mse", epochs=1)
let t = clock()
let r = fit(net, p, ds, loss="mse", epochs=EPOCHS)
print((clock() - t) / EPOCHS, len(x) // B, ds.workers)
"""

# one setting of the dataset measure: the program's wall time per epoch, and the CPU seconds per
# epoch of this process (the step, and a read-ahead thread) and of its children (the workers)
DATASET_CHILD = r"""
import json, os, resource, sys
from apsi_lang import permissions, run_source
from apsi_layers.data import workers
from apsi_layers.data.waited import WAITED
args = sys.argv[1:]
if os.environ.get("BENCH_PLAIN_WORKERS"):     # (as before: not batch-scheduled, the default buffer)
    workers._yield_to_the_step = lambda: None
    workers._Room.hold = lambda self, size: None
before = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
run_source(open("ds.apsi").read(), "ds.apsi", args=args,
           grants=permissions.Grants(granted=frozenset({"python"}), project_root=os.getcwd()))
after = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
epochs = 1 + int(args[0])           # (the untimed epoch too: the rusage covers the whole program)
print(json.dumps([(u.ru_utime + u.ru_stime - v.ru_utime - v.ru_stime) / epochs
                  for u, v in zip(after, before)] + [WAITED.seconds / max(1, WAITED.batches),
                                                  WAITED.first / max(1, WAITED.batches),
                                                  WAITED.cpu / max(1, WAITED.batches)]))
"""


def child(folder, kind, args, extra=(), env=()):
    code = COMMON + CHILDREN[kind]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **dict(env)}
    out = subprocess.run([sys.executable, "-c", code, kind, *map(str, args), *map(str, extra)], cwd=folder,
                         capture_output=True, text=True, env=env, timeout=900)
    if out.returncode:
        sys.exit(f"{kind}: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_files(folder, rows, features):
    import numpy as np

    r = np.random.default_rng(0)
    x = r.normal(size=(rows, features)).astype(np.float32)
    np.save(folder / "whole.npy", x)
    for k, part in enumerate(np.array_split(x, 4)):
        np.save(folder / f"x-{k}.npy", part)
    np.save(folder / "y.npy", (x[:, :1] * 2 + x[:, 1:2]).astype(np.float32))
    return x.nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--pairs", type=int, default=3, help="dataset: (0 ms, 1 ms) pairs per setting")
    ap.add_argument("--only-dataset", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="(in memory, mapped) pairs, alternating")
    ap.add_argument("--big-mb", type=int, default=0, help="also fit over a file this large, capped at 1/4")
    ap.add_argument("--big-dir", default=None, help="where the big file is written (default: temp)")
    ap.add_argument("--ds-hidden", default="256,256", help="dataset: the model's hidden sizes")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))     # scripts/machine.py
    from machine import describe, load_line

    print(describe(torch=not a.skip_torch))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = make_files(folder, a.rows, a.features)
        args = (a.rows, a.epochs, a.batch, a.features)
        print(f"data {data / 2**20:.1f} MB ({a.rows} x {a.features} float32, 4 shards), batch {a.batch}, "
              f"{a.epochs} timed epochs, one thread per process")
        print("| measure | value | target |")
        print("|---|---|---|")
        if not a.only_dataset:
            arrays_rows(folder, a, data, args)
        if a.pairs:
            dataset_rows(folder, a)
    if a.big_mb:
        capped_row(a)
    print(load_line("load after"))


READERS = {"process": "a reader process", "thread": "a read-ahead thread"}
PROCESS = {"APSI_READ_AHEAD": "process"}       # the memory rows: the program's and its reader's


def best(runs):
    """The fastest run's s/epoch: what the machine's load added least to (timeit's estimate)."""
    return min(r[0] for r in runs)


def arrays_rows(folder, a, data, args):
    model = (a.features * 64 + 64 + 64 + 1) * 8
    runs = {"memory": [], **{k: [] for k in READERS}}
    for _ in range(a.repeat):           # the sides alternate: the machine's load hits each alike
        runs["memory"].append(child(folder, "memory", args))
        for how in READERS:
            runs[how].append(child(folder, "mapped", args, env={"APSI_READ_AHEAD": how}))
    for how, what in READERS.items():
        pairs = list(zip(runs["memory"], runs[how], strict=True))
        mem, mapped = sorted(pairs, key=lambda p: p[1][0] / p[0][0])[len(pairs) // 2]   # the median pair
        fast = best(runs["memory"]), best(runs[how])
        print(f"| NumPy s/epoch: in memory / mapped shards read by {what}; CPU s/epoch of the program "
              f"(and of its reader) | {mem[0]:.3f} / {mapped[0]:.3f} = {mapped[0] / mem[0]:.2f}x (the median "
              f"of {len(pairs)} pairs: {', '.join(f'{m[0] / i[0]:.2f}' for i, m in pairs)}); CPU "
              f"{mem[1]:.3f} / {mapped[1]:.3f} ({mapped[2]:.3f}); the fastest of each side: {fast[0]:.3f} / "
              f"{fast[1]:.3f} = {fast[1] / fast[0]:.2f}x | <= 1.15x |")
    rise, anon, mapped_file, _, reader = child(folder, "rss", args, (0,), PROCESS)
    rss_row(f"{data / 2**20:.1f} MB data, no cap", rise, anon, mapped_file, data + model, reader)
    if not a.skip_torch:
        ours = child(folder, "torch_mapped", args)
        for w in (0, 2):
            theirs = child(folder, "loader", args, (w,))
            print(f"| torch s/epoch: fit over shards / DataLoader num_workers={w} | {ours:.3f} / "
                  f"{theirs:.3f} = {ours / theirs:.2f}x | <= 1.0x |")


def rss_row(what, rise, anon, mapped_file, whole, reader):
    mb = [f"{v / 2**20:.1f}" for v in (rise, anon, mapped_file, reader)]
    share = [f"{100 * v / whole:.1f}%" for v in (rise, anon, mapped_file, reader)]
    print(f"| NumPy mapped fit ({what}): peak RSS rise all / anonymous / file pages, and the reader "
          f"process's own (private) memory, of data + model | {' / '.join(mb[:3])} MB; {mb[3]} MB of "
          f"{whole / 2**20:.1f} MB = {' / '.join(share[:3])}; {share[3]} | <= 25% |")


def capped_row(a):
    """The same fit over one file of --big-mb MB, its anonymous memory capped at a quarter of it; the
    file is written in pieces (never whole in memory) and deleted after."""
    import numpy as np

    with tempfile.TemporaryDirectory(dir=a.big_dir) as tmp:
        folder = Path(tmp)
        rows = a.big_mb * 2**20 // (4 * a.features)
        x = np.lib.format.open_memmap(folder / "x-0.npy", mode="w+", dtype=np.float32,
                                      shape=(rows, a.features))
        y = np.lib.format.open_memmap(folder / "y.npy", mode="w+", dtype=np.float32, shape=(rows, 1))
        r = np.random.default_rng(0)
        for start in range(0, rows, 1 << 20):
            part = r.normal(size=(min(1 << 20, rows - start), a.features)).astype(np.float32)
            x[start:start + len(part)] = part
            y[start:start + len(part)] = part[:, :1] * 2 + part[:, 1:2]
        x.flush()
        y.flush()
        data = x.nbytes
        del x, y
        cap = data // 4
        model = (a.features * 64 + 64 + 64 + 1) * 8
        rise, anon, mapped_file, took, reader = child(folder, "rss", (rows, 1, a.batch, a.features), (cap,),
                                                      PROCESS)
        rss_row(f"{data / 2**20:.0f} MB file, anonymous memory capped at {cap / 2**20:.0f} MB, "
                f"{took:.1f} s/epoch", rise, anon, mapped_file, data + model, reader)


def dataset_rows(folder, a):
    (folder / "ds.apsi").write_text(DATASET)
    runs = {}
    for _ in range(a.pairs):            # pairs alternating: the machine's load hits both sides
        for w, ms, plain in ((0, 0, ""), (0, 1, ""), (-1, 0, ""), (-1, 1, ""), (-1, 1, "1")):
            env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                   "BENCH_PLAIN_WORKERS": plain}
            out = subprocess.run([sys.executable, "-c", DATASET_CHILD, str(a.epochs), str(a.batch),
                                  a.ds_hidden, str(ms), str(w)], cwd=folder, capture_output=True,
                                 text=True, env=env, timeout=900)
            if out.returncode:
                sys.exit(out.stderr)
            lines = out.stdout.split("\n")
            wall, calls, workers = lines[-3].split()
            runs.setdefault((w, ms, plain), []).append((float(wall), *json.loads(lines[-2])))
    calls_n = int(calls)
    for w in (0, -1):
        pairs = list(zip(runs[w, 0, ""], runs[w, 1, ""], strict=True))
        ratios = [s[0] / f[0] for f, s in pairs]
        f, s = pairs[sorted(range(len(pairs)), key=ratios.__getitem__)[len(pairs) // 2]]     # the median
        how = f"workers={workers} (the default)" if w == -1 else "workers=0 (a thread)"
        print(f"| dataset, {how}, {calls_n} calls, hidden [{a.ds_hidden}]: s/epoch with a 0 ms / 1 ms "
              f"Apsi fn; CPU s/epoch of the program's process (and of the workers) | "
              f"{f[0]:.3f} / {s[0]:.3f} = {s[0] / f[0]:.2f}x ({', '.join(f'{r:.2f}' for r in ratios)}); "
              f"CPU {f[1]:.2f} ({f[2]:.2f}) / {s[1]:.2f} ({s[2]:.2f}): "
              f"{1000 * (s[1] - f[1]) / calls_n:.2f} ms a call in the step's process | 1.0x; 0 ms |")
        waited_row(f"dataset, {how}", runs[w, 0, ""], runs[w, 1, ""])
    waited_row(f"dataset, workers={workers} not batch-scheduled, default socket buffer (as before)",
               None, runs[-1, 1, "1"])


def waited_row(what, zero, one):
    """The step's wait for its batch, per step, (of which at epochs' first batches; CPU), each run."""
    def each(runs):
        ms = [[1000 * v for v in r[3:6]] for r in runs or []]
        return ", ".join(f"{w:.2f} ({f:.2f}; {c:.2f})" for w, f, c in ms) or "-"
    print(f"| {what}: ms the step waited for its batch per step (of which at epochs' first batches; the "
          f"CPU time of taking it), with a 0 ms / 1 ms Apsi fn, each run | {each(zero)} / {each(one)} | "
          "1 ms: about 0 |")


if __name__ == "__main__":
    main()
