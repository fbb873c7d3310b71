"""Tensor: an ndarray plus where it sits on the active tape.

Kept deliberately lean (three slots, no validation in __init__) because small models create one per
op and per-op overhead decides their speed. Operator methods (`+`, `@`, `[]`, ...) are installed by
graph.py from ops.py's differentiable ops, since they are those ops themselves.
"""

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import type_name

from . import foreign


class Tensor:
    __slots__ = ("data", "tape", "node")

    # What Apsi code may read (the sandbox's allow-list). The raw ndarray (`data`, `numpy()`) is not
    # here: it would expose tofile/dump/ctypes.
    __apsi_attrs__ = frozenset({"shape", "ndim", "size", "dtype", "T", "item", "tolist",
                                "reshape", "sum", "mean", "max", "min", "argmax",
                                # numlib (issue 19): NumPy's data-returning methods
                                "std", "var", "prod", "cumsum", "cumprod", "all", "any", "astype",
                                "squeeze", "flatten", "argmin", "argsort", "round"})
    __apsi_type__ = "tensor"
    # Make `ndarray + Tensor` call Tensor.__radd__ instead of NumPy looping over our elements.
    __array_ufunc__ = None

    def __init__(self, data, tape=None, node=-1):
        self.data = data
        self.tape = tape
        self.node = node

    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype.name

    def numpy(self):
        """The values as a NumPy array (Python only; not visible to Apsi)."""
        return self.data

    def item(self):
        if self.data.size != 1:
            raise ApsiError(f"item: the tensor has shape {self.shape}, not one element; "
                            "index it first, e.g. x[0]")
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def __len__(self):
        if self.data.ndim == 0:
            raise ApsiError("len: a 0-d tensor (a scalar) has no length; use .item() for its value")
        return len(self.data)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        if self.data.size != 1:
            raise ApsiError(f"the truth value of a tensor of shape {self.shape} is ambiguous: "
                            "compare one element, or reduce with max(...)/min(...) first")
        return bool(self.data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.data.ndim or self.data.dtype.kind not in "iu":
            raise ApsiError(f"a tensor of shape {self.shape} and dtype {self.dtype} cannot be used "
                            "as an index; use an int tensor with one element")
        return int(self.data)

    def __format__(self, spec):
        if spec and self.data.size == 1:
            return format(self.data.item(), spec)
        return format(str(self), spec)

    def __repr__(self):
        d = self.data
        if d.dtype == bool:       # Apsi spells booleans true/false, in tensors too
            if d.ndim == 0:
                return "true" if d.item() else "false"
            body = np.array2string(d, separator=", ", prefix="tensor(",
                                   formatter={"bool": lambda b: "true" if b else "false"})
            return f"tensor({body})"
        if d.ndim == 0:
            return repr(d.item())
        body = np.array2string(d, separator=", ", prefix="tensor(")
        return f"tensor({body})"

    __str__ = __repr__


def as_tensor(x, fn="array", arg="x"):
    """`x` as a Tensor: Tensors pass through; numbers, lists and arrays become float64 (bool/int arrays
    keep their dtype so they can serve as masks and labels)."""
    if type(x) is Tensor:
        return x
    if isinstance(x, np.ndarray):
        return Tensor(x if x.dtype.kind in "biu" or x.dtype == np.float64 else x.astype(np.float64))
    if foreign.TYPES and isinstance(x, foreign.TYPES):
        raise foreign.Foreign(fn)       # callers that have a foreign version catch this
    try:
        return Tensor(np.asarray(to_plain(x), dtype=np.float64))
    except (TypeError, ValueError):
        raise ApsiError(f"{fn}: argument {arg} must be a tensor, a number or a (nested) list of numbers "
                        f"of equal lengths, not {describe(x)}") from None


def to_plain(x):
    """Lists/tuples that may contain tensors, turned into nested lists of numbers/arrays for NumPy.
    Nothing else passes (TypeError): NumPy reads protocols such as __array_interface__ (a raw memory
    address) from any object it is given, so only values whose types we know reach it."""
    t = type(x)
    if t is Tensor:
        return x.data
    if t is list or t is tuple:
        return [to_plain(v) for v in x]
    if t is float or t is int or t is bool or isinstance(x, np.ndarray | np.generic):
        return x
    raise TypeError(type(x).__name__)


def plain_array(x, fn, arg, dtype=None):
    """np.asarray of a value from Apsi code, checked by to_plain: a tensor, an array, a number, a
    boolean or (nested) lists of them; anything else is an ApsiError naming `fn` and `arg`."""
    try:
        d = to_plain(x)
        return np.asarray(d) if dtype is None else np.asarray(d, dtype=dtype)
    except (TypeError, ValueError):
        raise ApsiError(f"{fn}: argument {arg} must be a tensor, a number, a boolean or a (nested) list "
                        f"of them of equal lengths, not {describe(x)}") from None


def describe(x):
    if type(x) is Tensor:
        return f"a tensor of shape {x.shape}"
    if isinstance(x, list | tuple):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"a {type_name(x)}"
