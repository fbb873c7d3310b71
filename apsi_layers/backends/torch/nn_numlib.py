"""Torch versions of nn's numlib functions (issue 19), so a loss or lambda layer written with them
runs under fit(backend="torch"). Same names and arguments as apsi_layers/nn's, NumPy's meanings
(median averages the two middle values, var's ddof, quantile's linear interpolation)."""

import torch
import torch.nn.functional as F

from apsi_layers.nn.numlib.construct import DTYPES, dtype_of

from .nn_args import binary, like


def axis_arg(axis):
    return tuple(axis) if isinstance(axis, list | tuple) else axis


def _dims(x, axis):
    """axis none / int / list -> a tuple of dims."""
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(axis) if isinstance(axis, list | tuple) else (axis,)


def _scan(fn):
    def op(x, axis=None):
        return fn(x.reshape(-1), 0) if axis is None else fn(x, axis)
    return op


def _prod(x, axis=None, keepdims=False):
    for d in sorted(_dims(x, axis), reverse=True):
        x = torch.prod(x, d, keepdim=bool(keepdims))
    return x


def _var(x, axis=None, ddof=0, keepdims=False):
    return torch.var(x, dim=_dims(x, axis), correction=ddof, keepdim=bool(keepdims))


def _std(x, axis=None, ddof=0, keepdims=False):
    return torch.sqrt(_var(x, axis, ddof, keepdims))


def _nan(fn):
    def op(x, axis=None, keepdims=False):
        return fn(x, dim=_dims(x, axis), keepdim=bool(keepdims))
    return op


def _bool(fn):
    def op(x, axis=None, keepdims=False):
        out = x
        for d in sorted(_dims(x, axis), reverse=True):
            out = fn(out, d, keepdim=bool(keepdims))
        return out
    return op


def _quantile(x, q, axis=None, keepdims=False, scale=1.0, method="linear"):
    dims = _dims(x, axis)
    rest = [d for d in range(x.ndim) if d not in dims]
    flat = x.permute(*rest, *dims).reshape(*[x.shape[d] for d in rest], -1)
    qt = torch.as_tensor(q, dtype=x.dtype, device=x.device) / scale
    out = torch.quantile(flat, qt, dim=-1, interpolation=method)      # q's axis first, as NumPy
    if keepdims:
        kept = [1 if d in dims else n for d, n in enumerate(x.shape)]
        out = out.reshape(*out.shape[:qt.ndim], *kept)
    return out


def _sort(x, axis=-1, descending=False):
    if axis is None:
        x, axis = x.reshape(-1), 0
    return torch.sort(x, dim=axis, descending=bool(descending), stable=True).values


def _argsort(x, axis=-1, descending=False):
    if axis is None:
        x, axis = x.reshape(-1), 0
    return torch.sort(x, dim=axis, descending=bool(descending), stable=True).indices


def _topk(x, k, axis=-1, largest=True):
    out = torch.topk(x, k, dim=axis, largest=bool(largest), sorted=True)
    return [out.values, out.indices]


def _squeeze(x, axis=None):
    return x.squeeze() if axis is None else x.squeeze(axis_arg(axis))


def _flip(x, axis=None):
    return torch.flip(x, _dims(x, axis) if axis is None else (
        tuple(axis) if isinstance(axis, list | tuple) else (axis,)))


def _roll(x, shift, axis=None):
    return torch.roll(x, shift, axis_arg(axis) if axis is not None else None)


def _repeat(x, repeats, axis=None):
    if axis is None:
        x, axis = x.reshape(-1), 0
    r = repeats if isinstance(repeats, int) else torch.as_tensor(repeats, device=x.device)
    return torch.repeat_interleave(x, r, dim=axis)


def _pad(x, pad_width, mode="constant", constant_values=0):
    w = [pad_width] * 2 if isinstance(pad_width, int) else list(pad_width)
    pairs = [list(w)] * x.ndim if w and isinstance(w[0], int) else [list(p) for p in w]
    if mode == "constant":
        flat = [int(n) for pair in reversed(pairs) for n in pair]
        return F.pad(x, flat, value=float(constant_values))
    # the other modes pick existing elements: NumPy's own pad of the positions gives the index
    import numpy as np

    for d, (before, after) in enumerate(pairs):
        if before or after:
            idx = np.pad(np.arange(x.shape[d]), (before, after), mode=mode)
            x = x.index_select(d, torch.as_tensor(idx, device=x.device))
    return x


def _split(x, indices_or_sections, axis=0):
    n = x.shape[axis]
    if isinstance(indices_or_sections, int):
        return list(torch.split(x, n // indices_or_sections, dim=axis))
    cuts = [0] + list(indices_or_sections) + [n]
    return list(torch.split(x, [b - a for a, b in zip(cuts, cuts[1:], strict=False)], dim=axis))


def _astype(x, dtype):
    target = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64,
              "int32": torch.int32, "bool": torch.bool}
    np_type = dtype_of("astype", dtype)
    name = next(k for k, v in DTYPES.items() if v is np_type and k in target)
    return x.to(target[name])


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return torch.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _diff(x, n=1, axis=-1):
    return torch.diff(x, n=n, dim=axis) if n else x


def _bincount(x, weights=None, minlength=0):
    ref = x if isinstance(x, torch.Tensor) else weights
    idx = like(x, ref).long()
    w = None if weights is None else like(weights, ref if ref.is_floating_point() else weights)
    return torch.bincount(idx, weights=w, minlength=minlength)


def _host(name):
    """A values-only function on torch tensors: NumPy's own code on host copies, the results back on
    the first tensor's device (floats in its dtype), so the answer is NumPy's on both backends."""
    from apsi_layers import nn
    from apsi_layers.nn.autograd.tensor import Tensor

    from .convert import host_to_device, to_host

    numpy_fn = getattr(nn, name).numpy

    def down(v):
        if isinstance(v, torch.Tensor):
            return Tensor(to_host(v) if v.is_floating_point() else v.detach().cpu().numpy())
        return [down(x) for x in v] if isinstance(v, list | tuple) else v

    def impl(*args, **kwargs):
        ref = next(v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor))

        def up(v):
            if type(v) is Tensor:
                dtype = ref.dtype if ref.is_floating_point() else torch.float64
                return host_to_device(v.data, ref.device, dtype)
            return [up(x) for x in v] if isinstance(v, list | tuple) else v

        return up(numpy_fn(*[down(a) for a in args], **{k: down(v) for k, v in kwargs.items()}))
    return impl


NUMLIB_IMPLS = {
    "sign": torch.sign, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc,
    "round": lambda x, decimals=0: torch.round(x, decimals=decimals), "expm1": torch.expm1,
    "log2": torch.log2, "log10": torch.log10, "tan": torch.tan, "arcsin": torch.asin,
    "arccos": torch.acos, "arctan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh,
    "arcsinh": torch.asinh, "arctanh": torch.atanh, "erf": torch.erf, "isnan": torch.isnan,
    "isinf": torch.isinf, "isfinite": torch.isfinite, "nan_to_num": _nan_to_num,
    "arctan2": binary(torch.atan2), "hypot": binary(torch.hypot), "mod": binary(torch.remainder),
    "cumsum": _scan(torch.cumsum), "cumprod": _scan(torch.cumprod), "prod": _prod, "var": _var,
    "std": _std, "nansum": _nan(torch.nansum), "nanmean": _nan(torch.nanmean), "all": _bool(torch.all),
    "any": _bool(torch.any),
    "count_nonzero": lambda x, axis=None, keepdims=False: _bool(torch.sum)(x != 0, axis, keepdims),
    "diff": _diff, "quantile": _quantile,
    "percentile": lambda x, q, axis=None, keepdims=False, method="linear": _quantile(
        x, q, axis, keepdims, 100.0, method),
    "median": lambda x, axis=None, keepdims=False: _quantile(x, 0.5, axis, keepdims),
    "moveaxis": torch.movedim, "sort": _sort, "argsort": _argsort, "topk": _topk,
    "squeeze": _squeeze, "flip": _flip, "roll": _roll,
    "tile": lambda x, reps: torch.tile(x, (reps,) if isinstance(reps, int) else tuple(reps)),
    "repeat": _repeat, "pad": _pad, "split": _split,
    "meshgrid": lambda *xs, indexing="xy": list(torch.meshgrid(*xs, indexing=indexing)),
    "full_like": lambda x, value: torch.full_like(x, value), "astype": _astype,
    "bincount": _bincount,
    **{name: _host(name) for name in ("unique", "histogram", "searchsorted", "isin", "isclose",
                                      "allclose", "array_equal")},
}
