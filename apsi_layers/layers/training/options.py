"""fit's options, one row each: the table the rest is read from or tested against.

    name      what fit(…, name=value) is called with (the order is the one messages list them in)
    default   the default as docs/layers.md's fit table shows it
    check     where the value is checked (plan.py builds the plan from these checks, in one place)
    backends  the backends that honour it (() = every backend)
    resumed   the keys of the checkpoint's signature (driver.signature) that hold it: a resume with
              another value is refused; () = free to change between the runs

plan.py's FIT_OPTIONS (unknown options, with a suggestion), fit's help text (its docstring) and the
checkpoint's "options that must not change" are read from here; tests/layers/test_fit_option_table.py
holds docs/layers.md's table and driver.signature against it.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    name: str
    default: str
    check: str
    summary: str
    backends: tuple = ()
    resumed: tuple = ()


_ROWS = (
    ("loss", 'required (`"vae"` for a vae)', "option_checks.loss_arg",
     "a loss name (mse, mae, huber, cross_entropy, bce, vae) or fn(pred, target)", (), "loss"),
    ("opt", '`"adam"`', "option_checks.optimizer_arg", "an nn optimizer or its name", (), "opt"),
    ("epochs", "1", "option_checks.positive", "passes over the data (the whole run's, with resume)"),
    ("batch_size", "32", "option_checks.batch_size_arg", "samples per step (per process)", (), "batch_size"),
    ("seed", "0", "option_checks.seed_arg", "fixes shuffling, dropout and sampling", (), "seed"),
    ("clip", "none", "option_checks.clip_arg", "global-norm gradient clipping"),
    ("schedule", "none", "option_checks.schedule_arg", "fn(step) => lr"),
    ("graph", "none", "context.graph_arg", "edges [2, E] for graph layers"),
    ("mask", "none", "data_checks.make_data", "which samples or steps count"),
    ("val", "none", "data_checks.val_data", "[x_val, y_val(, mask)] or {x, y, mask, sample_weight}", (),
     ("val", "val_weights")),
    ("verbose", "true on a terminal", "option_checks.verbose_arg",
     "progress bars (lines when piped; a live bar in notebooks)"),
    ("backend", '`"numpy"`', "backends.registry.choose", '"numpy", "torch" or "auto"', (), "backend"),
    ("device", '`"auto"`', "backends.registry.Backend.check_plan", '"cpu", "cuda", "cuda:1", "mps", "xpu"',
     ("torch",)),
    ("precision", '`"fp32"` on torch', "option_checks.precision_arg", "fp64, fp32, tf32, bf16, fp16",
     ("torch",), "precision"),
    ("compile", "false", "option_checks.compile_arg", "torch.compile the step", ("torch",)),
    ("metrics", "none", "metrics.metrics_arg", "accuracy, top5, mae, mse, rmse, r2 or fn NAME(pred, target)",
     (), "metrics"),
    ("validation_split", "none", "data_checks.split_data", "the last fraction of the samples as val", (),
     "val"),
    ("early_stopping", "none", "stopping.rule_arg", "a patience or {monitor, patience, min_delta, …}"),
    ("checkpoint", "none", "checkpoint.path_arg", "a file written after every epoch"),
    ("checkpoint_every", "none", "checkpoint.every_arg", "a checkpoint every this many steps too"),
    ("resume", "none", "checkpoint.path_arg", "a checkpoint to continue from"),
    ("on_epoch", "none", "option_checks.callback_arg", 'fn(epoch, logs); "stop" stops'),
    ("distributed", "false", "option_checks.distributed_arg", 'true, "auto" or "fsdp" (apsi launch)',
     ("torch",)),
    ("sample_weight", "none", "weights.training_weights", "one weight per sample", (), "weights"),
    ("class_weight", "none", "weights.training_weights", "{class: weight} or a list", (), "weights"),
    ("weighted_metrics", "none", "metrics.metrics_arg", "metrics weighed by the sample weights", (),
     "metrics"),
    ("task", "the loss's", "metrics.task_arg", "multiclass, binary, binary_probability, regression", (),
     "task"),
    ("reduce_lr", "none", "plateau.plateau_arg", "true or {monitor, factor, patience, …} (on a plateau)", (),
     "reduce_lr"),
    ("csv_log", "none", "plateau.csv_arg", "a CSV file of every epoch's logs"),
)

def _option(name, default, check, summary, backends=(), resumed=()):
    keys = (resumed,) if isinstance(resumed, str) else resumed
    return Option(name, default, check, summary, backends, keys)


FIT = tuple(_option(*row) for row in _ROWS)
NAMES = tuple(o.name for o in FIT)


def only_on(backend):
    """The options only `backend` honours."""
    return tuple(o.name for o in FIT if o.backends == (backend,))


def resumed():
    """{signature key: [options]}: what a resume must share with the run that wrote the checkpoint."""
    out = {}
    for o in FIT:
        for key in o.resumed:
            out.setdefault(key, []).append(o.name)
    return out


def help_text():
    """The options as fit's help lists them, one line each."""
    width = max(len(o.name) for o in FIT)
    lines = []
    for o in FIT:
        where = f" [{', '.join(o.backends)} only]" if o.backends else ""
        default = o.default.replace("`", "")
        lines.append(f"    {o.name:<{width}}  {o.summary}{where} (default: {default})")
    return "\n".join(lines)
