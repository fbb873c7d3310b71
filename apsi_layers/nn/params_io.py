"""save_params / load_params: a parameter tree as an .npz file of dotted names.

Writes are atomic (a temporary file in the same folder, then os.replace), so a crash never leaves a
half-written file under the real name. Reads never unpickle (allow_pickle=False) and check what they
find: numeric arrays only, names that make a tree, and (with like=) the expected names and shapes.
Both ask apsi_lang's permissions first: inside the project folder nothing needs granting.
"""

import os
import re
import zipfile
from contextlib import contextmanager

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.files import atomic_open

from . import tree
from .tensor import Tensor, describe, plain_array


def _order(fn, path, params):
    """Accept save_params(path, params) and save_params(params, path)."""
    if not isinstance(path, str) and isinstance(params, str):
        path, params = params, path
    if not isinstance(path, str) or not path:
        raise ApsiError(f"{fn}: the path must be a file name string like \"model.npz\", not {describe(path)}")
    return path, params


def save_params(path, params, all_ranks=False):
    """Write the tree to `path` (.npz added when missing); returns the path written. Under a distributed
    launch only rank 0 writes (every rank holds the same tree) unless all_ranks=true."""
    path, params = _order("save_params", path, params)
    if not path.endswith(".npz"):
        path += ".npz"
    shown = path
    if not isinstance(all_ranks, bool):
        raise ApsiError(f"save_params: all_ranks must be true or false, not {describe(all_ranks)}")
    path = permissions.require("write", what=f'save_params("{path}")', path=path)   # resolved
    from apsi_layers import distributed

    if not all_ranks and not distributed.writer():      # after the permission: every rank refuses alike
        return shown
    arrays = {}
    for name, leaf in tree.flatten(params):
        data = plain_array(leaf, "save_params", f"parameter {name!r}")
        if data.dtype.kind not in "biuf":
            raise ApsiError(f"save_params: parameter {name!r} is {describe(leaf)}, not numbers")
        arrays[name] = data
    if not arrays:
        raise ApsiError("save_params: the parameter tree has no tensors to save")
    with _as_written(path, shown):
        _atomic_savez(path, arrays)
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


def _atomic_savez(path, arrays):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ApsiError(f"save_params: the folder {folder} does not exist; create it first")
    try:
        with atomic_open(path, "wb") as f:
            _write_npz(f, arrays)
    except OSError as e:
        raise ApsiError(f"save_params: cannot write {path}: {e.strerror or e}") from None


def _write_npz(f, arrays):
    """What np.savez writes (one NAME.npy per entry in a stored zip), without its keyword arguments:
    np.savez(f, **arrays) took a parameter named `allow_pickle` as its own option (dropping it) and
    failed on one named `file`."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(a), allow_pickle=False)


# An .npz is a zip: a small file can claim (and inflate to) any size. Nothing bigger than this is
# read unless the caller raises the cap with max_mb=.
MAX_MB = 2048
# a dotted name of parts that are field names (no leading '_') or list positions
_NAME = re.compile(r"(?:[A-Za-z][A-Za-z0-9_]*|[0-9]+)(?:\.(?:[A-Za-z][A-Za-z0-9_]*|[0-9]+))*")


def load_params(path, like=None, max_mb=MAX_MB):
    """Read a tree written by save_params. With like=tree, check the names and shapes match it.
    Entries are float64 tensors whatever they were stored as; at most max_mb megabytes are read."""
    path, like = _order("load_params", path, like) if isinstance(like, str) else (path, like)
    if not isinstance(path, str):
        raise ApsiError(f"load_params: the path must be a string, not {describe(path)}")
    if isinstance(max_mb, bool) or not isinstance(max_mb, int | float) or max_mb <= 0:
        raise ApsiError(f"load_params: max_mb must be a positive number, got {describe(max_mb)}")
    shown = path
    path = permissions.require("read", what=f'load_params("{path}")', path=path)   # resolved
    if not os.path.isfile(path):
        raise ApsiError(f"load_params: there is no file {shown}")
    with _as_written(path, shown):
        pairs = _read_npz(path, int(max_mb * 2 ** 20))
    path = shown                # below, messages only: they name the file as the program wrote it
    for name, data in pairs:
        if not _NAME.fullmatch(name):
            raise ApsiError(f"load_params: {shown}: entry {name!r} is not a parameter name (dotted "
                            "field names and list positions, like 'layers.0.w'; none starts with '_')")
        if data.dtype.kind not in "biuf":
            raise ApsiError(f"load_params: {shown}: entry {name!r} has dtype {data.dtype}, not numbers")
    params = tree.unflatten([(name, Tensor(_nn_dtype(data))) for name, data in pairs])
    if like is not None:
        _check_like(shown, pairs, like)
    return params


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
            out = []
            for info in infos:
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
            return out
    except ApsiError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, RuntimeError) as e:
        raise ApsiError(f"{not_params}: {e}") from None


def _nn_dtype(data):
    """nn's two dtypes: int64 (counters, indices) stays; float32, uint8, bool… (from other tools)
    become float64, as array() makes them."""
    return data if data.dtype == np.int64 else np.asarray(data, dtype=np.float64)


def _header(member, version):
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(member)
    return np.lib.format.read_array_header_2_0(member)


def _check_like(path, pairs, like):
    want = {name: np.shape(v.data if type(v) is Tensor else v) for name, v in tree.flatten(like)}
    have = {name: data.shape for name, data in pairs}
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
