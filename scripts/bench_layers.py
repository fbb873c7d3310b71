"""Benchmarks for `use layers` on NumPy: one training step (forward, backward, Adam update) against
the same model written by hand in PyTorch on the CPU, float64, same batch and threads. Prints a table
of ratios; asserts nothing.

    python scripts/bench_layers.py [--steps 20] [--rounds 2] [--threads N] [--only mlp,cnn]

Models (each side in its own subprocess; the median step of at least --steps steps and at least 0.5 s of
timed work after warm-up, best of --rounds):
  mlp          784-512-512-10, batch 256                       target <= 1.5x torch, <= 1.25x NumPy
  cnn          conv16-pool-conv32-pool-dense on 1x28x28, b 64  target <= 2x torch
  lstm         LSTM(32 -> 128) over 32 steps + dense, b 64     target <= 2x torch
  transformer  2 pre-norm blocks, d 128, 4 heads, ctx 64, b 32  target <= 1.5x torch
  gcn          2 GCN layers, 2000 nodes, 10k edges, 64 wide    target <= 1.5x torch
  dense        a large MLP (1024 wide, batch 512): its GFLOP/s against this machine's float64 GEMM
               throughput measured in the same process (target >= 75%, issue 17)

The NumPy side is built with the layers library (apsi_layers.layers; before it is installed, the same
models written on the NumPy op set); the torch side is plain torch (nn.functional, torch.nn.LSTM,
scaled_dot_product_attention, index_add), the same architectures (the layers' transformer_lm block:
pre-norm, separate q/k/v/o projections, dropout after embedding, attention and MLP).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LR = 1e-3
MIN_WORK = 0.5          # seconds of timed steps each side runs at least (short steps are repeated)

# --- data shared by both sides ---------------------------------------------------------------------

SPECS = {
    "mlp": dict(batch=256, sizes=(784, 512, 512, 10)),
    "cnn": dict(batch=64, classes=10),
    "lstm": dict(batch=64, steps=32, features=32, hidden=128, classes=10),
    "transformer": dict(batch=32, vocab=64, d=128, heads=4, layers=2, context=64, dropout=0.1),
    "gcn": dict(nodes=2000, edges=10000, features=64, hidden=64, classes=8),
    "dense": dict(batch=512, sizes=(1024, 1024, 1024, 1024, 1024, 10)),
}


def data(name):
    """(inputs, integer targets) for model `name`, the same on both sides."""
    rng = np.random.default_rng(0)
    s = SPECS[name]
    if name in ("mlp", "dense"):
        return rng.standard_normal((s["batch"], s["sizes"][0])), rng.integers(0, s["sizes"][-1], s["batch"])
    if name == "cnn":
        return rng.standard_normal((s["batch"], 1, 28, 28)), rng.integers(0, s["classes"], s["batch"])
    if name == "lstm":
        return (rng.standard_normal((s["batch"], s["steps"], s["features"])),
                rng.integers(0, s["classes"], s["batch"]))
    if name == "transformer":
        tokens = rng.integers(0, s["vocab"], (s["batch"], s["context"] + 1))
        return tokens[:, :-1], tokens[:, 1:]
    x = rng.standard_normal((s["nodes"], s["features"]))
    return x, rng.integers(0, s["classes"], s["nodes"])


def graph_edges():
    """GCN's graph: random edges plus self-loops, with the symmetric normalisation per edge."""
    s = SPECS["gcn"]
    rng = np.random.default_rng(1)
    n = s["nodes"]
    src = np.concatenate([rng.integers(0, n, s["edges"]), np.arange(n)])
    dst = np.concatenate([rng.integers(0, n, s["edges"]), np.arange(n)])
    deg = np.bincount(dst, minlength=n).astype(float)
    return src, dst, 1.0 / np.sqrt(deg[src] * deg[dst])


def glorot(rng, fan_in, fan_out, shape):
    return rng.uniform(-1.0, 1.0, shape) * np.sqrt(6.0 / (fan_in + fan_out))


def weights(name):
    """The initial parameters as a flat list of arrays, in each model's order (torch layouts)."""
    rng = np.random.default_rng(2)
    s = SPECS[name]
    if name in ("mlp", "dense"):
        out = []
        for a, b in zip(s["sizes"], s["sizes"][1:]):
            out += [glorot(rng, a, b, (a, b)), np.zeros(b)]
        return out
    if name == "cnn":
        return [glorot(rng, 9, 144, (16, 1, 3, 3)), np.zeros(16), glorot(rng, 144, 288, (32, 16, 3, 3)),
                np.zeros(32), glorot(rng, 1568, 10, (1568, 10)), np.zeros(10)]
    if name == "lstm":
        h, f = s["hidden"], s["features"]
        k = 1.0 / np.sqrt(h)
        return [rng.uniform(-k, k, (4 * h, f)), rng.uniform(-k, k, (4 * h, h)), rng.uniform(-k, k, 4 * h),
                rng.uniform(-k, k, 4 * h), glorot(rng, h, s["classes"], (h, s["classes"])),
                np.zeros(s["classes"])]
    if name == "transformer":
        d, v = s["d"], s["vocab"]
        out = [rng.standard_normal((v, d)) * 0.02, rng.standard_normal((s["context"], d)) * 0.02]
        for _ in range(s["layers"]):
            out += [np.ones(d), np.zeros(d)]
            for _ in "qkvo":
                out += [glorot(rng, d, d, (d, d)), np.zeros(d)]
            out += [np.ones(d), np.zeros(d), glorot(rng, d, 4 * d, (d, 4 * d)), np.zeros(4 * d),
                    glorot(rng, 4 * d, d, (4 * d, d)), np.zeros(d)]
        return out + [np.ones(d), np.zeros(d), glorot(rng, d, v, (d, v)), np.zeros(v)]
    f, h, c = s["features"], s["hidden"], s["classes"]
    return [glorot(rng, f, h, (f, h)), np.zeros(h), glorot(rng, h, c, (h, c)), np.zeros(c)]


# --- the NumPy side: the models on the op set ------------------------------------------------------


def apsi_forward(name, ops, w, x, ctx):
    """The forward pass of model `name` on the op set, from the flat weight list w."""
    s = SPECS[name]
    if name in ("mlp", "dense"):
        h = x
        for i in range(0, len(w), 2):
            h = ops.dense(h, w[i], w[i + 1])
            if i + 2 < len(w):
                h = ops.relu(h)
        return h
    if name == "cnn":
        same = ((1, 1), (1, 1))
        h = ops.relu(ops.conv(x, w[0], w[1], (1, 1), same, (1, 1), 1))
        h = ops.max_pool(h, (2, 2), (2, 2), ((0, 0), (0, 0)))
        h = ops.relu(ops.conv(h, w[2], w[3], (1, 1), same, (1, 1), 1))
        h = ops.max_pool(h, (2, 2), (2, 2), ((0, 0), (0, 0)))
        return ops.dense(ops.reshape(h, (h.shape[0], -1)), w[4], w[5])
    if name == "lstm":
        zeros = ops.zeros((x.shape[0], s["hidden"]))
        _, h, _ = ops.lstm(x, zeros, zeros, w[0], w[1], w[2], w[3])
        return ops.dense(h, w[4], w[5])
    if name == "transformer":
        b, t = x.shape
        d, heads, rate = s["d"], s["heads"], s["dropout"]

        def split(z):
            return ops.transpose(ops.reshape(z, (b, t, heads, d // heads)), (0, 2, 1, 3))
        h = ops.dropout(ops.take(w[0], x, 0) + w[1][:t], rate, ctx)
        for layer in range(s["layers"]):
            p = w[2 + 16 * layer: 18 + 16 * layer]
            a = ops.layer_norm(h, p[0], p[1], 1e-5)
            q, k, v = (split(ops.dense(a, p[i], p[i + 1])) for i in (2, 4, 6))
            att = ops.reshape(ops.transpose(ops.attention(q, k, v, causal=True), (0, 2, 1, 3)), (b, t, d))
            h = h + ops.dropout(ops.dense(att, p[8], p[9]), rate, ctx)
            m = ops.layer_norm(h, p[10], p[11], 1e-5)
            m = ops.dense(ops.gelu(ops.dense(m, p[12], p[13])), p[14], p[15])
            h = h + ops.dropout(m, rate, ctx)
        h = ops.layer_norm(h, w[-4], w[-3], 1e-5)
        return ops.dense(h, w[-2], w[-1])
    src, dst, norm = ctx_graph(ops)
    h = x
    for i in (0, 2):
        h = ops.dense(h, w[i], None)
        h = ops.scatter_add(ops.take(h, src, 0) * norm, dst, s["nodes"]) + w[i + 1]
        if i == 0:
            h = ops.relu(h)
    return h


_GRAPH = {}


def ctx_graph(ops):
    if not _GRAPH:
        src, dst, norm = graph_edges()
        _GRAPH["g"] = (ops.indices(src), ops.indices(dst), ops.constant(norm[:, None]))
    return _GRAPH["g"]


VIA = {}


def layers_model(name, ops):
    """(forward(params, x), params) of model `name` built with the layers library (the same
    architecture as the torch side; initial values do not matter for timing), or None without it."""
    try:
        import apsi_layers.layers as L
    except ImportError:
        return None
    s = SPECS[name]
    graph = None
    if name in ("mlp", "dense"):
        sizes = s["sizes"]
        model = L.sequential(*[L.dense(n, activation="relu") for n in sizes[1:-1]], L.dense(sizes[-1]))
        shape = [sizes[0]]
    elif name == "cnn":
        model = L.sequential(L.conv2d(16, 3, padding="same", activation="relu"), L.max_pool2d(2),
                             L.conv2d(32, 3, padding="same", activation="relu"), L.max_pool2d(2),
                             L.flatten(), L.dense(s["classes"]))
        shape = [1, 28, 28]
    elif name == "lstm":
        model = L.sequential(L.lstm_layer(s["hidden"]), L.dense(s["classes"]))
        shape = [s["steps"], s["features"]]
    elif name == "transformer":
        model = L.transformer_lm(s["vocab"], d=s["d"], heads=s["heads"], layers=s["layers"],
                                 context=s["context"], dropout=s["dropout"])
        shape = [s["context"]]
    else:
        model = L.sequential(L.gcn_layer(s["hidden"], activation="relu"), L.gcn_layer(s["classes"]))
        shape = [s["features"]]
        rng = np.random.default_rng(1)
        edges = np.stack([rng.integers(0, s["nodes"], s["edges"]), rng.integers(0, s["nodes"], s["edges"])])
        graph = L.Graph(ops, edges, s["nodes"])
    params = model.init(seed=0, input_shape=shape)
    noise = ops.rng(0)

    def forward(p, x):
        return model.apply(p, x, L.Ctx(ops, training=True, rng=noise, graph=graph))
    return forward, params


def apsi_step(name):
    from apsi_layers import nn
    from apsi_layers.backends.numpy.ops import OPSET as ops

    x, y = data(name)
    x = ops.indices(x) if name == "transformer" else ops.constant(x)
    y = ops.indices(y)
    built = layers_model(name, ops)
    if built is None:                             # before the layers library: the models on the op set
        rng = ops.rng(0)
        params = [nn.Tensor(a) for a in weights(name)]
        built = (lambda w, x: apsi_forward(name, ops, w, x, rng)), params
    forward, params = built
    VIA["apsi"] = "op set" if isinstance(params, list) else "layers library"
    opt = nn.adam(lr=LR)

    def loss(w):
        return ops.softmax_cross_entropy(forward(w, x), y)

    vg = nn.value_and_grad(loss)

    def step():
        nonlocal params
        _, grads = vg(params)
        params = opt.step(params, grads)
    return step


# --- the PyTorch side, written by hand ---------------------------------------------------------------


def torch_step(name):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    s = SPECS[name]
    x, y = data(name)
    x = torch.tensor(x)
    y = torch.tensor(y)
    w = [torch.tensor(a, requires_grad=True) for a in weights(name)]
    params = list(w)
    if name == "lstm":
        lstm = torch.nn.LSTM(s["features"], s["hidden"], batch_first=True).double()
        with torch.no_grad():
            for p, a in zip((lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0), w[:4]):
                p.copy_(a)
        params = list(lstm.parameters()) + w[4:]
    if name == "gcn":
        src, dst, norm = (torch.tensor(a) for a in graph_edges())
        norm = norm[:, None]

    def forward():
        if name in ("mlp", "dense"):
            h = x
            for i in range(0, len(w), 2):
                h = h @ w[i] + w[i + 1]
                if i + 2 < len(w):
                    h = torch.relu(h)
            return h
        if name == "cnn":
            h = F.max_pool2d(torch.relu(F.conv2d(x, w[0], w[1], padding=1)), 2)
            h = F.max_pool2d(torch.relu(F.conv2d(h, w[2], w[3], padding=1)), 2)
            return h.reshape(h.shape[0], -1) @ w[4] + w[5]
        if name == "lstm":
            _, (h, _) = lstm(x)
            return h[0] @ w[4] + w[5]
        if name == "transformer":
            b, t = x.shape
            d, heads, rate = s["d"], s["heads"], s["dropout"]
            h = F.dropout(w[0][x] + w[1][:t], rate)
            for layer in range(s["layers"]):
                p = w[2 + 16 * layer: 18 + 16 * layer]
                a = F.layer_norm(h, (d,), p[0], p[1], 1e-5)
                q, k, v = ((a @ p[i] + p[i + 1]).reshape(b, t, heads, d // heads).transpose(1, 2)
                           for i in (2, 4, 6))
                att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
                h = h + F.dropout(att @ p[8] + p[9], rate)
                m = F.layer_norm(h, (d,), p[10], p[11], 1e-5)
                m = F.gelu(m @ p[12] + p[13], approximate="tanh") @ p[14] + p[15]
                h = h + F.dropout(m, rate)
            return F.layer_norm(h, (d,), w[-4], w[-3], 1e-5) @ w[-2] + w[-1]
        h = x
        for i in (0, 2):
            h = h @ w[i]
            h = torch.zeros_like(h).index_add_(0, dst, h[src] * norm) + w[i + 1]
            if i == 0:
                h = torch.relu(h)
        return h

    opt = torch.optim.Adam(params, lr=LR)

    def step():
        opt.zero_grad(set_to_none=True)
        out = forward()
        F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)).backward()
        opt.step()
    return step


# --- the floor: the MLP step by hand in NumPy ---------------------------------------------------------


def numpy_mlp_step():
    x, y = data("mlp")
    w = weights("mlp")
    m = [np.zeros_like(a) for a in w]
    v = [np.zeros_like(a) for a in w]
    rows = np.arange(len(y))
    t = [0]

    def step():
        pre1 = x @ w[0] + w[1]
        h1 = np.maximum(pre1, 0)
        pre2 = h1 @ w[2] + w[3]
        h2 = np.maximum(pre2, 0)
        z = h2 @ w[4] + w[5]
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[rows, y] -= 1.0
        p /= len(y)
        d2 = (p @ w[4].T) * (pre2 > 0)
        d1 = (d2 @ w[2].T) * (pre1 > 0)
        grads = [x.T @ d1, d1.sum(0), h1.T @ d2, d2.sum(0), h2.T @ p, p.sum(0)]
        t[0] += 1
        c1, c2 = 1 - 0.9 ** t[0], 1 - 0.999 ** t[0]
        for a, g, mi, vi in zip(w, grads, m, v):       # Adam, as torch writes it
            mi *= 0.9
            mi += 0.1 * g
            vi *= 0.999
            vi += 0.001 * g * g
            a -= (LR / c1) * mi / (np.sqrt(vi) / np.sqrt(c2) + 1e-8)
    return step


# --- GEMM throughput and the large dense model's FLOPs ----------------------------------------------------


def dense_flops():
    """Multiply-adds x2 of one step: forward, weight gradients, and input gradients past layer 1."""
    s = SPECS["dense"]
    pairs = list(zip(s["sizes"], s["sizes"][1:]))
    macs = sum(3 * a * b for a, b in pairs) - pairs[0][0] * pairs[0][1]
    return 2.0 * s["batch"] * macs


def gemm_seconds():
    """Seconds per float64 GEMM of the large model's main shape, best of several (a fresh product each)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 1024)), rng.standard_normal((1024, 1024))
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return min(times), 2.0 * 512 * 1024 * 1024


WORKERS = {"numpy-mlp": numpy_mlp_step}
for _m in SPECS:
    WORKERS[f"apsi-{_m}"] = (lambda m: lambda: apsi_step(m))(_m)
    if _m != "dense":
        WORKERS[f"torch-{_m}"] = (lambda m: lambda: torch_step(m))(_m)


def run_worker(name, steps):
    if name.startswith("torch"):
        import torch
        threads = os.environ.get("OMP_NUM_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
    step = WORKERS[name]()
    for _ in range(3):
        step()
    samples = []
    while len(samples) < steps or sum(samples) < MIN_WORK:     # >= `steps` and >= 0.5 s of work
        t0 = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t0)
    out = {"seconds": statistics.median(samples), "steps": len(samples), "work": sum(samples),
           "via": VIA.get("apsi")}
    if name == "apsi-dense":
        out["gemm"] = gemm_seconds()
    return out


def measure(name, steps, threads):
    cmd = [sys.executable, __file__, "--worker", name, "--steps", str(steps)]
    env = dict(os.environ)
    if threads:
        n = str(threads)
        env.update(OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n, MKL_NUM_THREADS=n)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        return None, (out.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(out.stdout), None


TARGETS = {"mlp": 1.5, "cnn": 2.0, "lstm": 2.0, "transformer": 1.5, "gcn": 1.5}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per process (the median counts)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; each side keeps its best")
    ap.add_argument("--threads", type=int, default=0, help="BLAS/OpenMP threads per side (0: default)")
    ap.add_argument("--only", default="", help="comma-separated models (default: all)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.worker, args.steps)))
        return
    models = [m for m in SPECS if not args.only or m in args.only.split(",")]
    names = [n for n in WORKERS if n.split("-", 1)[1] in models]
    best = {}
    for _ in range(args.rounds):
        for name in names:
            res, err = measure(name, args.steps, args.threads)
            if err:
                print(f"  ({name} failed: {err})")
            elif name not in best or res["seconds"] < best[name]["seconds"]:
                best[name] = res
    sec = {n: r["seconds"] for n, r in best.items()}

    def ratio(a, b):
        return (sec[a] / sec[b]) if a in sec and b in sec else None

    via = {r.get("via") for r in best.values()} - {None}
    counts = [r["steps"] for r in best.values()] or [0]
    work = [r["work"] for r in best.values()] or [0.0]
    print(f"threads: {args.threads or 'default'}; median step of {min(counts)}-{max(counts)} "
          f"steps per process (at least {args.steps} and {MIN_WORK} s of work; least work "
          f"{min(work):.2f} s), best of {args.rounds} rounds; NumPy side built with the "
          f"{', '.join(sorted(via)) or '-'}")
    print(f"{'model':12} {'numpy (layers)':>15} {'torch (hand)':>13} {'ratio':>7} {'target':>8}  status")
    for m in models:
        if m == "dense":
            continue
        r = ratio(f"apsi-{m}", f"torch-{m}")
        ok = "-" if r is None else ("met" if r <= TARGETS[m] else "NOT met")
        print(f"{m:12} {_ms(sec.get(f'apsi-{m}')):>15} {_ms(sec.get(f'torch-{m}')):>13} {_x(r):>7} "
              f"{'<= ' + str(TARGETS[m]) + 'x':>8}  {ok}")
    if "mlp" in models:
        r = ratio("apsi-mlp", "numpy-mlp")
        ok = "-" if r is None else ("met" if r <= 1.25 else "NOT met")
        print(f"{'mlp':12} {_ms(sec.get('apsi-mlp')):>15} {_ms(sec.get('numpy-mlp')):>13} {_x(r):>7} "
              f"{'<= 1.25x':>8}  {ok}  (against the same step by hand in NumPy)")
    if "apsi-dense" in best:
        gemm_s, gemm_flop = best["apsi-dense"]["gemm"]
        achieved = dense_flops() / sec["apsi-dense"] / 1e9
        peak = gemm_flop / gemm_s / 1e9
        share = achieved / peak
        print(f"large dense: {achieved:.1f} GFLOP/s per training step; float64 GEMM on this machine "
              f"{peak:.1f} GFLOP/s; {share:.0%} of it "
              f"(target >= 75%: {'met' if share >= 0.75 else 'NOT met'})")


def _ms(s):
    return "-" if s is None else f"{s * 1e3:.2f} ms"


def _x(r):
    return "-" if r is None else f"{r:.2f}x"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
