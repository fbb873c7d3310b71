"""fit(…, distributed=true) on 1 and 2 CPU processes (gloo on loopback, 1 thread each): samples per
second of training, so the engine's overhead (one gradient all-reduce per step, a process per rank) is
visible. The same global batch on both sides (2 processes take batch_size / 2 each), so both compute
the same training. Each run is an Apsi program started by `apsi run` / `apsi launch`; the time is the
fit's own (r.seconds, after a warm-up fit), not the processes' start. Asserts nothing.

    python scripts/bench_distributed.py [--model mlp|wide] [--n 8192] [--batch 256] [--epochs 2]
                                        [--fsdp]    (the 2 processes shard the weights: distributed="fsdp")

On a machine with fewer than 2 free cores the 2-process figure shows contention, not the engine.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"mlp": "mlp(32, 10, hidden=[128, 128])", "wide": "mlp(256, 10, hidden=[1024, 1024])"}

PROGRAM = """use nn
use layers
let net = {model}
let how = "{how}" if world_size() > 1 else "auto"
let x = randn([{n}, {features}], seed=1)
let y = randint(0, 10, [{n}], seed=2)
let warm = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=1, batch_size={batch},
               backend="torch", distributed=how, verbose=false)
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs={epochs}, batch_size={batch},
            backend="torch", distributed=how, verbose=false)
if rank() == 0:
    print(r.seconds)
"""


def run(folder, launch, batch, args):
    (folder / "bench.apsi").write_text(PROGRAM.format(batch=batch, **args))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    head = ["launch", "--nproc", "2"] if launch else ["run"]
    out = subprocess.run([sys.executable, "-m", "apsi", *head, "--allow-python", "bench.apsi"], cwd=folder,
                         env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"bench_distributed: the run failed:\n{out.stderr}")
    return float(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp")
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=256, help="the global batch (samples per step)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--fsdp", action="store_true", help='shard the weights too (distributed="fsdp")')
    a = ap.parse_args()
    features = int(MODELS[a.model].split("(")[1].split(",")[0])
    args = dict(model=MODELS[a.model], n=a.n, features=features, epochs=a.epochs,
                how="fsdp" if a.fsdp else "auto")
    print(f"model {a.model}: {MODELS[a.model]}, {a.n} samples, global batch {a.batch}, {a.epochs} epochs, "
          f"{'FSDP' if a.fsdp else 'DDP'}, 1 thread per process; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        one = run(Path(tmp), False, a.batch, args)
        two = run(Path(tmp), True, a.batch // 2, args)
    samples = a.n * a.epochs
    print(f"1 process:   {samples / one:10.0f} samples/s  ({one:.2f} s)")
    print(f"2 processes: {samples / two:10.0f} samples/s  ({two:.2f} s)  speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
