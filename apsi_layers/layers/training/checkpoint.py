"""fit's `checkpoint=` and `resume=`: everything a run needs to continue exactly, in one file.

After every epoch fit writes (atomically, under the sandbox's write rules) a zip of NumPy arrays, as
save_params does, never a pickle:

    meta.npy              JSON as bytes: format, epoch, the options that must not change on resume
                          (model, parameter names and shapes, samples, batch size, seed, loss,
                          optimizer, backend), histories, stream positions, early stopping's state
    params/<i>.npy        the parameter tree's leaves in tree order (weights and running statistics)
    opt/<i>/<key>.npy     the optimizer's state per leaf (nn's layout on both backends)
    best/<i>.npy          the best epoch's leaves, when early stopping restores them
    noise.npy             the dropout/sampling stream (torch's generator state below fp64)

`fit(..., resume=path)` reads it back, checks that the run is the same run, and continues: 4 epochs
at once and 2 + resume 2 give the same numbers bit for bit.
"""

import json
import os

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.values import show

FORMAT = "apsi-checkpoint-1"
MAX_MB = 1 << 20          # a checkpoint is the user's own file: no cap beyond the disk's


def path_arg(option, value):
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ApsiError(f'fit: {option} must be a file name like "run.ckpt", not {show(value, True)}')
    return value


def every_arg(value, checkpoint):
    """checkpoint_every=STEPS: a checkpoint after every STEPS optimizer steps, inside epochs too."""
    if value is None:
        return None
    if type(value) is not int or value < 1:
        raise ApsiError(f"fit: checkpoint_every must be a number of steps >= 1, not {show(value, True)}")
    if checkpoint is None:
        raise ApsiError("fit: checkpoint_every= needs checkpoint=\"run.ckpt\" (the file it writes)")
    return value


def save(shown, snapshot):
    """Write `snapshot` (meta dict, leaves, opt states, best leaves, noise array) to the path."""
    from apsi_layers.nn.io.params_io import write_npz

    path = permissions.require("write", what=f'fit(checkpoint="{shown}")', path=shown)
    arrays = {"meta": np.frombuffer(json.dumps(snapshot["meta"]).encode("utf-8"), dtype=np.uint8)}
    for i, a in enumerate(snapshot["leaves"]):
        arrays[f"params/{i}"] = a
    for i, state in enumerate(snapshot["opt"] or []):
        for key, a in state.items():
            arrays[f"opt/{i}/{key}"] = np.asarray(a)
    for i, a in enumerate(snapshot.get("best") or []):
        arrays[f"best/{i}"] = a
    if snapshot.get("noise") is not None:
        arrays["noise"] = snapshot["noise"]
    write_npz(path, shown, f'fit(checkpoint="{shown}")', arrays, None)


def load(shown):
    """The snapshot written by save(), checked to be one."""
    from apsi_layers.nn.io.params_io import _read_npz

    path = permissions.require("read", what=f'fit(resume="{shown}")', path=shown)
    if not os.path.isfile(path):
        raise ApsiError(f"fit: resume={shown!r}: there is no such file (checkpoint= writes it)")
    try:
        entries = dict(_read_npz(path, MAX_MB << 20)[0])
        meta = json.loads(bytes(entries.pop("meta")).decode("utf-8"))
    except (ApsiError, KeyError, ValueError, UnicodeDecodeError):
        raise ApsiError(f"fit: resume={shown!r} is not a checkpoint written by fit(checkpoint=…)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ApsiError(f"fit: resume={shown!r} is not a checkpoint written by fit(checkpoint=…)")
    try:
        return _parts(meta, entries)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        raise damaged(shown) from None


def _parts(meta, entries):
    n = len(meta["names"])
    snap = {"meta": meta, "leaves": [entries[f"params/{i}"] for i in range(n)],
            "noise": entries.get("noise")}
    opt = [{} for _ in range(int(meta.get("opt_leaves", 0)))]
    for key, a in entries.items():
        if key.startswith("opt/"):
            _, i, name = key.split("/", 2)
            opt[int(i)][name] = a if a.ndim else float(a[()])
    snap["opt"] = opt if meta.get("opt_started") else None
    best = [entries[f"best/{i}"] for i in range(n) if f"best/{i}" in entries]
    snap["best"] = best if len(best) == n else None
    return snap


def damaged(shown):
    return ApsiError(f"fit: resume={shown!r}: the checkpoint is damaged (its parts do not fit together); "
                     "resume from another checkpoint or start a new fit")


def check_same_run(shown, meta, signature):
    """A resume must continue the same run: name the first option that differs."""
    for key, label in (("model", "the model"), ("names", "the parameter names"),
                       ("shapes", "the parameter shapes"), ("n", "the number of samples"),
                       ("batch_size", "the rows of one step (batch_size × processes)"), ("seed", "seed"),
                       ("loss", "the loss"),
                       ("opt", "the optimizer"), ("backend", "the backend"), ("precision", "precision"),
                       ("val", "the validation data's size"), ("metrics", "metrics"),
                       ("weights", "sample_weight/class_weight"), ("val_weights", "val's sample_weight"),
                       ("task", "task"), ("reduce_lr", "reduce_lr")):
        if meta.get(key) != signature.get(key):
            raise ApsiError(f"fit: resume={shown!r} was written by another run: {label} differs "
                            f"(checkpoint: {_short(meta.get(key))}, now: {_short(signature.get(key))}); "
                            "resume with the same model, data and options, or start a new fit")


def _short(value):
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
