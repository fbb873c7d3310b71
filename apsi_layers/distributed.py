"""fit on several processes: torch.distributed under torchrun (`apsi launch`), data-parallel (DDP).

This module knows where a process stands (its rank and the world's size) without importing torch:
under torchrun the launcher's environment says so (RANK, WORLD_SIZE), and once fit has joined the
process group, torch.distributed does. save_params and fit's checkpoints ask `writer()` so that only
rank 0 writes; the torch backend (backends/torch/sharded.py) does the training.
"""

import os
import sys

from apsi_lang.errors import ApsiError

# what torchrun sets for every worker; the process group reads them (init_method "env://")
LAUNCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _group():
    """torch.distributed when this process has joined a group, else None (torch is not imported)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def rank():
    """This process's rank: 0 on a single process."""
    dist = _group()
    return dist.get_rank() if dist is not None else _env_int("RANK", 0)


def world_size():
    """How many processes train together: 1 on a single process."""
    dist = _group()
    return dist.get_world_size() if dist is not None else _env_int("WORLD_SIZE", 1)


def local_rank():
    return _env_int("LOCAL_RANK", 0)


def launched():
    """True when torchrun (or `apsi launch`) started this process as one of several, or a Python caller
    has already joined a process group of several."""
    return world_size() > 1


def writer():
    """Only rank 0 writes files that every rank would write alike (save_params, checkpoints)."""
    return rank() == 0


def resolve(value):
    """fit's distributed= option after checking: True, False (auto decided by the launch); "fsdp" is
    distributed, as True."""
    if value == "auto":
        return launched()
    return bool(value)


def join(device, fsdp=False):
    """Join torchrun's process group for training on `device` (a torch.device): gloo on the CPU, NCCL on
    CUDA. Returns torch.distributed. Joining twice (a second fit) reuses the group. `fsdp`: the
    message names the option as the program wrote it."""
    import torch.distributed as dist

    if dist.is_initialized():
        return dist
    missing = [k for k in LAUNCH_ENV if k not in os.environ]
    if missing:
        how, alone = (('"fsdp"', 'distributed="fsdp" if world_size() > 1 else false') if fsdp else
                      ("true", 'distributed="auto"'))
        raise ApsiError(f"fit: distributed={how} needs a launch by `apsi launch --nproc N FILE` or torchrun "
                        f"(this process lacks {', '.join(missing)}); use {alone} to train on one process "
                        "when not launched that way")
    backend = "nccl" if device.type == "cuda" else "gloo"
    where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    extra = {"device_id": device} if device.type == "cuda" else {}
    seconds = _timeout()
    if seconds is not None:
        import datetime

        extra["timeout"] = datetime.timedelta(seconds=seconds)
    try:
        dist.init_process_group(backend, **extra)
    except (RuntimeError, ValueError) as e:
        raise ApsiError(f"fit: rank {rank()} of {world_size()} could not meet the other ranks at the "
                        f"rendezvous {where} ({backend}): {_first_line(e).rstrip('.')}; check that every "
                        "rank was started and that the address is reachable") from None
    import atexit

    atexit.register(leave)
    return dist


def _timeout():
    """APSI_DIST_TIMEOUT (seconds): how long a rank waits for the others, at the rendezvous and at each
    exchange; PyTorch's default (30 minutes on gloo, 10 on NCCL) when unset."""
    text = os.environ.get("APSI_DIST_TIMEOUT", "")
    try:
        return float(text) if text and float(text) > 0 else None
    except ValueError:
        raise ApsiError(f"APSI_DIST_TIMEOUT must be a number of seconds, not {text!r}") from None


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def leave():
    """Leave the process group (at the end of `apsi run`). Safe to call when none was joined."""
    dist = _group()
    if dist is not None:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - a group that is already broken has nothing left to close
            pass


def exit_now(code):
    """End a process that joined a group: gloo's threads can outlive destroy_process_group, and C++'s
    exit-time destructors then abort the process (SIGABRT, about one run in ten with PyTorch 2.13), so
    the process flushes its output and leaves without the interpreter's exit. No-op otherwise."""
    if _group() is None:
        return
    import atexit

    from apsi_lang import signals

    # the launcher's SIGTERM to the ranks still running may arrive now: it would raise Terminated
    # inside an exit function (a Python traceback), for a process that is ending anyway
    signals.ignore_now()
    atexit._run_exitfuncs()          # what the interpreter's exit would run (leave() among them)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 1)
