"""fit's and predict's options, checked once into a plain record that any backend can run.

Everything a user can get wrong is caught here, before a single step runs: unknown options, names
of losses and optimizers, data and model shapes that disagree, labels out of range, empty data,
bad batch sizes. The backends (apsi_layers/backends/<name>/, found through backends/registry.py)
receive a FitPlan / PredictPlan and only loop. A plan is frozen once built: what a backend derives from
it (a rank's device, whether this process shows progress) is the backend's own setup value.
"""

from dataclasses import dataclass, field

from apsi_lang.errors import ApsiError
from apsi_layers.nn.train import optim

from ..base import Layer
from ..context import graph_arg
from ..norm import BatchNorm
from ..suggest import unknown
from . import options
from .checkpoint import every_arg, path_arg
from .data_checks import Data, check_targets, make_data, split_data, val_data
from .metrics import check_targets_fit, metrics_arg, task_arg
from .model_checks import arity, check_model, check_params
from .option_checks import (
    batch_size_arg,
    callback_arg,
    clip_arg,
    compile_arg,
    distributed_arg,
    loss_arg,
    optimizer_arg,
    positive,
    precision_arg,
    schedule_arg,
    seed_arg,
    verbose_arg,
)
from .plateau import csv_arg, plateau_arg
from .stopping import rule_arg
from .weights import training_weights

FIT_OPTIONS = options.NAMES          # the table in options.py
PREDICT_OPTIONS = ("graph", "mask", "batch_size", "backend", "device", "precision", "compile")


@dataclass(frozen=True)
class FitPlan:
    model: Layer
    params: object                 # the parameter tree as given (float64 nn tensors)
    data: Data
    loss: object                   # a name of losses.NAMES or a function fn(pred, target)
    opt: optim.Optimizer           # a fresh optimizer (no state from an earlier use)
    schedule: object               # fn(step) -> lr, or None
    epochs: int
    batch_size: int
    seed: int
    clip: float | None
    graph: tuple | None            # (edges int ndarray [2, E], node count) or None
    val: Data | None
    verbose: bool
    backend: str                   # a registry name; "auto" until fit/predict resolve it
    device: str | None = None
    precision: str | None = None
    compile: bool = False
    several_inputs: bool = False
    several_outputs: bool = False
    output_shape: object = None
    metrics: list = field(default_factory=list)     # [(name, fn or None)]: training/metrics.py
    early_stopping: object = None                   # a stopping.Rule, or None
    checkpoint: str | None = None                   # the file written after every epoch
    resume: str | None = None                       # the checkpoint to continue from
    on_epoch: object = None                         # fn(epoch, logs) called after every epoch
    distributed: bool = False                       # DDP over torchrun's processes (resolved from "auto")
    task: str | None = None                         # how outputs become classes (metrics.TASKS)
    reduce_lr: object = None                        # a plateau.Plateau rule, or None
    csv_log: str | None = None                      # the CSV file of every epoch's logs
    checkpoint_every: int | None = None             # also checkpoint every this many steps (mid-epoch)


@dataclass(frozen=True)
class PredictPlan:
    model: Layer
    params: object
    data: Data
    graph: tuple | None
    batch_size: int | None
    backend: str
    device: str | None = None
    precision: str | None = None
    compile: bool = False
    several_inputs: bool = False
    several_outputs: bool = False


def check_options(fn, options, valid):
    for key in options:
        if key not in valid:
            raise ApsiError(f"{fn}: {unknown('option', key, valid)}")


def fit_plan(model: Layer, params: object, inputs: object, targets: object, options: dict) -> FitPlan:
    check_options("fit", options, FIT_OPTIONS)
    check_model("fit", model)
    o = dict(options)
    loss = loss_arg(model, o.get("loss"))
    several_in, several_out = arity(model)
    data = make_data("fit", model, inputs, targets, o.get("mask"), several_in, several_out,
                 loss, need_targets=loss != "vae", seed=seed_arg(o.get("seed", 0)))
    if data.first is not None:
        o["batch_size"] = dataset_options(o)
    if loss == "vae" and data.targets is None:
        data.targets = [data.inputs[0]]            # a VAE reconstructs its inputs
    graph = graph_arg("fit", o["graph"], data.n) if o.get("graph") is not None else None
    if graph is not None and any(hasattr(a, "source") for a in data.inputs):
        raise ApsiError("fit: graph= trains on every node at once, so its inputs must be in memory; "
                        "load them with load_npy(path, mmap=false)")
    out_shape = check_params("fit", model, params, data)
    check_targets("fit", loss, data, out_shape, several_out)
    data.weights = training_weights(o, data, loss, several_out)
    val = val_data(model, params, o.get("val"), several_in, several_out, loss, out_shape, graph)
    if o.get("validation_split") is not None:
        data, val = split_data(o["validation_split"], data, val, graph)
    task = task_arg(o.get("task"), loss)
    metrics = metrics_arg(o.get("metrics"), loss, task, several_out)
    metrics += metrics_arg(o.get("weighted_metrics"), loss, task, several_out, weighted=True,
                           taken=[n for n, _ in metrics])
    check_targets_fit(metrics, task, data, out_shape)
    names = [n for n, _ in metrics]
    opt, schedule = optimizer_arg(o.get("opt")), schedule_arg(o.get("schedule"))
    plan = FitPlan(
        model=model, params=params, data=data, loss=loss, opt=opt, schedule=schedule,
        epochs=positive("fit", "epochs", o.get("epochs", 1)),
        batch_size=batch_size_arg("fit", o.get("batch_size", 32)), seed=seed_arg(o.get("seed", 0)),
        clip=clip_arg(o.get("clip")), graph=graph, val=val, verbose=verbose_arg(o.get("verbose")),
        backend=o.get("backend", "numpy"), device=o.get("device"),
        precision=precision_arg("fit", o.get("precision")), compile=compile_arg("fit", o.get("compile")),
        several_inputs=several_in, several_outputs=several_out,
        output_shape=out_shape, metrics=metrics,
        early_stopping=rule_arg(o.get("early_stopping"), val is not None, names), task=task,
        reduce_lr=plateau_arg(o.get("reduce_lr"), val is not None, names, opt, schedule),
        csv_log=csv_arg(o.get("csv_log")),
        checkpoint=path_arg("checkpoint", o.get("checkpoint")), resume=path_arg("resume", o.get("resume")),
        on_epoch=callback_arg(o.get("on_epoch")), distributed=distributed_arg(o.get("distributed"), graph),
        checkpoint_every=every_arg(o.get("checkpoint_every"), o.get("checkpoint")))
    _check_lone_batch(model, plan)
    return plan


def dataset_options(o):
    """A dataset's calls are its batches: batch_size and what needs all samples at once do not apply."""
    for key in ("batch_size", "validation_split", "sample_weight", "class_weight", "metrics",
                "weighted_metrics", "graph"):
        if o.get(key) is not None:
            raise ApsiError(f"fit: {key}= is not used with a dataset (each call of its function is one "
                            "batch); give the dataset's batches their size, or fit from arrays")
    return 1


def _check_lone_batch(model, plan):
    """Batch norm cannot normalise a mini-batch of one sample (its variance is 0): NumPy trained on it,
    dragging the running variance to 0, and torch stopped mid-training with PyTorch's text. Both refuse
    before training (a graph trains on all nodes at once, so it has no last batch). Distributed, the
    global batches hold batch_size × world rows, so a rank's share is one row exactly when N % batch_size
    is 1: the same rule."""
    n, size = plan.data.n, plan.batch_size
    if plan.graph is not None or n % size != 1 or not _has(model, BatchNorm):
        return
    raise ApsiError(f"fit: the last mini-batch would hold one sample (N = {n}, batch_size = {size}), and "
                    "batch_norm cannot normalise a single sample; choose a batch_size that does not leave "
                    f"one over (e.g. {size + 1}), or drop a sample")


def _has(model, kind):
    return isinstance(model, kind) or any(_has(child, kind) for child in model.layers)


def predict_plan(model: Layer, params: object, x: object, options: dict) -> PredictPlan:
    check_options("predict", options, PREDICT_OPTIONS)
    check_model("predict", model)
    several_in, several_out = arity(model)
    data = make_data("predict", model, x, None, options.get("mask"), several_in, several_out, None,
                 need_targets=False)
    graph = graph_arg("predict", options["graph"], data.n) if options.get("graph") is not None else None
    check_params("predict", model, params, data)
    bs = options.get("batch_size")
    return PredictPlan(model=model, params=params, data=data, graph=graph,
                       batch_size=None if bs is None else batch_size_arg("predict", bs),
                       backend=options.get("backend", "numpy"), device=options.get("device"),
                       precision=precision_arg("predict", options.get("precision")),
                       compile=compile_arg("predict", options.get("compile")),
                       several_inputs=several_in, several_outputs=several_out)
