"""Benchmarks for `nn` (the NumPy autodiff backend). Prints a table of ratios; asserts nothing.

    python scripts/bench_nn.py [--repeat 20] [--rounds 3] [--threads N]

1. Gradient of a 3-layer MLP loss (784-512-512-10, batch 256, float64, softmax cross-entropy):
   apsi's autodiff against the same gradient written out by hand in NumPy (target: <= 1.25x), with
   PyTorch CPU float64 autograd beside it.
2. A chain of 200 small elementwise ops on 16-element tensors, forward + backward: per-op overhead
   (target: <= PyTorch's time).

Each side runs in its own subprocess: PyTorch's threads disturb OpenBLAS's when both live in one.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BATCH, SIZES, CLASSES = 256, (784, 512, 512, 10), 10
CHAIN_N, CHAIN_ROUNDS = 16, 50          # 50 rounds x 4 ops = 200 ops


def mlp_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0]))
    y = rng.integers(0, CLASSES, BATCH)
    ws = [rng.standard_normal((a, b)) * np.sqrt(2.0 / a) for a, b in zip(SIZES, SIZES[1:], strict=False)]
    bs = [np.zeros(b) for b in SIZES[1:]]
    return x, y, ws, bs


def mlp_apsi():
    from apsi_lang.values import Record
    from apsi_layers import nn

    x, y, ws, bs = mlp_data()
    x, y = nn.Tensor(x), nn.Tensor(y)
    params = [Record(w=nn.Tensor(w), b=nn.Tensor(b)) for w, b in zip(ws, bs, strict=True)]

    def loss(params):
        h = x
        for i, layer in enumerate(params):
            h = h @ layer.w + layer.b
            if i < len(params) - 1:
                h = nn.relu(h)
        return nn.cross_entropy(h, y)

    g = nn.grad(loss)
    return lambda: g(params)


def mlp_numpy():
    x, y, ws, bs = mlp_data()
    rows = np.arange(BATCH)

    def step():
        pre1 = x @ ws[0] + bs[0]
        h1 = np.maximum(pre1, 0)
        pre2 = h1 @ ws[1] + bs[1]
        h2 = np.maximum(pre2, 0)
        z = h2 @ ws[2] + bs[2]
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        dz = p
        dz[rows, y] -= 1.0
        dz /= BATCH
        dw3, db3 = h2.T @ dz, dz.sum(0)
        d2 = (dz @ ws[2].T) * (pre2 > 0)
        dw2, db2 = h1.T @ d2, d2.sum(0)
        d1 = (d2 @ ws[1].T) * (pre1 > 0)
        dw1, db1 = x.T @ d1, d1.sum(0)
        return dw1, db1, dw2, db2, dw3, db3
    return step


def mlp_torch():
    import torch

    x, y, ws, bs = mlp_data()
    x, y = torch.tensor(x), torch.tensor(y)
    params = [torch.tensor(a, requires_grad=True) for pair in zip(ws, bs, strict=True) for a in pair]

    def step():
        h = x
        for i in range(3):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < 2:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, y)
        return torch.autograd.grad(loss, params)
    return step


def chain_apsi():
    from apsi_layers import nn

    x0 = nn.Tensor(np.linspace(-1.0, 1.0, CHAIN_N))

    def f(x):
        y = x
        for _ in range(CHAIN_ROUNDS):
            y = nn.sigmoid(nn.tanh(y * 0.9 + x))
        return nn.sum(y)
    g = nn.grad(f)
    return lambda: g(x0)


def chain_torch():
    import torch

    x0 = torch.linspace(-1.0, 1.0, CHAIN_N, dtype=torch.float64, requires_grad=True)

    def step():
        y = x0
        for _ in range(CHAIN_ROUNDS):
            y = torch.sigmoid(torch.tanh(y * 0.9 + x0))
        return torch.autograd.grad(y.sum(), x0)
    return step


WORKERS = {"mlp-apsi": mlp_apsi, "mlp-numpy": mlp_numpy, "mlp-torch": mlp_torch,
           "chain-apsi": chain_apsi, "chain-torch": chain_torch}


def time_worker(name, repeat):
    """Best seconds per call of one benchmark body (in this process)."""
    fn = WORKERS[name]()
    inner = 1 if name.startswith("mlp") else 20
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return min(samples)                   # the least disturbed run: this machine may be shared


def measure(name, repeat, threads):
    cmd = [sys.executable, __file__, "--worker", name, "--repeat", str(repeat)]
    env = dict(os.environ)
    if threads:
        # Same thread count for OpenBLAS (NumPy) and OpenMP (torch): a fair fight on a busy machine.
        env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1])
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        return None, last
    return json.loads(out.stdout)["seconds"], None


def fmt(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:9.3f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of subprocesses")
    ap.add_argument("--threads", type=int, default=0, help="BLAS/OpenMP threads per side (0: default)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps({"seconds": time_worker(args.worker, args.repeat)}))
        return
    # Rounds alternate the sides, and each side keeps its best round, so a burst of load from
    # elsewhere on the machine does not land on one side only.
    t = dict.fromkeys(WORKERS)
    for _ in range(args.rounds):
        for name in WORKERS:
            seconds, err = measure(name, args.repeat, args.threads)
            if err:
                print(f"  ({name} skipped: {err})")
            elif t[name] is None or seconds < t[name]:
                t[name] = seconds

    def ratio(a, b):
        return "-" if t[a] is None or t[b] is None else f"{t[a] / t[b]:.2f}x"

    print(f"{'benchmark':44} {'apsi':>12} {'reference':>12} {'ratio':>7}  {'vs torch':>8}  target")
    print(f"{'MLP 784-512-512-10 grad, batch 256, float64':44} {fmt(t['mlp-apsi']):>12} "
          f"{fmt(t['mlp-numpy']):>12} {ratio('mlp-apsi', 'mlp-numpy'):>7}  "
          f"{ratio('mlp-apsi', 'mlp-torch'):>8}  <= 1.25x hand-written NumPy")
    print(f"{'  (hand-written NumPy vs torch)':44} {'':>12} {fmt(t['mlp-numpy']):>12} "
          f"{ratio('mlp-numpy', 'mlp-torch'):>7}")
    print(f"{'200-op elementwise chain, 16 elems, fwd+bwd':44} {fmt(t['chain-apsi']):>12} "
          f"{fmt(t['chain-torch']):>12} {ratio('chain-apsi', 'chain-torch'):>7}  "
          f"{ratio('chain-apsi', 'chain-torch'):>8}  <= 1.00x PyTorch")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
