"""save_model / load_model: a whole model in one file (.apsim), a zip of plain data.

    model.json          the description (description.py), its Apsi functions as source (functions.py),
                        labels, input shape and dtype, meta, history, the optimizer's settings, the
                        parameter names and shapes, the Apsi version
    params/NAME.npy     the parameter tree's leaves by dotted name (running statistics and any layer's
                        non-trainable state included: they live in the tree's `state` fields)
    opt/I/KEY.npy       the optimizer's state per trainable leaf, when an optimizer is given

Never a pickle and never Python code: arrays are read with allow_pickle=False after their headers are
checked, sizes are checked before anything is decompressed (a zip bomb claims little and inflates to
much), and everything is checked before a model is returned (never a partial one). Written atomically
under the sandbox's write rules, like save_params.
"""

import io
import json
import os
import zipfile

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError, PermissionDenied
from apsi_lang.values import Record, show

FORMAT = "apsi-model-1"
SUFFIX = ".apsim"
MAX_MB = 2048              # unpacked size read at most, unless load_model(max_mb=…)
MAX_JSON = 64 << 20        # the description's own size
MAX_RATIO = 200            # a deflated member may not claim more than this many times its packed size


def file_name(path):
    return path if path.endswith(SUFFIX) else path + SUFFIX


# --------------------------------------------------------------------------------------------- save
def save_model(path, net, params, labels=None, meta=None, opt=None, history=None):
    """Write net, params (or a fit result: its params, history and opt), labels and meta to one file."""
    from apsi_layers.layers.base import Layer

    if not isinstance(path, str) or not path:
        raise ApsiError(f"save_model: the path must be a file name like \"model{SUFFIX}\", "
                        f"not {show(path, True)}")
    if not isinstance(net, Layer):
        raise ApsiError(f"save_model: the second argument must be the model (a layer), not {show(net, True)}")
    params, opt, history = _from_fit(params, opt, history)
    shown = file_name(path)
    resolved = permissions.require("write", what=f'save_model("{shown}")', path=shown)
    description, arrays = describe(net, params, labels, meta, opt, history)
    from apsi_layers.nn.io.params_io import write_file

    write_file(resolved, shown, f'save_model("{shown}")', lambda f: _write(f, description, arrays))
    return shown


def _from_fit(params, opt, history):
    """A fit result given as params brings its params, opt and history along."""
    if isinstance(params, Record) and hasattr(params, "params") and hasattr(params, "history"):
        r = params
        history = history if history is not None else {
            k: getattr(r, k) for k in ("history", "val_history", "metrics", "val_metrics", "lr_history")
            if hasattr(r, k)}
        return r.params, opt if opt is not None else getattr(r, "opt", None), history
    return params, opt, history


def describe(net, params, labels, meta, opt, history):
    """(the JSON description, {member name: array}); checks the parameters fit the model and that the
    description rebuilds the same model."""
    from apsi_layers.nn.autograd import tree

    from .description import Writer
    from .functions import FunctionTable

    shape = net.known_input()
    if shape is None:
        raise ApsiError("save_model: the model does not know the shape of its inputs; give it once, "
                        "e.g. net.init(seed=0, input_shape=[features]), then save")
    named = _leaves(params)
    out = _check_params(net, named, "save_model")
    functions = FunctionTable()
    writer = Writer(functions)
    root = writer.layer(net)
    labels_out = _labels(labels)
    if labels_out is not None and _classes(out) not in (None, len(labels_out)):
        raise ApsiError(f"save_model: the model gives {_classes(out)} classes but {len(labels_out)} labels "
                        "were given; give one label per class (predict_labels and serve_model need them)")
    d = {"format": FORMAT, "apsi_version": _version(), "model": repr(net), "layers": writer.nodes,
         "root": root, "input_shape": writer.value(shape, "input_shape"), "input_dtype": _input_dtype(net),
         "labels": labels_out, "params": [[n, list(a.shape), str(a.dtype)] for n, a in named],
         "meta": None if meta is None else writer.value(meta, "meta"),
         "history": None if history is None else writer.value(history, "history")}
    arrays = {f"params/{n}": a for n, a in named}
    if opt is not None:
        d["optimizer"], opt_arrays = _optimizer(opt, writer)
        arrays.update(opt_arrays)
    d["functions"] = functions.entries
    _same_again(net, d, functions.objects)
    del tree
    return d, arrays


def _leaves(params):
    from apsi_layers.nn.autograd import tree
    from apsi_layers.nn.autograd.tensor import plain_array

    if not isinstance(params, Record):
        raise ApsiError(f"save_model: params must be the parameter tree (from init or fit), "
                        f"not {show(params, True)}")
    out = []
    for name, leaf in tree.flatten(params):
        a = np.asarray(plain_array(leaf, "save_model", f"parameter {name!r}"))
        if a.dtype.kind not in "biuf":
            raise ApsiError(f"save_model: parameter {name!r} is not numbers")
        out.append((name, a))
    return out


def _check_params(net, named, fn):
    from apsi_layers.layers.base import build_root, leaf_shapes
    from apsi_layers.layers.init_rng import ShapeRng
    from apsi_layers.nn.autograd import tree

    spec, out = build_root(net, ShapeRng(), net.known_input())
    want = dict(leaf_shapes(spec)) if tree.leaves(spec) else {}
    have = {n: tuple(a.shape) for n, a in named}
    for name in list(want) + [n for n in have if n not in want]:
        if name not in have:
            return _mismatch(fn, f"parameter {name} is missing (the model needs shape {list(want[name])})")
        if name not in want:
            return _mismatch(fn, f"parameter {name} is not part of the model")
        if have[name] != tuple(want[name]):
            return _mismatch(fn, f"parameter {name} has shape {list(have[name])} but the model needs "
                                 f"{list(want[name])}")
    return out


def _mismatch(fn, text):
    raise ApsiError(f"{fn}: {text}")


def _same_again(net, d, objects):
    """The description must rebuild this very model: same text, same parameter names and shapes."""
    from .description import Reader

    class Same:                     # the functions themselves stand in: nothing is compiled here
        def get(self, i, where):
            return objects[i]

    rebuilt = Reader("(this model)", d["layers"], Same()).layer(d["root"])
    a, b = _structure(net), _structure(rebuilt, net.known_input())     # load_model gives it input_shape
    if a != b:
        raise ApsiError(f"save_model: the model's description does not rebuild it (it gives {b[0][:80]}, "
                        f"not {a[0][:80]}); a layer keeps a setting it does not show. Please report this")


def _structure(net, shape=None):
    import re

    from apsi_layers.layers.base import build_root, leaf_shapes
    from apsi_layers.layers.init_rng import ShapeRng

    spec, out = build_root(net, ShapeRng(), shape if shape is not None else net.known_input())
    text = re.sub(r"<fn[^>]*>", "<fn>", repr(net))
    return text, leaf_shapes(spec), repr(out)


def _labels(labels):
    if labels is None:
        return None
    if isinstance(labels, list | tuple) and labels and all(type(x) in (str, int) for x in labels):
        return list(labels)
    raise ApsiError(f"save_model: labels must be a list of class names (text or ints), one per output, "
                    f"not {show(labels, True)[:80]}")


def _classes(out):
    """How many labels a model's per-sample output shape takes (one output: two, as predict_proba's
    [1 - p, p]), or none when that is not known (several outputs, an open length)."""
    if not isinstance(out, tuple) or not out or type(out[-1]) is not int:
        return None
    return 2 if out[-1] == 1 else out[-1]


def _input_dtype(net):
    from apsi_layers.layers.core import Embedding

    first = net
    while first.layers:
        first = first.layers[0]
    return "int64" if isinstance(first, Embedding) else "float64"


def _version():
    try:
        from importlib.metadata import version

        return version("apsi")
    except Exception:           # not installed (run from a checkout)
        return "unknown"


def _optimizer(opt, writer):
    from apsi_layers.nn.train.optim import Optimizer

    if not isinstance(opt, Optimizer):
        raise ApsiError(f"save_model: opt must be an optimizer (like r.opt from fit), not {show(opt, True)}")
    state = opt._state or []
    d = {"name": opt.name, "lr": writer.value(opt.lr, "opt.lr"),
         "hyper": {k: writer.value(v, f"opt.{k}") for k, v in opt.hyper.items()},
         "steps": opt.steps, "started": opt._state is not None,
         "shapes": [list(s) for s in (opt._shapes or [])], "names": list(opt._names or []),
         "keys": [sorted(s) for s in state]}
    arrays = {f"opt/{i}/{k}": np.asarray(v, dtype=np.float64)
              for i, s in enumerate(state) for k, v in s.items()}
    return d, arrays


def _write(f, description, arrays):
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr("model.json", json.dumps(description, ensure_ascii=False, allow_nan=False).encode())
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(a), allow_pickle=False)


# --------------------------------------------------------------------------------------------- load
def load_model(path, max_mb=MAX_MB):
    """{net, params, labels, meta, history, opt, input_shape, apsi_version} from a file save_model wrote."""
    if not isinstance(path, str) or not path:
        raise ApsiError(f"load_model: the path must be a file name like \"model{SUFFIX}\", "
                        f"not {show(path, True)}")
    if isinstance(max_mb, bool) or not isinstance(max_mb, int | float) or max_mb <= 0:
        raise ApsiError(f"load_model: max_mb must be a positive number, not {show(max_mb, True)}")
    shown = path if os.path.isfile(permissions.require("read", what=f'load_model("{path}")', path=path)) \
        else file_name(path)
    resolved = permissions.require("read", what=f'load_model("{shown}")', path=shown)
    if not os.path.isfile(resolved):
        raise ApsiError(f"load_model: there is no file {shown}")
    d, arrays = _read(resolved, shown, int(max_mb * 2 ** 20))
    return build(shown, d, arrays, os.path.dirname(resolved))


def _bad(shown, part, text):
    return ApsiError(f"load_model: {shown}: {part}: {text}")


def _read(resolved, shown, max_bytes):
    not_model = f"load_model: {shown} is not a model file written by save_model"
    try:
        with zipfile.ZipFile(resolved) as z:
            infos = z.infolist()
            _check_sizes(shown, infos, max_bytes)
            names = [i.filename for i in infos]
            if "model.json" not in names:
                raise ApsiError(f"{not_model} (it has no model.json)")
            d = _json(shown, z.read("model.json"))
            arrays = {}
            for info in infos:
                if info.filename == "model.json":
                    continue
                arrays[info.filename[:-4]] = _array(shown, z, info)
            return d, arrays
    except ApsiError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError, NotImplementedError) as e:
        what = "the file is truncated or damaged" if not isinstance(e, zipfile.BadZipFile) else str(e)
        raise ApsiError(f"{not_model}, or it is damaged: {what}") from None


def _check_sizes(shown, infos, max_bytes):
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise ApsiError(f"load_model: {shown} would unpack to {total / 2 ** 20:.0f} MB, more than the limit "
                        f"of {max_bytes / 2 ** 20:.0f} MB; if you trust the file, raise it with "
                        "load_model(path, max_mb=…)")
    for i in infos:
        if i.file_size > MAX_RATIO * max(i.compress_size, 1) and i.compress_type != zipfile.ZIP_STORED:
            raise ApsiError(f"load_model: {shown}: {i.filename}: claims to unpack {i.file_size} bytes from "
                            f"{i.compress_size} (a zip bomb?); the file is refused")
        ok = i.filename == "model.json" or (i.filename.endswith(".npy") and i.filename.split("/")[0]
                                              in ("params", "opt"))
        if not ok or ".." in i.filename.split("/") or i.filename.startswith("/"):
            raise ApsiError(f"load_model: {shown}: it holds {i.filename!r}, which is not part of a "
                              "model file")
        if i.filename == "model.json" and i.file_size > MAX_JSON:
            raise ApsiError(f"load_model: {shown}: model.json is {i.file_size} bytes, more than a model's "
                            "description can be")


def _json(shown, raw):
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise _bad(shown, "model.json", f"is not JSON ({e})") from None


def _array(shown, z, info):
    from apsi_layers.nn.io.params_io import _header

    part = info.filename
    raw = z.read(info)          # whole, so zipfile checks its CRC (a changed byte is found)
    with io.BytesIO(raw) as member:
        try:
            version = np.lib.format.read_magic(member)
            shape, _, dtype = _header(member, version)
        except ValueError as e:
            raise _bad(shown, part, f"is not a NumPy array ({e})") from None
        if dtype.hasobject or dtype.kind not in "biuf":
            raise _bad(shown, part, f"holds {dtype}, not numbers")
        if int(np.prod(shape, dtype=np.float64)) * dtype.itemsize > info.file_size:
            raise _bad(shown, part, "claims more data than it holds")
    with io.BytesIO(raw) as member:
        return np.lib.format.read_array(member, allow_pickle=False)


def build(shown, d, arrays, program_dir):
    """The model record from a read description and arrays: everything checked, or an error."""
    from apsi_layers.nn.autograd import tree
    from apsi_layers.nn.autograd.tensor import Tensor
    from apsi_layers.nn.io.params_io import _nn_dtype

    from .description import Reader
    from .functions import FunctionReader

    if type(d) is not dict or d.get("format") != FORMAT:
        raise _bad(shown, "model.json", f"is not a model description of format {FORMAT!r}")
    for key, kind in (("layers", list), ("functions", list), ("params", list), ("root", int)):
        if type(d.get(key)) is not kind:
            raise _bad(shown, "model.json", f"its {key!r} is missing or damaged")
    functions = FunctionReader(shown, d["functions"], program_dir)
    reader = Reader(shown, d["layers"], functions)
    functions.reader = reader
    net = reader.layer(d["root"])
    net.declared_input = net.declared_input if net.declared_input is not None else \
        _shape(shown, reader.value(d.get("input_shape"), "input_shape"), net)
    listed = d["params"]
    if not all(type(p) is list and len(p) == 3 and type(p[0]) is str for p in listed):
        raise _bad(shown, "model.json", "its parameter list is damaged")
    have = {k[len("params/"):] for k in arrays if k.startswith("params/")}
    if have != {p[0] for p in listed}:
        missing = sorted({p[0] for p in listed} - have) or sorted(have - {p[0] for p in listed})
        raise _bad(shown, f"params/{missing[0]}", "the parameter arrays do not match the description's list")
    named = []
    for name, shape, _ in listed:
        a = arrays[f"params/{name}"]
        if list(a.shape) != shape:
            raise _bad(shown, f"params/{name}", f"has shape {list(a.shape)}, the description says {shape}")
        named.append((name, a))
    try:
        out = _check_params(net, named, f"load_model: {shown}")
        params = tree.unflatten([(n, Tensor(_nn_dtype(a))) for n, a in named])
    except PermissionDenied:
        raise                 # a stored function that reached for a file: said as it is
    except ApsiError as e:
        raise ApsiError(f"{e.message} (the parameters do not match the model's description)") from None
    except (ValueError, TypeError, KeyError) as e:
        raise _bad(shown, "params", f"the names do not make a tree ({e})") from None
    opt = _read_optimizer(shown, d.get("optimizer"), arrays, reader)
    labels = d.get("labels")
    if labels is not None and not (type(labels) is list and all(type(x) in (str, int) for x in labels)):
        raise _bad(shown, "model.json", "its labels are damaged")
    if labels is not None and _classes(out) not in (None, len(labels)):
        raise _bad(shown, "model.json", f"it has {len(labels)} labels but the model gives {_classes(out)} "
                                        "classes (the file was changed)")
    meta = reader.value(d.get("meta"), "meta")
    history = reader.value(d.get("history"), "history")
    if type(history) is dict:
        history = Record(**{k: v for k, v in history.items() if type(k) is str and k.isidentifier()})
    return Record(net=net, params=params, labels=labels, meta=meta, history=history, opt=opt,
                  input_shape=net.input_shape, apsi_version=d.get("apsi_version"))


def _shape(shown, value, net):
    from apsi_layers.layers.base import shape_arg

    try:
        return shape_arg("load_model", "input_shape", value)
    except ApsiError:
        raise _bad(shown, "model.json", f"its input_shape {show(value, True)[:40]} is not a shape") from None


def _read_optimizer(shown, d, arrays, reader):
    if d is None:
        return None
    from apsi_layers.nn.train.optim import Optimizer

    classes = {}
    todo = [Optimizer]
    while todo:
        c = todo.pop()
        classes.setdefault(c.name, c)
        todo.extend(c.__subclasses__())
    if type(d) is not dict or d.get("name") not in classes or d.get("name") == "optimizer":
        name = d.get("name") if type(d) is dict else d
        raise _bad(shown, "optimizer", f"names no optimizer Apsi knows ({show(name, True)})")
    cls = classes[d["name"]]
    try:
        opt = object.__new__(cls)
        Optimizer.__init__(opt, reader.value(d["lr"], "optimizer.lr"),
                           **{k: reader.value(v, f"optimizer.{k}") for k, v in d["hyper"].items()})
        opt.steps = int(d["steps"])
        if d.get("started"):
            states = []
            for i, keys in enumerate(d["keys"]):
                s = {}
                for k in keys:
                    a = arrays[f"opt/{i}/{k}"]
                    s[k] = np.array(a, dtype=np.float64) if a.ndim else float(a[()])
                states.append(s)
            opt._state, opt._names = states, [str(n) for n in d["names"]]
            opt._shapes = [tuple(int(x) for x in s) for s in d["shapes"]]
            if len(opt._shapes) != len(states) or any(
                    np.shape(v) not in ((), shape) for s, shape in zip(states, opt._shapes, strict=True)
                    for v in s.values()):
                raise ValueError("the state's shapes do not match")
    except ApsiError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise _bad(shown, "optimizer", f"is damaged ({e})") from None
    return opt


def read_bytes_model(data, shown):
    """load_model on bytes in memory (tests, and a server given a file's contents)."""
    d, arrays = _read(io.BytesIO(data), shown, MAX_MB << 20)
    return build(shown, d, arrays, os.getcwd())
