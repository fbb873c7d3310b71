"""What `use layers` binds for whole models: predict_labels, predict_proba, model_from_checkpoint,
export_onnx (save_model and load_model are in model_file.py)."""

import os

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show


def model_parts(fn, m):
    """(net, params, labels) of a model record (load_model's, or any record with net and params)."""
    if not (isinstance(m, Record) and hasattr(m, "net") and hasattr(m, "params")):
        raise ApsiError(f"{fn}: expects a model record with net and params (what load_model returns), "
                        f"not {show(m, True)[:80]}")
    return m.net, m.params, getattr(m, "labels", None)


def _gives_probabilities(net):
    """True when the model's last layer already ends in softmax or sigmoid."""
    from apsi_layers.layers.compose import Sequential

    last = net
    while isinstance(last, Sequential):
        last = last.pairs[-1][1]
    act = getattr(last, "given", None) if last.kind == "activation" else last.settings.get("activation")
    return act in ("softmax", "sigmoid")


def probabilities(net, y):
    """Class probabilities from the model's outputs (NumPy array): softmax over the last axis, a
    sigmoid for one output, unchanged when the model ends in softmax or sigmoid itself."""
    y = np.asarray(y, dtype=np.float64)
    if _gives_probabilities(net):
        p = y
    elif y.shape[-1] == 1:
        p = 1.0 / (1.0 + np.exp(-y))
    else:
        z = np.exp(y - y.max(axis=-1, keepdims=True))
        p = z / z.sum(axis=-1, keepdims=True)
    if p.shape[-1] == 1:            # one output: [p(not), p(yes)] for the two labels
        p = np.concatenate([1.0 - p, p], axis=-1)
    return p


def label_names(fn, labels, p):
    if labels is None:
        raise ApsiError(f"{fn}: the model has no labels; save it with save_model(path, net, params, "
                        "labels=[\"cat\", \"dog\", …]) (one per class)")
    if len(labels) != p.shape[-1]:
        raise ApsiError(f"{fn}: the model gives {p.shape[-1]} classes but has {len(labels)} labels; save it "
                        f"again with one label per class (save_model(path, net, params, labels=[…]))")
    return [labels[i] for i in np.argmax(p, axis=-1).ravel().tolist()]


def labelled(net, labels, outputs):
    """{"labels": [...], "probabilities": [[...]]} for a served batch's output rows."""
    p = probabilities(net, np.asarray(outputs, dtype=np.float64))
    return {"labels": label_names("serve_model", labels, p), "probabilities": p.tolist()}


def _outputs(fn, m, x, options):
    from apsi_layers.layers.training.api import predict

    net, params, labels = model_parts(fn, m)
    y = predict(net, params, x, **options)
    if isinstance(y, list):
        raise ApsiError(f"{fn}: the model has several outputs; use predict for it")
    return net, labels, np.asarray(y.data)


def predict_proba(m, x, **options):
    """Class probabilities [N, classes] of a classifier (softmax of its logits)."""
    from apsi_layers.nn.autograd.tensor import Tensor

    net, _, y = _outputs("predict_proba", m, x, options)
    return Tensor(probabilities(net, y))


def predict_labels(m, x, **options):
    """The most likely class's label for each input row (the model's `labels`)."""
    net, labels, y = _outputs("predict_labels", m, x, options)
    p = probabilities(net, y)
    label_names("predict_labels", labels, p)        # (checks first: no labels, a wrong count)
    names = label_names("predict_labels", labels, p)
    return names


def model_from_checkpoint(checkpoint, net, labels=None, path=None):
    """A model record from a checkpoint fit(checkpoint=…) wrote and the model it trained; with path=,
    also written there as a model file (save_model)."""
    from apsi_layers.layers.training import checkpoint as ckpt
    from apsi_layers.nn.autograd import tree
    from apsi_layers.nn.autograd.tensor import Tensor

    from .model_file import _check_params, save_model

    if not isinstance(checkpoint, str) or not checkpoint:
        raise ApsiError(f"model_from_checkpoint: the checkpoint must be a file name like \"run.ckpt\", "
                        f"not {show(checkpoint, True)}")
    try:
        snap = ckpt.load(checkpoint)
    except ApsiError as e:
        raise ApsiError(e.message.replace("fit: resume=", "model_from_checkpoint: ")) from None
    meta = snap["meta"]
    names = meta.get("names") or []
    named = list(zip(names, snap["leaves"], strict=False))
    if len(named) != len(names) or net.known_input() is None:
        raise ApsiError(f"model_from_checkpoint: {checkpoint} does not fit this model (or the model does "
                        "not know its input shape: give it inputs= or init(seed=0, input_shape=…))")
    if meta.get("model") != repr(net):
        raise ApsiError(f"model_from_checkpoint: {checkpoint} was written for {meta.get('model')}, not "
                        f"{repr(net)[:80]}; give the model the run trained")
    _check_params(net, named, f"model_from_checkpoint: {checkpoint}")
    params = tree.unflatten([(n, Tensor(np.asarray(a))) for n, a in named])
    history = Record(history=list(meta.get("history") or []), val_history=list(meta.get("val_history") or []))
    record = Record(net=net, params=params, labels=None if labels is None else list(labels), meta=None,
                    history=history, opt=None, input_shape=net.input_shape, apsi_version=None)
    if path is not None:
        save_model(path, net, params, labels=labels, history={"history": history.history,
                                                              "val_history": history.val_history})
    return record


def export_onnx(net, params, path, opset=None):
    """Write the model as ONNX (through torch.onnx.export of torch_module): needs permission python and
    PyTorch (and the onnx packages PyTorch's exporter uses). Inputs float32, one batch axis."""
    permissions.require("python", what="export_onnx")
    if not isinstance(path, str) or not path.endswith(".onnx"):
        raise ApsiError(f"export_onnx: the path must be a file name ending in .onnx, not {show(path, True)}")
    resolved = permissions.require("write", what=f'export_onnx("{path}")', path=path)
    from apsi_layers.backends import registry

    module = registry.find("torch").exports()["torch_module"](net, params)
    import torch

    shape = net.known_input()
    if not isinstance(shape, tuple) or None in shape:
        raise ApsiError("export_onnx: the model needs one input of a fixed per-sample shape (give it "
                        "inputs= or init(seed=0, input_shape=…)); sequences of open length are not exported")
    from .model_file import _input_dtype

    dtype = torch.int64 if _input_dtype(net) == "int64" else torch.float32
    x = torch.zeros((2, *shape), dtype=dtype)
    tmp = f"{resolved}.{os.getpid()}.tmp.onnx"
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module.eval(), (x,), tmp, input_names=["inputs"], output_names=["outputs"],
                              dynamic_axes={"inputs": {0: "batch"}, "outputs": {0: "batch"}},
                              **({} if opset is None else {"opset_version": opset}))
        os.replace(tmp, resolved)
    except ModuleNotFoundError as e:
        raise ApsiError(f"export_onnx: PyTorch's ONNX exporter needs the package {e.name!r}: install it "
                        "with python -m pip install onnx") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
