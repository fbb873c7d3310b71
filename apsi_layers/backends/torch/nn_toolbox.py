"""Torch versions of issue 35's nn functions (apsi_layers/nn/numlib/toolbox.py lists them), so a loss or
lambda layer written with them runs under fit(backend="torch") with torch autograd. Same names,
arguments and NumPy meanings as nn's; the index finders run NumPy's code on host copies."""

import torch
import torch.nn.functional as F

from .nn_args import binary, like
from .nn_numlib import _dims, _host
from .nn_polygamma import polygamma


def _nan_extreme(reduce, fill):
    def op(x, axis=None, keepdims=False):
        dims = _dims(x, axis)
        nan = torch.isnan(x)
        out = reduce(torch.where(nan, fill, x), dim=dims, keepdim=bool(keepdims))
        return torch.where(nan.all(dim=dims, keepdim=bool(keepdims)), torch.nan, out)
    return op


def _nanvar(x, axis=None, ddof=0, keepdims=False):
    dims = _dims(x, axis)
    ok = ~torch.isnan(x)
    count = ok.sum(dim=dims, keepdim=True).to(x.dtype)
    mean = torch.where(ok, x, 0.0).sum(dim=dims, keepdim=True) / count.clamp(min=1.0)
    d = torch.where(ok, x - mean, 0.0)
    dof = count - ddof if keepdims else (count - ddof).squeeze(dims) if dims else count - ddof
    out = (d * d).sum(dim=dims, keepdim=bool(keepdims)) / torch.where(dof > 0, dof, 1.0)
    return torch.where(dof <= 0, torch.nan, out)


def _nanquantile(x, q, axis=None, keepdims=False, method="linear"):
    dims = _dims(x, axis)
    rest = [d for d in range(x.ndim) if d not in dims]
    flat = x.permute(*rest, *dims).reshape(*[x.shape[d] for d in rest], -1)
    qt = torch.as_tensor(q, dtype=x.dtype, device=x.device)
    out = torch.nanquantile(flat, qt, dim=-1, interpolation=method)     # q's axis first, as NumPy
    if keepdims:
        kept = [1 if d in dims else n for d, n in enumerate(x.shape)]
        out = out.reshape(*out.shape[:qt.ndim], *kept)
    return out


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = like(a, weights) if not isinstance(a, torch.Tensor) else a
    dims = _dims(a, axis)
    if weights is None:
        avg = a.mean(dim=dims, keepdim=bool(keepdims))
        total = torch.full_like(avg, float(a.numel() // max(avg.numel(), 1)))
    else:
        w = like(weights, a)
        if w.shape != a.shape:
            shape = [a.shape[d] if d in dims else 1 for d in range(a.ndim)]
            w = w.reshape(shape)
        total = w.sum(dim=dims, keepdim=bool(keepdims))
        avg = (a * w).sum(dim=dims, keepdim=bool(keepdims)) / total
        total = total.expand_as(avg)
    return [avg, total] if returned else avg


def _ptp(a, axis=None, keepdims=False):
    dims = _dims(a, axis)
    return a.amax(dim=dims, keepdim=bool(keepdims)) - a.amin(dim=dims, keepdim=bool(keepdims))


def _variables(m, rowvar, ref):
    x = like(m, ref)
    x = x.reshape(1, -1) if x.ndim < 2 else x
    return x.T if not rowvar and x.shape[0] != 1 else x


def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    ref = next(v for v in (m, y, aweights, fweights) if isinstance(v, torch.Tensor))
    x = _variables(m, rowvar, ref)
    if y is not None:
        x = torch.cat([x, _variables(y, rowvar, ref)], dim=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    fw = None if fweights is None else like(fweights, ref).round().long()
    aw = None if aweights is None else like(aweights, ref)
    out = torch.cov(x, correction=ddof, fweights=fw, aweights=aw)
    return out.reshape(()) if out.numel() == 1 else out


def _corrcoef(x, y=None, rowvar=True):
    c = _cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    sd = torch.sqrt(torch.diagonal(c))
    return torch.clamp(c / sd[:, None] / sd[None, :], -1.0, 1.0)


def _ends(start, stop):
    ref = start if isinstance(start, torch.Tensor) else stop
    return like(start, ref).reshape(()), like(stop, ref).reshape(()), ref


def _spacing(num, endpoint, ref):
    from apsi_layers.nn.numlib.sequences import fractions

    return torch.as_tensor(fractions(num, endpoint), dtype=ref.dtype, device=ref.device)


def _logspace(start, stop, num=50, endpoint=True, base=10.0):
    s, e, ref = _ends(start, stop)
    return base ** (s + (e - s) * _spacing(num, endpoint, ref))


def _geomspace(start, stop, num=50, endpoint=True):
    s, e, ref = _ends(start, stop)
    ls, le = torch.log(torch.abs(s)), torch.log(torch.abs(e))
    out = torch.sign(s) * torch.exp(ls + (le - ls) * _spacing(num, endpoint, ref))
    index = torch.arange(num, device=ref.device)
    out = torch.where(index == 0, s, out)             # NumPy puts the ends in exactly
    return torch.where(index == num - 1, e, out) if endpoint else out


def _running(fn):
    def op(x, axis=None):
        if axis is None:
            x, axis = x.reshape(-1), 0
        return fn(x, axis).values
    return op


def _convolve(a, v, mode="full"):
    ref = a if isinstance(a, torch.Tensor) else v
    a, v = like(a, ref), like(v, ref)
    n, m = a.shape[0], v.shape[0]
    full = F.conv1d(a.reshape(1, 1, n), v.flip(0).reshape(1, 1, m), padding=m - 1).reshape(-1)
    if mode == "full":
        return full
    start = (min(n, m) - 1) // 2 if mode == "same" else min(n, m) - 1
    size = max(n, m) if mode == "same" else max(n, m) - min(n, m) + 1
    return full[start:start + size]


def _interp(x, xp, fp, left=None, right=None, period=None):
    ref = next(v for v in (x, xp, fp) if isinstance(v, torch.Tensor))
    x, xp, fp = like(x, ref), like(xp, ref), like(fp, ref)
    if period is not None:
        period = abs(float(period))
        x, xp = torch.remainder(x, period), torch.remainder(xp, period)
        order = torch.argsort(xp, stable=True)
        xp, fp = xp[order], fp[order]
        xp = torch.cat([xp[-1:] - period, xp, xp[:1] + period])
        fp = torch.cat([fp[-1:], fp, fp[:1]])
        left = right = None
    n = xp.shape[0]
    if n == 1:
        out = torch.where(x == xp[0], fp[0], torch.nan)
    else:
        j = (torch.searchsorted(xp.detach(), x.detach(), right=True) - 1).clamp(0, n - 2)
        at_last = x == xp[-1]
        j = torch.where(at_last, n - 2, j)
        x0, x1, f0, f1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
        slope = (f1 - f0) / (x1 - x0)
        out = slope * (x - x0) + f0
        out = torch.where(at_last | (torch.isnan(out) & ~torch.isnan(x)), slope * (x - x1) + f1, out)
        out = torch.where((x == x0) & ~torch.isfinite(slope), f0, out)
    lo = fp[0] if left is None else like(left, ref)
    hi = fp[-1] if right is None else like(right, ref)
    return torch.where(x > xp[-1], hi, torch.where(x < xp[0], lo, out))


def _trapezoid(y, x=None, dx=1.0, axis=-1):
    ref = y if isinstance(y, torch.Tensor) else x
    y = like(y, ref)
    if x is None:
        return torch.trapezoid(y, dx=float(dx), dim=axis)
    return torch.trapezoid(y, like(x, ref), dim=axis)


TOOLBOX_IMPLS = {
    "nanmax": _nan_extreme(torch.amax, -torch.inf), "nanmin": _nan_extreme(torch.amin, torch.inf),
    "nanvar": _nanvar,
    "nanstd": lambda x, axis=None, ddof=0, keepdims=False: torch.sqrt(_nanvar(x, axis, ddof, keepdims)),
    "nanquantile": _nanquantile,
    "nanmedian": lambda x, axis=None, keepdims=False: _nanquantile(x, 0.5, axis, keepdims),
    "average": _average, "ptp": _ptp, "cov": _cov, "corrcoef": _corrcoef,
    "arccosh": torch.acosh, "logaddexp": binary(torch.logaddexp), "gammaln": torch.special.gammaln,
    "erfc": torch.special.erfc, "logit": torch.logit, "expit": torch.sigmoid,
    "digamma": torch.special.digamma, "polygamma": polygamma,
    "cummax": _running(torch.cummax), "cummin": _running(torch.cummin), "convolve": _convolve,
    "interp": _interp, "trapezoid": _trapezoid, "logspace": _logspace, "geomspace": _geomspace,
    **{name: _host(name) for name in ("nanargmax", "nanargmin", "nonzero", "argwhere", "digitize")},
}
