"""Two processes from Python (no torchrun): each joins a gloo group itself, then calls apsi_layers' fit
with distributed="auto" (DDP) or "fsdp", which trains in that group.

    python python_worker.py OUT_DIR CASE[,CASE...]
        the cases one after another in the same group (one start-up of the two processes: suite time),
        each writing into OUT_DIR/CASE:
    auto, fsdp
        rank0.npy and rank1.npy (history, then the first weight), and sizes0.npy and sizes1.npy:
        per weight, the number of elements this rank's optimizer updates and of its Adam moment
    scalar
        fsdp with a custom layer whose weight is a single number: writes the error to error0.txt
"""

import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.optim.optimizer import register_optimizer_step_post_hook


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_sizes(opt):
    """Per parameter of an optimizer: (elements of the parameter, of its exp_avg) held by this rank."""
    def local(t):
        return (t.to_local() if hasattr(t, "to_local") else t).numel()
    params = opt.param_groups[0]["params"]
    return [[local(p) for p in params], [local(opt.state[p]["exp_avg"]) for p in params]]


def worker(rank, world, port, out, cases):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    seen = []
    register_optimizer_step_post_hook(lambda opt, *_: seen.append(local_sizes(opt)))
    x = np.random.default_rng(1).normal(size=(30, 4))
    for how in cases.split(","):
        folder = os.path.join(out, how)
        os.makedirs(folder, exist_ok=True)
        (scalar_weight if how == "scalar" else train)(rank, world, x, folder, how, seen)
        dist.barrier()
    dist.destroy_process_group()
    os._exit(0)          # gloo's threads can abort the interpreter's exit (see ddp_worker.py)


def train(rank, world, x, out, how, seen):
    from apsi_layers.layers import fit, mlp

    y = np.arange(30) % 3
    net = mlp(4, 3, hidden=[8])
    r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=2, batch_size=4, backend="torch",
            precision="fp64", distributed=how, verbose=False)
    assert (r.rank, r.world_size) == (rank, world)
    np.save(os.path.join(out, f"rank{rank}.npy"),
            np.concatenate([r.history, np.asarray(r.params.dense.w.data).ravel()]))
    np.save(os.path.join(out, f"sizes{rank}.npy"), np.array(seen[-1]))


def scalar_weight(rank, world, x, out, how, seen):
    from apsi_lang.errors import ApsiError
    from apsi_layers.layers import CustomLayer, fit, mlp, sequential

    class Scale(CustomLayer):
        kind = "scale"

        def params(self, rng, input_shape):
            return {"s": rng.full((), 2.0)}, input_shape

        def forward(self, params, x, ctx):
            return x * params.s

    net = sequential(mlp(4, 3, hidden=[8]), Scale())
    try:
        fit(net, net.init(seed=0), x, np.arange(30) % 3, loss="cross_entropy", epochs=1, batch_size=4,
            backend="torch", distributed="fsdp", verbose=False)
    except ApsiError as e:
        with open(os.path.join(out, f"error{rank}.txt"), "w") as f:
            f.write(e.message)


if __name__ == "__main__":
    cases = sys.argv[2] if len(sys.argv) > 2 else "auto"
    mp.spawn(worker, args=(2, free_port(), sys.argv[1], cases), nprocs=2, join=True)
