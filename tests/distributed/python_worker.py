"""Two processes from Python (no torchrun): each joins a gloo group itself, then calls apsi_layers' fit
with distributed="auto", which trains in that group.

    python python_worker.py OUT_DIR     writes rank0.npy and rank1.npy (history, then the first weight)
"""

import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    from apsi_layers.layers import fit, mlp

    x = np.random.default_rng(1).normal(size=(30, 4))
    y = np.arange(30) % 3
    net = mlp(4, 3, hidden=[8])
    r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=2, batch_size=4, backend="torch",
            precision="fp64", distributed="auto", verbose=False)
    assert (r.rank, r.world_size) == (rank, world)
    np.save(os.path.join(out, f"rank{rank}.npy"),
            np.concatenate([r.history, np.asarray(r.params.dense.w.data).ravel()]))
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)          # gloo's threads can abort the interpreter's exit (see ddp_worker.py)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, free_port(), sys.argv[1]), nprocs=2, join=True)
