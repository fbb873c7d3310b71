"""Two CPU processes train one ApsiModule under DistributedDataParallel (gloo); used by test_module.py.

    python ddp_worker.py OUT_DIR     writes rank0.npy, rank1.npy (final weights) and start.npy
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
    from apsi_layers.backends.torch.module import torch_module
    from apsi_layers.layers import mlp

    net = mlp(8, 3, hidden=[16])
    m = torch.nn.parallel.DistributedDataParallel(torch_module(net, net.init(seed=0)))
    if rank == 0:
        np.save(os.path.join(out, "start.npy"), m.module.weights[0].detach().numpy())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)                 # each rank sees different data
    for _ in range(5):
        x = torch.randn(16, 8, generator=g)
        y = torch.randint(0, 3, (16,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    np.save(os.path.join(out, f"rank{rank}.npy"), m.module.weights[0].detach().numpy())
    dist.barrier()
    dist.destroy_process_group()
    # The work is done and saved. Leave without the interpreter's exit: with PyTorch 2.13, gloo's threads
    # sometimes outlive destroy_process_group, and C++'s exit-time destructors then abort the process
    # ("terminate called without an active exception", SIGABRT: about one run in ten here).
    os._exit(0)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, free_port(), sys.argv[1]), nprocs=2, join=True)
