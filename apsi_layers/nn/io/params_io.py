"""save_params / load_params: a parameter tree as an .npz file of dotted names.

Writes are atomic (a temporary file in the same folder, then os.replace), so a crash never leaves a
half-written file under the real name. Reads never unpickle (allow_pickle=False) and check what they
find: numeric arrays only, names that make a tree, and (with like=) the expected names and shapes.
Both ask apsi_lang's permissions first: inside the project folder nothing needs granting.

Both name the file by one rule (`.npz` is added when the name lacks it), so save_params("m2", p) and
load_params("m2") meet at m2.npz. Leaves that are plain values (text, numbers, booleans, none: a
learning rate, a vocabulary, a note) are metadata: they go to one JSON member, `_meta.json`, never
through pickle, and come back as the same values in the same places.
"""

import json
import os
import re
import zipfile
from contextlib import contextmanager

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.files import atomic_open

from ..autograd import tree
from ..autograd.tensor import Tensor, describe, plain_array


def _order(fn, path, params):
    """Accept save_params(path, params) and save_params(params, path)."""
    if not isinstance(path, str) and isinstance(params, str):
        path, params = params, path
    if not isinstance(path, str) or not path:
        raise ApsiError(f"{fn}: the path must be a file name string like \"model.npz\", not {describe(path)}")
    return path, params


def file_name(path):
    """The one naming rule of save_params and load_params: `.npz` is added when the name lacks it."""
    return path if path.endswith(".npz") else path + ".npz"


# the member that holds the metadata: no parameter is named with a leading '_', and every array
# member ends in .npy, so it can meet no parameter's name
META = "_meta.json"
_META_TYPES = (str, bool, int, float, type(None))


def save_params(path, params, all_ranks=False):
    """Write the tree to `path` (.npz added when missing); returns the path written. Tensors and
    arrays become arrays; text, numbers, booleans and none become metadata (JSON, not pickle).
    Under a distributed launch only rank 0 writes (every rank holds the same tree) unless all_ranks."""
    path, params = _order("save_params", path, params)
    path = file_name(path)
    shown = path
    if not isinstance(all_ranks, bool):
        raise ApsiError(f"save_params: all_ranks must be true or false, not {describe(all_ranks)}")
    path = permissions.require("write", what=f'save_params("{path}")', path=path)   # resolved
    from apsi_layers import distributed

    if not all_ranks and not distributed.writer():      # after the permission: every rank refuses alike
        return shown
    arrays, meta = {}, {}
    for name, leaf in tree.flatten(params):
        if type(leaf) in _META_TYPES:
            meta[name] = leaf
            continue
        data = plain_array(leaf, "save_params", f"parameter {name!r}")
        if data.dtype.kind not in "biuf":
            raise ApsiError(f"save_params: parameter {name!r} is {describe(leaf)}, not numbers")
        arrays[name] = data
    if not arrays and not meta:
        raise ApsiError("save_params: the parameter tree has nothing to save")
    extra = None
    if meta:
        # the order of every leaf, so the loaded tree's fields come back in the saved order
        order = [name for name, _ in tree.flatten(params)]
        extra = json.dumps({"order": order, "values": meta}, ensure_ascii=False).encode()
    write_npz(path, shown, f'save_params("{shown}")', arrays, extra)
    return shown


@contextmanager
def _as_written(resolved, shown):
    """Messages name the file as the program wrote it, not where its path resolved (which could
    reveal $HOME or a link's target)."""
    try:
        yield
    except ApsiError as e:
        folder = os.path.dirname(resolved)
        raise ApsiError(e.message.replace(resolved, shown).replace(folder, os.path.dirname(shown) or "."),
                        e.kind) from None


def write_npz(resolved, shown, what, arrays, meta):
    """Write an .npz atomically at `resolved` (what permissions.require returned) for save_params and
    fit's checkpoints; `what` names the call (save_params("m.npz")). Messages name the file as the
    program wrote it (`shown`), never `resolved`: that would show the project's absolute folder
    (/home/<user>/…), which a program without env or read may not learn."""
    write_file(resolved, shown, what, lambda f: _write_npz(f, arrays, meta))


def write_file(resolved, shown, what, write):
    """write(f) into a file replaced atomically at `resolved`, its messages naming `shown` (the path
    as the program wrote it): save_params, checkpoints and save_model."""
    if not os.path.isdir(os.path.dirname(os.path.abspath(resolved))):
        raise ApsiError(f'{what}: the folder "{os.path.dirname(shown) or "."}" does not exist; create it '
                        "first with make_dir")
    try:
        with atomic_open(resolved, "wb") as f:
            write(f)
    except OSError as e:
        raise ApsiError(f"{what}: cannot write it: {e.strerror or e}") from None


def _write_npz(f, arrays, meta):
    """What np.savez writes (one NAME.npy per entry in a stored zip), without its keyword arguments:
    np.savez(f, **arrays) took a parameter named `allow_pickle` as its own option (dropping it) and
    failed on one named `file`. The metadata, if any, is one more member (np.load lists it too)."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(a), allow_pickle=False)
        if meta is not None:
            z.writestr(META, meta)


# An .npz is a zip: a small file can claim (and inflate to) any size. Nothing bigger than this is
# read unless the caller raises the cap with max_mb=.
MAX_MB = 2048
# a dotted name of parts that are field names (no leading '_') or list positions
_NAME = re.compile(r"(?:[A-Za-z][A-Za-z0-9_]*|[0-9]+)(?:\.(?:[A-Za-z][A-Za-z0-9_]*|[0-9]+))*")


def load_params(path, like=None, max_mb=MAX_MB):
    """Read a tree written by save_params (the same name rule: .npz added when missing). With
    like=tree, check the names and shapes match it. Arrays become float64 tensors (int64 stays) whatever
    they were stored as, metadata its values; at most max_mb megabytes are read."""
    path, like = _order("load_params", path, like) if isinstance(like, str) else (path, like)
    if not isinstance(path, str):
        raise ApsiError(f"load_params: the path must be a string, not {describe(path)}")
    if isinstance(max_mb, bool) or not isinstance(max_mb, int | float) or max_mb <= 0:
        raise ApsiError(f"load_params: max_mb must be a positive number, got {describe(max_mb)}")
    shown, path = _existing_name(path)             # as written, and resolved
    if not os.path.isfile(path):
        raise ApsiError(f"load_params: there is no file {shown}")
    with _as_written(path, shown):
        pairs, meta = _read_npz(path, int(max_mb * 2 ** 20))
    for name, data in pairs:
        if not _NAME.fullmatch(name):
            raise ApsiError(f"load_params: {shown}: entry {name!r} is not a parameter name (dotted "
                            "field names and list positions, like 'layers.0.w'; none starts with '_')")
        if data.dtype.kind not in "biuf":
            raise ApsiError(f"load_params: {shown}: entry {name!r} has dtype {data.dtype}, not numbers")
    leaves = [(name, Tensor(_nn_dtype(data))) for name, data in pairs]
    if meta is not None:
        leaves = _with_meta(shown, leaves, meta)
    params = tree.unflatten(leaves)
    if like is not None:
        _check_like(shown, leaves, like)
    return params


def _existing_name(path):
    """save_params's rule (.npz added when missing); a file that exists under exactly the given name
    while the ruled one does not (written by another tool, like m.npy) is read as named, so its
    problems are explained. Each name's permission is checked before its existence is looked at."""
    ruled = file_name(path)
    resolved = permissions.require("read", what=f'load_params("{ruled}")', path=ruled)
    if ruled != path and not os.path.isfile(resolved):
        other = permissions.require("read", what=f'load_params("{path}")', path=path)
        if os.path.isfile(other):
            return path, other
    return ruled, resolved


def _with_meta(shown, leaves, meta):
    """The arrays' (name, tensor) pairs and the metadata's, in the order the tree was saved in."""
    bad = f"load_params: {shown}: the metadata ({META}) is damaged"
    if not (isinstance(meta, dict) and isinstance(meta.get("order"), list)
            and isinstance(meta.get("values"), dict)):
        raise ApsiError(f"{bad}: expected an object with 'order' and 'values'")
    values = meta["values"]
    for name, v in values.items():
        if not _NAME.fullmatch(name):
            raise ApsiError(f"load_params: {shown}: metadata entry {name!r} is not a parameter name")
        if type(v) not in _META_TYPES:
            raise ApsiError(f"{bad}: entry {name!r} is not text, a number, a boolean or null")
    have = dict(leaves)
    clash = [n for n in values if n in have]
    if clash:
        raise ApsiError(f"{bad}: {clash[0]!r} is both an array and metadata")
    have.update(values)
    order = meta["order"]
    if sorted(map(str, order)) != sorted(have) or len(set(order)) != len(order):
        raise ApsiError(f"{bad}: its list of names does not match the file's entries")
    return [(name, have[name]) for name in order]


def _read_npz(path, max_bytes):
    not_params = (f"load_params: {path} is not a parameter file written by save_params (an .npz "
                  "of numeric arrays)")
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic == b"\x93NUMPY":
        raise ApsiError(f"{not_params}: it is a single NumPy array (.npy); save it as part of a tree "
                        "with save_params, or load it in Python")
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            total = sum(i.file_size for i in infos)
            if total > max_bytes:
                raise ApsiError(f"load_params: {path} would unpack to {total / 2 ** 20:.0f} MB, more "
                                f"than the limit of {max_bytes / 2 ** 20:.0f} MB; if you trust the "
                                "file, raise it with load_params(path, max_mb=…)")
            out, meta = [], None
            for info in infos:
                if info.filename == META:
                    meta = _json(z.read(info))
                    continue
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"it holds {info.filename!r}, which is not an array")
                with z.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    shape, _, dtype = _header(member, version)
                    if dtype.hasobject:
                        raise ValueError(f"entry {info.filename[:-4]!r} holds Python objects")
                    if int(np.prod(shape, dtype=np.float64)) * dtype.itemsize > info.file_size:
                        raise ValueError(f"entry {info.filename[:-4]!r} claims more data than it holds")
                with z.open(info) as member:
                    out.append((info.filename[:-4], np.lib.format.read_array(member, allow_pickle=False)))
            return out, meta
    except ApsiError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, RuntimeError) as e:
        raise ApsiError(f"{not_params}: {e}") from None


def _json(raw):
    """The metadata member: JSON (NaN and Infinity allowed: a loss can be nan), never a pickle."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"its metadata ({META}) is not JSON: {e}") from None


def _nn_dtype(data):
    """nn's two dtypes: int64 (counters, indices) stays; float32, uint8, bool… (from other tools)
    become float64, as array() makes them."""
    return data if data.dtype == np.int64 else np.asarray(data, dtype=np.float64)


def _header(member, version):
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(member)
    return np.lib.format.read_array_header_2_0(member)


def _check_like(path, leaves, like):
    want = {name: _shape(v) for name, v in tree.flatten(like)}
    have = {name: _shape(v) for name, v in leaves}
    missing = [n for n in want if n not in have]
    extra = [n for n in have if n not in want]
    wrong = [f"{n} is {have[n]}, expected {want[n]}" for n in want if n in have and have[n] != want[n]]
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing[:5]))
    if extra:
        problems.append("unexpected " + ", ".join(extra[:5]))
    if wrong:
        problems.append("; ".join(wrong[:5]))
    if problems:
        raise ApsiError(f"load_params: {path} does not match the model: {'; '.join(problems)}")


def _shape(v):
    """A leaf's shape for like=: text and none are metadata with no shape ('text'), numbers ()."""
    if type(v) is Tensor:
        return v.data.shape
    if isinstance(v, str) or v is None:
        return "text" if isinstance(v, str) else "none"
    return np.shape(v)
