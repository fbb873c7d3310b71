"""save_params / load_params: a parameter tree as an .npz file of dotted names.

Writes are atomic (a temporary file in the same folder, then os.replace), so a crash never leaves a
half-written file under the real name. Reads never unpickle (allow_pickle=False) and check what they
find: numeric arrays only, names that make a tree, and (with like=) the expected names and shapes.
Both ask apsi_lang's permissions first: inside the project folder nothing needs granting.
"""

import os
import zipfile

import numpy as np

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_lang.files import atomic_open

from . import tree
from .tensor import Tensor, describe


def _order(fn, path, params):
    """Accept save_params(path, params) and save_params(params, path)."""
    if not isinstance(path, str) and isinstance(params, str):
        path, params = params, path
    if not isinstance(path, str) or not path:
        raise ApsiError(f"{fn}: the path must be a file name string like \"model.npz\", not {describe(path)}")
    return path, params


def save_params(path, params):
    """Write the tree to `path` (.npz added when missing); returns the path written."""
    path, params = _order("save_params", path, params)
    if not path.endswith(".npz"):
        path += ".npz"
    permissions.require("write", what=f'save_params("{path}")', path=path)
    arrays = {}
    for name, leaf in tree.flatten(params):
        data = leaf.data if type(leaf) is Tensor else np.asarray(leaf)
        if data.dtype.kind not in "biuf":
            raise ApsiError(f"save_params: parameter {name!r} is {describe(leaf)}, not numbers")
        arrays[name] = data
    if not arrays:
        raise ApsiError("save_params: the parameter tree has no tensors to save")
    _atomic_savez(path, arrays)
    return path


def _atomic_savez(path, arrays):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ApsiError(f"save_params: the folder {folder} does not exist; create it first")
    try:
        with atomic_open(path, "wb") as f:
            np.savez(f, **arrays)
    except OSError as e:
        raise ApsiError(f"save_params: cannot write {path}: {e.strerror or e}") from None


def load_params(path, like=None):
    """Read a tree written by save_params. With like=tree, check the names and shapes match it."""
    path, like = _order("load_params", path, like) if isinstance(like, str) else (path, like)
    if not isinstance(path, str):
        raise ApsiError(f"load_params: the path must be a string, not {describe(path)}")
    permissions.require("read", what=f'load_params("{path}")', path=path)
    if not os.path.isfile(path):
        raise ApsiError(f"load_params: there is no file {path}")
    pairs = _read_npz(path)
    for name, data in pairs:
        if data.dtype.kind not in "biuf":
            raise ApsiError(f"load_params: {path}: entry {name!r} has dtype {data.dtype}, not numbers")
    params = tree.unflatten([(name, Tensor(data)) for name, data in pairs])
    if like is not None:
        _check_like(path, pairs, like)
    return params


def _read_npz(path):
    try:
        with np.load(path, allow_pickle=False) as npz:
            if not hasattr(npz, "files"):
                raise ValueError("a single array, not an .npz archive")
            return [(name, npz[name]) for name in npz.files]
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise ApsiError(f"load_params: {path} is not a parameter file written by save_params "
                        f"(an .npz of numeric arrays): {e}") from None


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
