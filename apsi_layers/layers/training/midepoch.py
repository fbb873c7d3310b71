"""fit(..., checkpoint=..., checkpoint_every=STEPS): checkpoints inside an epoch, and resuming there.

A mid-epoch checkpoint is an ordinary checkpoint (checkpoint.py: the state after the last finished
epoch's bookkeeping, the parameters, optimizer and dropout stream as they are now) plus `within`:
how many of the epoch's batches are done, the shuffle stream as it was when the epoch began (so the
resumed run draws the same batch order and skips the batches done), and the session's running sums
of the epoch's loss. Resuming runs the rest of the epoch with the same batches, dropout draws and
sums: an interrupted and resumed run ends with the numbers of a run never interrupted.
"""


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
