"""Apsi language benchmarks: ratios against CPython measured in the same run (never a timed test).

    python scripts/bench_lang.py [--quick]

Start-up: `apsi -e "print(1)"` against `python -c "print(1)"`, median of N runs (target ≤ 2×), after
one warm-up run, with bytecode caching on as in a normal install (pip writes .pyc files; a machine
with PYTHONDONTWRITEBYTECODE=1 would otherwise recompile Apsi's sources at every start).
Loops: each Apsi program against the same program in Python, both compiled once and executed in
this process, alternating the two; the best of several runs each (the least disturbed by other
work on the machine), target ≤ 1.3×. Each loop runs at least 0.5 s on either side (on a 2024 laptop
core), so start-up noise and timer resolution do not decide a ratio.
"""

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from apsi_lang import program

CASES = {
    "fib(35), recursive": (
        """
fn fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
let r = fib(35)
""", """
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
r = fib(35)
"""),
    "nested numeric loops": (
        """
fn work(n):
    let total = 0
    for i in range(n):
        for j in range(n):
            total += (i * j) % 7
    return total
let r = work(4500)
""", """
def work(n):
    total = 0
    for i in range(n):
        for j in range(n):
            total += (i * j) % 7
    return total
r = work(4500)
"""),
    "list building": (
        """
fn build(n):
    let xs = []
    for i in range(n):
        xs.append(i * 2 + 1)
    return xs
let r = 0
for k in range(15):
    r += len(build(1000000))
""", """
def build(n):
    xs = []
    for i in range(n):
        xs.append(i * 2 + 1)
    return xs
r = 0
for k in range(15):
    r += len(build(1000000))
"""),
    "string building": (
        """
fn build(n):
    let parts = []
    for i in range(n):
        parts.append(str(i))
    let s = ""
    for i in range(n):
        s += "ab"
    return ",".join(parts) + s
let r = 0
for k in range(4):
    r += len(build(1500000))
""", """
def build(n):
    parts = []
    for i in range(n):
        parts.append(str(i))
    s = ""
    for i in range(n):
        s += "ab"
    return ",".join(parts) + s
r = 0
for k in range(4):
    r += len(build(1500000))
"""),
    # f-strings interpolating numbers and text: CPython's own formatting when the value is known plain
    "f-string building": (
        """
fn build(n):
    let parts = []
    for i in range(n):
        parts.append(f"item{i}")
    let total = 0
    for i in range(n):
        let s = f"{i * 0.5}:{i}"
        total += len(s)
    return len(parts) + total
let r = build(1000000) + build(1000000)
""", """
def build(n):
    parts = []
    for i in range(n):
        parts.append(f"item{i}")
    total = 0
    for i in range(n):
        s = f"{i * 0.5}:{i}"
        total += len(s)
    return len(parts) + total
r = build(1000000) + build(1000000)
"""),
    # maps: a word count over a long text
    "word count (map)": (
        """
fn count(words):
    let counts = {:}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    let seen = 0
    for w in words:
        if w in counts:
            seen += counts[w]
    return [len(counts), seen]
let vocab = [f"w{i % 997}" for i in range(5000)]
let words = []
for k in range(1100):
    words.extend(vocab)
let r = count(words)
""", """
def count(words):
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    seen = 0
    for w in words:
        if w in counts:
            seen += counts[w]
    return [len(counts), seen]
vocab = [f"w{i % 997}" for i in range(5000)]
words = []
for k in range(1100):
    words.extend(vocab)
r = count(words)
"""),
}

# Records: build the points with a loop on both sides.
CASES["record field access"] = (
    """
fn walk(points, reps):
    let total = 0.0
    for k in range(reps):
        for p in points:
            total += p.x * p.y + p.z
    return total
let pts = []
for i in range(1000):
    pts.append({x: i, y: 2.0, z: 1})
let r = walk(pts, 8000)
""", """
from types import SimpleNamespace as Rec
def walk(points, reps):
    total = 0.0
    for k in range(reps):
        for p in points:
            total += p.x * p.y + p.z
    return total
pts = []
for i in range(1000):
    pts.append(Rec(x=i, y=2.0, z=1))
r = walk(pts, 8000)
""")

# The same kinds of loop at the top level of a program (module globals, not function locals).
TOP_LEVEL = {
    "top level: record fields": (
        """
let p = {x: 1.5, y: 2.0, z: 0.5}
let acc = 0.0
for i in range(6000000):
    acc += p.x * p.y - p.z
let r = acc
""", """
from types import SimpleNamespace as Rec
p = Rec(x=1.5, y=2.0, z=0.5)
acc = 0.0
for i in range(6000000):
    acc += p.x * p.y - p.z
r = acc
"""),
    "top level: records in a list": (
        """
let pts = []
for i in range(1000):
    pts.append({x: i, y: 2.0, z: 1})
let total = 0.0
for k in range(3000):
    for p in pts:
        total += p.x * p.y + p.z
let r = total
""", """
from types import SimpleNamespace as Rec
pts = []
for i in range(1000):
    pts.append(Rec(x=i, y=2.0, z=1))
total = 0.0
for k in range(3000):
    for p in pts:
        total += p.x * p.y + p.z
r = total
"""),
    "top level: nested numeric loops": (
        """
let total = 0
for i in range(3000):
    for j in range(3000):
        total += (i * j) % 7
let r = total
""", """
total = 0
for i in range(3000):
    for j in range(3000):
        total += (i * j) % 7
r = total
"""),
    # (no string `+=` here: at the top level CPython's in-place concatenation does not apply, on
    # either side, and the loop is quadratic)
    "top level: list building": (
        """
let xs = []
for i in range(4000000):
    xs.append(i * 2 + 1)
let r = len(xs)
""", """
xs = []
for i in range(4000000):
    xs.append(i * 2 + 1)
r = len(xs)
"""),
    "top level: word count (map)": (
        """
let vocab = [f"w{i % 997}" for i in range(5000)]
let counts = {:}
for k in range(600):
    for w in vocab:
        counts[w] = counts.get(w, 0) + 1
let r = len(counts)
""", """
vocab = [f"w{i % 997}" for i in range(5000)]
counts = {}
for k in range(600):
    for w in vocab:
        counts[w] = counts.get(w, 0) + 1
r = len(counts)
"""),
}
CASES.update(TOP_LEVEL)


def run_apsi(src):
    prog = program.compile_source(src, "<bench>")
    t = time.perf_counter()
    prog.run()
    return time.perf_counter() - t, prog.namespace["r"]


def run_python(code):
    ns = {"__name__": "bench"}
    t = time.perf_counter()
    exec(code, ns)
    return time.perf_counter() - t, ns["r"]


def compare(apsi_src, py_src, reps):
    code = compile(py_src, "<bench.py>", "exec")
    apsi_times, py_times = [], []
    for _ in range(reps):
        a, ra = run_apsi(apsi_src)
        p, rp = run_python(code)
        apsi_times.append(a)
        py_times.append(p)
    return min(apsi_times), ra, min(py_times), rp


def apsi_command():
    beside = Path(sys.executable).parent / "apsi"     # the console script, not a shell shim
    return [str(beside)] if beside.exists() else ([shutil.which("apsi")] if shutil.which("apsi")
                                                  else [sys.executable, "-m", "apsi"])


def startup_times(apsi_cmd, py_cmd, n=11):
    """Start-up as a normal install has it: bytecode cached (one warm-up run of each writes the .pyc
    files), then n runs alternating apsi and python so that load drifts hit both; the medians."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for cmd in (apsi_cmd, py_cmd):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env)
    times = {0: [], 1: []}
    for _ in range(n):
        for side, cmd in enumerate((apsi_cmd, py_cmd)):
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env)
            times[side].append(time.perf_counter() - t)
    return statistics.median(times[0]), statistics.median(times[1])


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parent))     # scripts/machine.py, when loaded by path
    from machine import describe, load_line

    quick = "--quick" in sys.argv
    print(describe())
    reps = 3 if quick else 7
    rows = []
    apsi_t, py_t = startup_times(apsi_command() + ["-e", "print(1)"], [sys.executable, "-c", "print(1)"])
    rows.append(("start-up: apsi -e \"print(1)\"", apsi_t, py_t, 2.0))
    for name, (apsi_src, py_src) in CASES.items():
        a, ra, p, rp = compare(apsi_src, py_src, reps)
        if ra != rp:
            raise SystemExit(f"{name}: results differ (apsi {ra!r}, python {rp!r})")
        rows.append((name, a, p, 1.3))
    print(f"{'benchmark':32} {'apsi':>10} {'python':>10} {'ratio':>7} {'target':>7}")
    for name, a, p, target in rows:
        ok = "ok" if a / p <= target else "OVER"
        print(f"{name:32} {a * 1e3:9.1f}ms {p * 1e3:9.1f}ms {a / p:6.2f}x {target:6.1f}x {ok}")
    print(load_line("load after"))


if __name__ == "__main__":
    main()
