"""fit(..., checkpoint=..., checkpoint_every=STEPS): checkpoints inside an epoch, and resuming there.

A mid-epoch checkpoint is an ordinary checkpoint (checkpoint.py: the state after the last finished
epoch's bookkeeping, the parameters, optimizer and dropout stream as they are now) plus `within`:
how many of the epoch's batches are done, the shuffle stream as it was when the epoch began (so the
resumed run draws the same batch order and skips the batches done), and the session's running sums
of the epoch's loss. Resuming runs the rest of the epoch with the same batches, dropout draws and
sums: an interrupted and resumed run ends with the numbers of a run never interrupted. Distributed,
each rank's own dropout stream and sums are gathered into the checkpoint (rank_states) and each
rank takes its own back.
"""

import numpy as np


def stepper(plan, session, run, epoch, at_start, skip, count, inner, save):
    """on_step for one epoch: counts the epoch's batches and writes a checkpoint every
    checkpoint_every of them (not after the last: the epoch's own checkpoint follows)."""
    every = plan.checkpoint_every
    if every is None:
        return inner
    done = [skip]

    def on_step(value):
        inner(value)
        done[0] += 1
        k = done[0]
        if k < count and ((epoch - 1) * count + k) % every == 0:
            save({"steps": k, "epoch": epoch, "shuffle": at_start, "partial": session.partial_state()})
            run.saved_within = (epoch, k)
    return on_step


def resume_within(meta, session, shuffle):
    """The `within` of a mid-epoch checkpoint, its session sums and shuffle stream put back; returns
    how many batches of the epoch to skip (0 for an end-of-epoch checkpoint)."""
    within = meta.get("within")
    if not within:
        return 0
    shuffle.bit_generator.state = within["shuffle"]
    if not meta.get("ranks"):
        session.set_partial(within["partial"])
    return int(within["steps"])


def rank_rows(session, plan, batches):
    """What this process reads of each batch: its own rows on a rank of a distributed fit (as
    sharded.Shard.rows takes them), so the read-ahead reads nothing another rank needs."""
    world = getattr(session, "world", 1)
    if world == 1:
        return batches
    b, rank = plan.batch_size, session.rank
    return [idx[rank * b:(rank + 1) * b] for idx in batches]


def rank_states(session, within):
    """Distributed: every rank's own dropout stream (and, inside an epoch, its own running sums) for
    the checkpoint rank 0 writes; a collective, so every rank calls it. None on one process."""
    if getattr(session, "world", 1) == 1:
        return None
    meta, array = session.noise_state()
    mine = {"noise_meta": meta, "noise": None if array is None else array.tolist(),
            "partial": session.partial_state() if within is not None else None}
    every = [None] * session.world
    session.shard.dist.all_gather_object(every, mine)
    return every


def resume_rank(meta, session):
    """Put this rank's own stream (and sums) from a distributed checkpoint back; True when done."""
    ranks = meta.get("ranks")
    if not ranks or getattr(session, "world", 1) != len(ranks):
        return False
    mine = ranks[session.rank]
    session.set_noise_state(mine["noise_meta"], None if mine["noise"] is None else
                            np.array(mine["noise"], dtype=np.uint8))
    if mine["partial"] is not None:
        session.set_partial(mine["partial"])
    return True
