"""Whole `fit` calls as users run them: an Apsi program run by `apsi` that trains with
`fit(…, epochs=2, verbose=false)` after one warm-up epoch (NumPy backend, float64), against a
hand-written PyTorch float64 loop (torch.optim.Adam, randperm batches) with the same architecture and
data, each side in its own process. Prints seconds per epoch and the ratio per model, and the machine's
load (other work on the machine skews both sides). Asserts nothing.

    python scripts/bench_fit.py [--only mlp,cnn] [--threads N] [--repeat 3]

Each side runs --repeat times (alternating) and the best run counts: the machine is shared, and load
only ever slows a run down.

Keras 3 (model.fit on its torch backend) is timed too when it is installed.
Targets (issue 17): NumPy <= 1.2x PyTorch fp64 for mlp, lstm and transformer_lm, <= 1.5x for cnn.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LR = 1e-3

# name -> (model expression in Apsi, samples, batch, data shapes)
MODELS = {
    "mlp": dict(apsi="mlp(784, 10, hidden=[512, 512])", n=4096, batch=128, x=[784], classes=10),
    "cnn": dict(apsi="cnn_classifier([1, 28, 28], 10, filters=[16, 32])", n=1024, batch=64, x=[1, 28, 28],
                classes=10),
    "lstm": dict(apsi="lstm_classifier(32, 10, units=128)", n=1024, batch=64, x=[32, 32], classes=10),
    "transformer_lm": dict(apsi="transformer_lm(64, d=128, heads=4, layers=2, context=64)", n=512, batch=32,
                           tokens=64, vocab=64),
}
TARGETS = {"mlp": 1.2, "cnn": 1.5, "lstm": 1.2, "transformer_lm": 1.2}


def numpy_data(name):
    """(x, y) as NumPy arrays; the Apsi programs make the same with nn's randn/randint (same seeds)."""
    import numpy as np

    m = MODELS[name]
    if name == "transformer_lm":
        tokens = np.random.default_rng(0).integers(0, m["vocab"], size=[m["n"], m["tokens"] + 1])
        return tokens[:, :-1], tokens[:, 1:]
    x = np.random.default_rng(0).standard_normal([m["n"], *m["x"]])
    return x, np.random.default_rng(1).integers(0, m["classes"], size=[m["n"]])


def apsi_program(name):
    m = MODELS[name]
    if name == "transformer_lm":
        data = (f"let tokens = randint(0, {m['vocab']}, [{m['n']}, {m['tokens'] + 1}], seed=0)\n"
                f"let x = tokens[:, :{m['tokens']}]\nlet y = tokens[:, 1:]\n")
    else:
        dims = ", ".join(str(d) for d in [m["n"], *m["x"]])
        data = f"let x = randn({dims}, seed=0)\nlet y = randint(0, {m['classes']}, [{m['n']}], seed=1)\n"
    return "use layers\nuse nn\n" + data + textwrap.dedent(f"""\
        let net = {m['apsi']}
        fn train(params, epochs):
            return fit(net, params, x, y, loss="cross_entropy", opt=adam(lr={LR}), epochs=epochs,
                       batch_size={m['batch']}, verbose=false)
        let warm = train(net.init(seed=0), 1)
        let t = clock()
        train(warm.params, 2)
        print((clock() - t) / 2)
        """)


def apsi_command():
    beside = Path(sys.executable).parent / "apsi"     # the console script, not a shell shim
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "apsi"]


def time_apsi(name, env):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"bench_{name}.apsi"
        path.write_text(apsi_program(name))
        out = subprocess.run(apsi_command() + [str(path)], capture_output=True, text=True, env=env, cwd=tmp)
    if out.returncode:
        raise SystemExit(f"apsi {name} failed:\n{out.stderr}")
    return float(out.stdout.split()[-1])


# --- the PyTorch side: the same models written by hand ---------------------------------------------


def torch_model(name):
    import torch
    from torch import nn

    class Lstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(32, 128, batch_first=True)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.out(h[0])

    class Block(nn.Module):      # the layers' transformer_block: pre-norm, q/k/v/o, gelu (tanh) MLP
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, h):
            b, t, d = h.shape
            a = self.ln1(h)
            q, k, v = (f(a).reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for f in (self.q, self.k, self.v))
            att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = h + self.o(att.transpose(1, 2).reshape(b, t, d))
            return h + self.fc2(nn.functional.gelu(self.fc1(self.ln2(h)), approximate="tanh"))

    class Lm(nn.Module):
        def __init__(self, vocab=64, d=128, heads=4, layers=2, context=64):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.zeros(context, d))
            self.blocks = nn.Sequential(*(Block(d, heads) for _ in range(layers)))
            self.ln = nn.LayerNorm(d)
            self.out = nn.Linear(d, vocab)

        def forward(self, x):
            return self.out(self.ln(self.blocks(self.embed(x) + self.pos[:x.shape[1]])))

    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))
    return Lstm() if name == "lstm" else Lm()


def torch_worker(name):
    import time

    import torch

    torch.manual_seed(0)
    x, y = (torch.from_numpy(a) for a in numpy_data(name))
    model = torch_model(name).double()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    batch = MODELS[name]["batch"]

    def epoch():
        for idx in torch.randperm(len(x)).split(batch):
            opt.zero_grad(set_to_none=True)
            out = model(x[idx])
            torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y[idx].reshape(-1)).backward()
            opt.step()

    epoch()                                     # warm-up, as the Apsi side has
    t = time.perf_counter()
    for _ in range(2):
        epoch()
    print((time.perf_counter() - t) / 2)


def time_torch(name, env):
    out = subprocess.run([sys.executable, __file__, "--torch-worker", name], capture_output=True, text=True,
                         env=env)
    if out.returncode:
        raise SystemExit(f"torch {name} failed:\n{out.stderr}")
    return float(out.stdout.split()[-1])


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parent))     # scripts/machine.py, when loaded by path
    from machine import describe, load_line

    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--torch-worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_worker:
        return torch_worker(a.torch_worker)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if a.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(a.threads)
    try:
        import keras  # noqa: F401
        keras_note = "keras installed: its model.fit is not timed by this script yet"
    except ImportError:
        keras_note = "keras not installed"
    print(describe(torch=True))
    print(keras_note)
    print(f"{'model':16} {'apsi numpy s/epoch':>19} {'torch fp64 s/epoch':>19} {'ratio':>7} {'target':>7}")
    for name in a.only.split(","):
        apsi_t = torch_t = float("inf")
        for _ in range(a.repeat):
            apsi_t = min(apsi_t, time_apsi(name, env))
            torch_t = min(torch_t, time_torch(name, env))
        r = apsi_t / torch_t
        ok = "ok" if r <= TARGETS[name] else "OVER"
        print(f"{name:16} {apsi_t:19.3f} {torch_t:19.3f} {r:6.2f}x {TARGETS[name]:6.1f}x {ok}", flush=True)
    print(load_line("load after"))


if __name__ == "__main__":
    sys.exit(main())
