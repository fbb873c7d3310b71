"""`apsi launch --nproc N [PERMISSIONS] FILE [ARGS]...`: one Apsi program on N processes, for
fit(…, distributed=true) (docs/distributed.md).

A thin wrapper over PyTorch's launcher (torch.distributed.run, what `torchrun` runs), called in this
process so that its failures read as Apsi messages: each worker is `python -m apsi run PERMISSIONS FILE
ARGS`, its own confined Apsi process with the same permissions, told its place by torchrun's environment
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). One machine uses a free local port (torchrun's
--standalone); several machines meet at --rdzv-endpoint (the c10d rendezvous).
"""

import contextlib
import sys

import click

from . import options


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                 "help_option_names": ["-h", "--help"]})
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes on this machine (one per GPU, or CPU processes).")
@click.option("--nnodes", default="1", show_default=True, help="Machines taking part (or MIN:MAX).")
@click.option("--node-rank", type=click.IntRange(min=0), default=None,
              help="This machine's place among them (with a fixed master, not needed with --rdzv-endpoint).")
@click.option("--rdzv-endpoint", default=None, metavar="HOST:PORT",
              help="Where the machines meet (a host every machine reaches); needed for --nnodes > 1.")
@click.option("--rdzv-id", default="apsi", show_default=True, help="The job's name at the rendezvous.")
@options.permission_options
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def launch(ctx, nproc, nnodes, node_rank, rdzv_endpoint, rdzv_id, file, args, **perms):
    """Run FILE on --nproc processes (torchrun) for fit(…, distributed=true)."""
    from . import runner

    _, failed = runner._read_program(file, "launch")     # once here, not once per rank
    if failed:
        ctx.exit(failed)
    outer = (ctx.parent.obj or {}).get("perms", {}) if ctx.parent else {}
    merged = options.merge(outer, perms)
    if not merged.get("allow_python") and not merged.get("allow_all"):
        # fit on torch needs `python`; say so before starting N processes that would each refuse
        click.echo("apsi launch: distributed training runs fit on PyTorch, which needs permission "
                   "'python': add --allow-python (or grant it in a trusted apsi.toml)", err=True)
    if nnodes != "1" and rdzv_endpoint is None:
        raise click.UsageError("--nnodes above 1 needs --rdzv-endpoint HOST:PORT (a host every machine "
                               "reaches), the same on every machine")
    _check_nproc(nproc)
    if rdzv_endpoint is not None:
        _check_endpoint(rdzv_endpoint)
    argv = torchrun_args(nproc, nnodes, node_rank, rdzv_endpoint, rdzv_id)
    argv += ["-m", "apsi", "run", *options.to_args(merged), file, *args]
    ctx.exit(run_torchrun(argv, nproc))


PROCESSES_PER_CORE = 8         # beyond this, --nproc is a typo (10000 for 100), not a plan


def _check_nproc(nproc):
    """Refuse a process count no machine could mean: each rank is a whole Python process with PyTorch
    (hundreds of MB), and --nproc 100000 would start them until the machine gives out."""
    import os

    most = PROCESSES_PER_CORE * max(os.cpu_count() or 1, 1)
    if nproc > most:
        raise click.BadParameter(f"{nproc} processes on this machine of {os.cpu_count()} cores is more than "
                                 f"{PROCESSES_PER_CORE} per core ({most}); give one per GPU, or at most one "
                                 "per core on the CPU", param_hint="'--nproc'")


def _check_endpoint(endpoint):
    """HOST:PORT with a host that can be looked up, before any process starts: otherwise each rank
    retries the lookup for minutes, printing PyTorch's C++ warnings and stack frames."""
    import socket

    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit():
        host, port = endpoint, "29400"      # (a host alone: torchrun's default port)
    host = host.strip("[]")                 # ([::1]:29400)
    if not host or not 1 <= int(port) <= 65535:
        raise click.BadParameter(f"{endpoint!r} is not HOST:PORT (a port from 1 to 65535), like "
                                 "10.0.0.1:29400", param_hint="'--rdzv-endpoint'")
    try:
        socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise click.BadParameter(f"the host {host!r} cannot be found ({why}); give an address or name "
                                 "that every machine reaches, like 10.0.0.1:29400",
                                 param_hint="'--rdzv-endpoint'") from None


def torchrun_args(nproc, nnodes, node_rank, rdzv_endpoint, rdzv_id):
    argv = [f"--nproc-per-node={nproc}", f"--nnodes={nnodes}"]
    if rdzv_endpoint is None:
        argv.append("--standalone")              # one machine: a free local port, nothing to agree on
    else:
        argv += ["--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}", f"--rdzv-id={rdzv_id}"]
    if node_rank is not None:
        argv.append(f"--node-rank={node_rank}")
    return argv


def run_torchrun(argv, nproc):
    """Run PyTorch's launcher; 0 when every rank finished, else an exit code after one line naming the
    rank that failed (each rank has printed its own Apsi error above)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        click.echo("apsi launch: needs PyTorch, which is not installed in the Python that runs Apsi "
                   f"({sys.executable}): install it with `apsi pkg install torch-auto`", err=True)
        return 2
    import logging

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    # torchrun's own INFO/WARNING lines (OMP_NUM_THREADS, the rendezvous) are noise for Apsi users
    # (and its ERROR line on a failed worker: _report says it in one line)
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("torch.distributed"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    args = get_args_parser().parse_args(argv)
    try:
        with _ranks_die_with_this_process():
            run(args)
    except ChildFailedError as e:
        return _report(e)
    except (KeyboardInterrupt, SignalException) as e:
        # torchrun's agent turns SIGINT/SIGTERM into SignalException after stopping the workers
        import signal

        number = getattr(e, "sigval", signal.SIGINT)
        what = ("interrupted (Ctrl-C)" if number == signal.SIGINT
                else f"stopped ({signal.Signals(number).name})")
        click.echo(f"apsi launch: {what}; every rank was stopped", err=True)
        return 128 + int(number)
    except Exception as e:  # noqa: BLE001 - the rendezvous: a rank that never joins, a bad endpoint
        click.echo(f"apsi launch: the processes could not start or meet: {type(e).__name__}: "
                   f"{str(e).splitlines()[0] if str(e) else ''}", err=True)
        return 1
    return 0


@contextlib.contextmanager
def _ranks_die_with_this_process():
    """The ranks torchrun starts (in sessions of their own) end when this process does, even killed
    outright: each reads its parent's pid from the environment torchrun copies from ours and asks for
    PR_SET_PDEATHSIG (apsi_cli/launched.py). That signal follows the thread that started the rank:
    torchrun's agent starts them from the thread that calls it, here the main one, which lasts as long
    as the process."""
    import os

    from .launched import LAUNCHER_PID

    before = os.environ.get(LAUNCHER_PID)
    os.environ[LAUNCHER_PID] = str(os.getpid())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(LAUNCHER_PID, None)
        else:
            os.environ[LAUNCHER_PID] = before


def _report(error):
    """Which ranks failed, by exit code or signal. The launcher cannot tell which failed first (they are
    seen at the same check); a rank stopped by another's failure says so in its own message above, or
    was stopped by torchrun's SIGTERM before it noticed (code 143)."""
    failures = sorted(error.failures.items())               # keys: global ranks
    parts = []
    for rank, f in failures:
        how = f"exited with code {f.exitcode}" if f.exitcode >= 0 else f"was killed by signal {-f.exitcode}"
        parts.append(f"rank {rank} {how}")
    click.echo(f"apsi launch: {'; '.join(parts)} (the errors are above); every rank was stopped", err=True)
    # a rank the launcher stopped (SIGTERM, 143) did not fail on its own: exit with a code that did
    stopped = {128 + 15, 128 + 9, -15, -9}
    own = [f.exitcode for _, f in failures if f.exitcode not in stopped and 0 < f.exitcode < 256]
    return own[0] if own else 1
