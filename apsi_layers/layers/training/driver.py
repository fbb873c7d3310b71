"""The epoch loop both backends share: batches, histories, metrics, validation, early stopping,
checkpoints and resume, the epoch callback, progress, Ctrl-C and NaN stops.

A backend supplies a session (NumpySession in backends/numpy/loop.py, TorchSession in backends/torch/
loop.py; backends/registry.py finds the backend by name) that trains one
epoch over the index arrays it is given and reads and writes its state as NumPy arrays:

    train_epoch(epoch, batches, on_step) -> mean loss over the kept positions (NonFiniteError on NaN)
    val_loss() -> float                    outputs(data) -> [arrays]   (evaluation mode, raw outputs)
    leaves() / set_leaves(arrays)          parameters and running statistics, in tree order
    opt_state() / set_opt_state(steps, states)     the optimizer in nn's layout
    noise_state() / set_noise_state(meta, array)   the dropout/sampling stream
    current_lr(), set_lr(lr) (reduce_lr's new rate), steps, trained(), optimizer(), backend, device
    world, rank, writer (optional: a distributed session; only the writer shows progress and saves)

Everything else is decided here once, so the two backends cannot drift.
"""

import time
from typing import TYPE_CHECKING

import numpy as np

from apsi_lang import interactive
from apsi_lang.errors import ApsiError
from apsi_lang.values import Record
from apsi_layers.data import sources

from . import checkpoint as ckpt
from . import metrics as metric_fns
from . import midepoch, plateau, stopping
from .batches import epoch_batches, seeds
from .finite import NonFiniteError
from .progress import progress
from .session import Session

if TYPE_CHECKING:
    from .plan import FitPlan


class Run:
    """What the loop has recorded so far (all plain data, saved in checkpoints)."""

    def __init__(self):
        self.epoch = 0
        self.history, self.val_history = [], []
        self.metrics, self.val_metrics = {}, {}
        self.stop = stopping.Progress()
        self.best = None                  # the best epoch's leaves (early stopping's restore_best)
        self.epoch_leaves = None          # the leaves after the last finished epoch (see _keep)
        self.saved = None                 # the epoch the checkpoint file holds (None: not written yet)
        self.lrs = []                     # each epoch's learning rate (its last step's)
        self.plateau = plateau.State()    # reduce_lr's state
        self.saved_within = None          # (epoch, batches done) of a mid-epoch checkpoint

    def add(self, loss, val, m, vm):
        self.epoch += 1
        self.history.append(loss)
        if val is not None:
            self.val_history.append(val)
        for store, values in ((self.metrics, m), (self.val_metrics, vm)):
            for k, v in values.items():
                store.setdefault(k, []).append(v)


def fit_loop(plan: "FitPlan", session: Session) -> Record:
    t0 = time.perf_counter()
    run = Run()
    shuffle = np.random.default_rng(seeds(plan.seed)[0])
    skip = _resume(plan, session, run, shuffle) if plan.resume is not None else 0
    # distributed: each step takes batch_size rows on every rank, a global batch of batch_size × world
    size = plan.batch_size * getattr(session, "world", 1)
    writes = getattr(session, "writer", True)        # only rank 0 writes checkpoints
    steps = len(epoch_batches(plan.data.n, size, np.random.default_rng(0), plan.graph))
    # under `apsi launch` the ranks share the terminal: rank 0 (alone verbose) writes lines, as a
    # live bar's redraws erased what the other ranks printed between them, and drew the bar again
    show = progress(plan.verbose and writes, plan.epochs, steps, first=run.epoch + 1,
                    shared=getattr(session, "world", 1) > 1)
    stopped, note = None, None
    keep = plan.checkpoint is not None or interactive.active()
    run.epoch_leaves = session.leaves() if keep else None
    show.start()
    try:
        while run.epoch < plan.epochs:
            epoch = run.epoch + 1
            started = time.perf_counter()
            at_start = _jsonable(shuffle.bit_generator.state)
            batches = epoch_batches(plan.data.n, size, shuffle, plan.graph)[skip:]
            sources.announce(plan.data, midepoch.rank_rows(session, plan, batches), epoch)
            on_step = midepoch.stepper(plan, session, run, epoch, at_start, skip, steps, show.step,
                                       lambda within: _save(plan, session, run, shuffle, writes, within))
            skip = 0
            loss = session.train_epoch(epoch, batches, on_step)
            val = session.val_loss() if plan.val is not None else None
            m, vm = _metrics(plan, session)
            run.add(loss, val, m, vm)
            if keep:        # what a Ctrl-C or NaN later in the run falls back to
                run.epoch_leaves = session.leaves()
            show.epoch(epoch, loss, val, m, vm)
            logs = _logs(loss, val, m, vm, session, time.perf_counter() - started)
            run.lrs.append(logs["lr"])
            stop = _early_stop(plan, session, run, logs)
            _reduce_lr(plan, session, run, logs)
            if plan.csv_log is not None and writes:
                plateau.write_csv(plan.csv_log, run)
            if plan.checkpoint is not None:
                _save(plan, session, run, shuffle, writes)
            if plan.on_epoch is not None and _callback(plan.on_epoch, epoch, logs) == "stop":
                stopped = "callback"
                break
            if stop:
                stopped = "early"
                break
    except KeyboardInterrupt as e:
        if not interactive.active():
            show.close()                # the bars first, so the line below them is the last word
            if writes:                  # (rank 0 says it for every rank of a distributed fit)
                _say_where_to_resume(plan, run, e)
            raise
        stopped, note = "interrupted", f"fit: interrupted (Ctrl-C) during epoch {run.epoch + 1}"
        _back_to_epoch_end(plan, session, run)
    except NonFiniteError as e:
        if plan.checkpoint is None and not interactive.active():
            raise
        stopped, note = "nan", e.message
        _back_to_epoch_end(plan, session, run)
    except ApsiError as e:      # (a bad batch, a file changed): say what the checkpoint still holds
        if plan.checkpoint is not None and writes and run.saved is not None:
            e.message = f"{e.message}; {_saved(plan, run)} once that is fixed"
            e.args = (e.message,)
        raise
    finally:
        show.close()
        sources.close(plan.data, plan.val)
    if note is not None:
        import sys

        after = (f"; r.params are those after epoch {run.epoch}" if run.epoch else
                 "; no epoch finished: r.params are the parameters given")
        print(note + after, file=sys.stderr, flush=True)
    return _result(plan, session, run, stopped, time.perf_counter() - t0)


def _metrics(plan, session):
    """(training metrics, validation metrics): evaluation-mode outputs of the whole sets, only when
    metrics= asks for them (the extra forward pass costs about a third of an epoch)."""
    if not plan.metrics:
        return {}, {}
    m = metric_fns.compute(plan.metrics, plan.task, session.outputs(plan.data), plan.data,
                           plan.data.weights)
    if plan.val is None:
        return m, {}
    return m, metric_fns.compute(plan.metrics, plan.task, session.outputs(plan.val), plan.val,
                                 plan.val.weights)


def _logs(loss, val, m, vm, session, seconds):
    logs = {"loss": loss, **m}
    if val is not None:
        logs["val_loss"] = val
        logs.update({f"val_{k}": v for k, v in vm.items()})
    logs["lr"] = session.current_lr()
    logs["seconds"] = seconds
    return logs


def _early_stop(plan, session, run, logs):
    rule = plan.early_stopping
    if rule is None:
        return False
    improved, stop = stopping.update(rule, run.stop, run.epoch, logs)
    if improved and rule.restore_best:
        run.best = session.leaves()
    return stop


def _reduce_lr(plan, session, run, logs):
    if plan.reduce_lr is None:
        return
    lr = plateau.update(plan.reduce_lr, run.plateau, logs)
    if lr is not None:
        session.set_lr(lr)


def _callback(fn, epoch, logs):
    own = {k: v for k, v in logs.items() if k not in _PLAIN and not k.startswith("val_")}
    val = {k[4:]: v for k, v in logs.items() if k.startswith("val_") and k != "val_loss"}
    view = Record(loss=logs["loss"], val_loss=logs.get("val_loss"), lr=logs["lr"], seconds=logs["seconds"],
                  metrics=Record(**own), val_metrics=Record(**val))
    answer = fn(epoch, view)
    if answer is not None and answer != "stop":
        from apsi_lang.values import show

        raise ApsiError(f'fit: on_epoch returned {show(answer, True)}; return "stop" to stop training, or '
                        "nothing to go on")
    return answer


_PLAIN = ("loss", "val_loss", "lr", "seconds")


def _back_to_epoch_end(plan, session, run):
    """A stop inside an epoch (Ctrl-C, NaN) keeps the state of the last finished epoch."""
    if run.epoch_leaves is not None:
        session.set_leaves(run.epoch_leaves)


def _say_where_to_resume(plan, run, error):
    import sys

    from apsi_lang import signals

    if plan.checkpoint is None:
        return
    where = (f"no epoch finished, so {plan.checkpoint} was not written" if run.saved is None else
             _saved(plan, run))
    print(f"fit: {signals.describe(error)} during epoch {run.epoch + 1}; {where}", file=sys.stderr,
          flush=True)


def _saved(plan, run):
    at = (f"epoch {run.saved}" if run.saved_within is None else
          f"{run.saved_within[1]} steps of epoch {run.saved_within[0]}")
    return f'{plan.checkpoint} holds the run after {at}; continue with fit(…, resume="{plan.checkpoint}")'


# --- checkpoints --------------------------------------------------------------------------------

def signature(plan, backend):
    """The options a resumed run must share with the run that wrote the checkpoint."""
    from apsi_layers.nn.autograd import tree

    named = tree.named_leaves(plan.params) if tree.leaves(plan.params) else []
    opt = plan.opt
    return {"model": repr(plan.model), "names": [n for n, _ in named],
            "shapes": [list(np.shape(v.data)) for _, v in named], "n": plan.data.n,
            "batch_size": _global_batch(plan), "seed": plan.seed,
            "loss": plan.loss if isinstance(plan.loss, str) else getattr(plan.loss, "__name__", "fn"),
            "opt": [opt.name, {k: v for k, v in opt.hyper.items() if isinstance(v, int | float | bool)}],
            "backend": backend, "precision": plan.precision or _precision(backend),
            "val": None if plan.val is None else plan.val.n, "metrics": [n for n, _ in plan.metrics],
            "weights": _digest(plan.data.weights), "val_weights": _digest(plan.val and plan.val.weights),
            "task": plan.task, "reduce_lr": None if plan.reduce_lr is None else vars(plan.reduce_lr)}


def _precision(backend):
    """What the backend computes in when precision= is not given (a resume must compute alike)."""
    from apsi_layers.backends import registry

    return registry.find(backend).default_precision


def _digest(weights):
    """The sample weights as a short fingerprint (a resume with other weights is another run)."""
    if weights is None:
        return None
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(weights, dtype=np.float64).tobytes()).hexdigest()[:16]


def _global_batch(plan):
    """The rows of one step over all ranks: N processes with batch_size b train as one with b × N, so a
    checkpoint continues on any number of processes that keeps the product."""
    if not getattr(plan, "distributed", False):
        return plan.batch_size
    from apsi_layers.distributed import world_size

    return plan.batch_size * world_size()


def _save(plan, session, run, shuffle, writes, within=None):
    """Write the checkpoint (after an epoch, or inside one with `within`: midepoch.py)."""
    snap = _snapshot(plan, session, run, shuffle)       # on every rank: FSDP's gathers are collectives
    if within is not None:
        snap["meta"]["within"] = within
    snap["meta"]["ranks"] = midepoch.rank_states(session, within)
    if writes:
        ckpt.save(plan.checkpoint, snap)
    run.saved = run.epoch           # (on every rank: rank 0 has written it for all)
    run.saved_within = None


def _snapshot(plan, session, run, shuffle):
    steps, opt_states = session.opt_state()
    noise_meta, noise = session.noise_state()
    meta = dict(signature(plan, session.backend), format=ckpt.FORMAT, epoch=run.epoch, steps=steps,
                history=run.history, val_history=run.val_history, val_metrics=run.val_metrics,
                shuffle=_jsonable(shuffle.bit_generator.state),
                noise=noise_meta, stop=[run.stop.best, run.stop.best_epoch, run.stop.wait],
                opt_started=opt_states is not None, opt_leaves=len(opt_states or []))
    meta["metric_values"] = run.metrics
    meta["lrs"], meta["plateau"] = run.lrs, run.plateau.saved()
    return {"meta": meta, "leaves": session.leaves(), "opt": opt_states, "best": run.best, "noise": noise}


def _resume(plan, session, run, shuffle):
    snap = ckpt.load(plan.resume)
    meta = snap["meta"]
    ckpt.check_same_run(plan.resume, meta, signature(plan, session.backend))
    if meta["epoch"] > plan.epochs:
        raise ApsiError(f"fit: resume={plan.resume!r} holds {meta['epoch']} epochs, more than epochs="
                        f"{plan.epochs}; with resume=, epochs counts the whole run")
    for a, shape in zip(snap["leaves"], meta["shapes"], strict=True):
        if list(np.shape(a)) != shape or np.asarray(a).dtype.kind not in "biuf":
            raise ckpt.damaged(plan.resume)
    try:
        session.set_leaves(snap["leaves"])
        session.set_opt_state(int(meta["steps"]), snap["opt"])
        if not midepoch.resume_rank(meta, session):
            session.set_noise_state(meta["noise"], snap["noise"])
        shuffle.bit_generator.state = meta["shuffle"]
        run.epoch = int(meta["epoch"])
        run.history = [float(v) for v in meta["history"]]
        run.val_history = [float(v) for v in meta["val_history"]]
        run.metrics = {str(k): [float(x) for x in v] for k, v in meta["metric_values"].items()}
        run.val_metrics = {str(k): [float(x) for x in v] for k, v in meta["val_metrics"].items()}
        best, best_epoch, wait = meta["stop"]
        run.stop = stopping.Progress(None if best is None else float(best),
                                     None if best_epoch is None else int(best_epoch), int(wait))
        # (checkpoints from before reduce_lr have neither: their rates are unknown)
        run.lrs = [None if v is None else float(v) for v in meta.get("lrs", [None] * run.epoch)]
        run.plateau = plateau.restored(meta.get("plateau", [None, 0, 0, None]))
        if plan.reduce_lr is not None and run.plateau.lr is not None:
            session.set_lr(run.plateau.lr)
    except (TypeError, ValueError, KeyError, AttributeError, RuntimeError):
        raise ckpt.damaged(plan.resume) from None
    run.best = snap["best"]
    run.saved = run.epoch
    return midepoch.resume_within(meta, session, shuffle)


def _jsonable(state):
    """A NumPy bit generator's state (nested dicts of ints and strings) as JSON keeps it."""
    import json

    return json.loads(json.dumps(state, default=int))


# --- the result ---------------------------------------------------------------------------------

def _result(plan, session, run, stopped, seconds):
    rule = plan.early_stopping
    if rule is not None and rule.restore_best and run.best is not None and stopped != "nan":
        session.set_leaves(run.best)
    params = session.trained(check=stopped != "nan")
    opt = session.optimizer()
    if plan.reduce_lr is not None and run.plateau.lr is not None:
        opt.lr = run.plateau.lr            # reduce_lr's rate: opt=r.opt continues with it, as in Keras
    fields = dict(params=params, history=run.history, val_history=run.val_history,
                  metrics=metric_fns.as_record(run.metrics),
                  val_metrics=metric_fns.as_record(run.val_metrics), lr_history=list(run.lrs),
                  opt=opt, device=session.device, backend=session.backend,
                  steps=session.steps, seconds=seconds, epochs=run.epoch,
                  stopped=stopped, interrupted=stopped == "interrupted",
                  stopped_epoch=run.epoch if stopped in ("early", "callback") else None,
                  best_epoch=run.stop.best_epoch if rule is not None else None,
                  world_size=getattr(session, "world", 1), rank=getattr(session, "rank", 0))
    return Record(**fields)

