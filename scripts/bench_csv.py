"""Reading a numeric CSV file: nn's load_csv (as a matrix and as="columns") and read_csv(as="columns")
against numpy.loadtxt (and pandas.read_csv when it is installed), each in its own process on the same
generated file (about 20 MB: 8 columns of %.10g numbers under a header). Prints seconds, the ratio
to numpy.loadtxt, each child's peak memory (resource.getrusage ru_maxrss, imports included) and how
far the peak rose above the memory in use after the imports (Linux's VmHWM, reset first), also as a
multiple of the file's size. Asserts nothing.

    python scripts/bench_csv.py [--mb 20] [--repeat 3] [--rows-too]

Each reader runs --repeat times (in a fresh process each time) and the best run counts: the machine
may be shared, and load only ever slows a run down. --rows-too also times read_csv's default rows of
records (slow and large by nature: one record per row).
Targets (issue 19): load_csv within 2x numpy.loadtxt's time; its memory after the imports <= 2x the
file's size.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Each child: imports first (their memory is the baseline), then one timed read of the file.
CHILD = r"""
import json, resource, sys, time
kind, path, folder = sys.argv[1:4]
import numpy as np
if kind.startswith("apsi"):
    from apsi_lang import permissions
    from apsi_lang.data_files import read_csv
    from apsi_layers import nn
    permissions.set_current(permissions.Grants(project_root=folder))
if kind == "pandas":
    import pandas as pd
np.ones(3).sum()

def hwm_kb():
    # Linux's peak resident size of this process image (ru_maxrss also counts the parent's size at
    # the fork, which Linux keeps across exec); None elsewhere
    try:
        with open("/proc/self/status") as f:
            return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
    except (OSError, StopIteration):
        return None

try:                                     # restart the peak at the memory in use after the imports
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
base = hwm_kb()
t = time.perf_counter()
if kind == "numpy.loadtxt":
    x = np.loadtxt(path, delimiter=",", skiprows=1)
elif kind == "pandas":
    x = pd.read_csv(path).to_numpy()
elif kind == "apsi load_csv":
    x = nn.load_csv(path)
elif kind == "apsi load_csv columns":
    x = nn.load_csv(path, **{"as": "columns"})
elif kind == "apsi read_csv columns":
    x = read_csv(path, **{"as": "columns"})
elif kind == "apsi read_csv rows":
    x = read_csv(path)
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
grew = None if base is None else hwm_kb() - base
print(json.dumps({"seconds": seconds, "peak_kb": peak, "after_imports_kb": grew}))
"""


MAKE = r"""
import sys
from pathlib import Path
import numpy as np
folder, mb = sys.argv[1], float(sys.argv[2])
path = Path(folder) / "numbers.csv"
"""


def make_file(folder, mb):
    """Written by a child, so this process stays small: a child's ru_maxrss starts at its parent's size."""
    subprocess.run([sys.executable, "-c", MAKE + _MAKE_BODY, folder, str(mb)], check=True)
    return Path(folder) / "numbers.csv"


_MAKE_BODY = """
rng = np.random.default_rng(0)
rows = 1000
for _ in range(2):          # a small file first, to learn the bytes per row
    a = rng.standard_normal((rows, 8)) * 1e3
    np.savetxt(path, a, delimiter=",", fmt="%.10g", header=",".join(f"c{i}" for i in range(8)),
               comments="")
    rows = int(rows * mb * 1e6 / path.stat().st_size)
"""


def run(kind, path, repeat):
    best = None
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        r = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), str(path.parent)],
                           capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:
            return {"error": r.stderr.strip().splitlines()[-1]}
        got = json.loads(r.stdout)
        best = got if best is None or got["seconds"] < best["seconds"] else best
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows-too", action="store_true")
    args = ap.parse_args()
    kinds = ["numpy.loadtxt", "apsi load_csv", "apsi load_csv columns", "apsi read_csv columns"]
    if args.rows_too:
        kinds.append("apsi read_csv rows")
    try:
        import pandas  # noqa: F401
        kinds.insert(1, "pandas")
    except ImportError:
        print("(pandas is not installed: not timed)")
    with tempfile.TemporaryDirectory() as folder:
        path = make_file(folder, args.mb)
        size = path.stat().st_size
        print(f"file: {size / 1e6:.1f} MB, load average {os.getloadavg()[0]:.2f}, best of {args.repeat}")
        print(f"{'reader':24} {'seconds':>8} {'x loadtxt':>10} {'peak MB':>8} {'after imports MB':>17} "
              f"{'x file':>7}")
        ref = None
        for kind in kinds:
            got = run(kind, path, args.repeat)
            if "error" in got:
                print(f"{kind:24} failed: {got['error']}")
                continue
            ref = ref or got["seconds"]
            grew = got["after_imports_kb"]
            grown = "n/a (no /proc)" if grew is None else f"{grew / 1024:17.1f} {grew * 1024 / size:7.2f}"
            print(f"{kind:24} {got['seconds']:8.3f} {got['seconds'] / ref:10.2f} "
                  f"{got['peak_kb'] / 1024:8.1f} {grown}")


if __name__ == "__main__":
    main()
