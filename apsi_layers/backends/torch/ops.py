"""The torch op set: every name of spec.OPS on torch tensors, differentiated by torch autograd.

One instance per (device, dtype): `TorchOps(torch.device("cpu"), torch.float64)`. Layers call
`ctx.ops.NAME(...)` and never learn which op set they run on. Hot spots are single torch kernels:
F.conv*d, F.*_pool*d, F.layer_norm, F.batch_norm, scaled_dot_product_attention, the fused
_VF.lstm/_VF.gru (cuDNN on CUDA; on the CPU ATen projects the inputs of all steps in one matrix
product, then loops in C++), index_add/scatter_reduce for graphs, F.cross_entropy.

Only apsi_layers.backends.torch imports this module, so torch loads only when the backend is used.
"""

import contextlib
import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from apsi_lang.errors import ApsiError

from .convert import host_to_device, to_host


class TorchOps:
    """The op set bound to one device and one floating dtype (the weights' dtype)."""

    def __init__(self, device="cpu", dtype=torch.float32):
        self.device = torch.device(device)
        self.dtype = dtype
        # softplus switches to x above `threshold`; in float64 exp(-20) still matters, so go further

    def __repr__(self):
        return f"TorchOps({self.device}, {str(self.dtype).removeprefix('torch.')})"

    # --- conversion and creation ------------------------------------------------------------------

    def constant(self, a):
        if isinstance(a, torch.Tensor):
            return a.detach().to(device=self.device, dtype=self.dtype)
        # cast on the host, then move: a device without float64 (Apple MPS) never sees a float64 tensor
        return host_to_device(np.asarray(a, dtype=np.float64), self.device, self.dtype)

    def is_tensor(self, value):
        return isinstance(value, torch.Tensor)

    def indices(self, a):
        if isinstance(a, torch.Tensor):
            return a.detach().to(device=self.device, dtype=torch.int64)
        return torch.as_tensor(np.asarray(a).astype(np.int64, copy=False), device=self.device)

    def to_numpy(self, t):
        if not isinstance(t, torch.Tensor):
            return np.array(t)
        return to_host(t) if t.is_floating_point() else t.detach().cpu().numpy().copy()

    @staticmethod
    def stop_gradient(x):
        return x.detach()

    def zeros(self, shape):
        return torch.zeros(_shape(shape), device=self.device, dtype=self.dtype)

    def ones(self, shape):
        return torch.ones(_shape(shape), device=self.device, dtype=self.dtype)

    # --- elementwise ------------------------------------------------------------------------------

    exp = staticmethod(torch.exp)
    log = staticmethod(torch.log)
    sqrt = staticmethod(torch.sqrt)
    abs = staticmethod(torch.abs)
    tanh = staticmethod(torch.tanh)
    sigmoid = staticmethod(torch.sigmoid)
    relu = staticmethod(torch.relu)
    silu = staticmethod(F.silu)

    @staticmethod
    def gelu(x):
        return F.gelu(x, approximate="tanh")

    @staticmethod
    def softplus(x):
        # above the threshold softplus(x) == x to the dtype's precision (NumPy's float64 rule: 40)
        return F.softplus(x, threshold=40.0 if x.dtype == torch.float64 else 20.0)

    @staticmethod
    def leaky_relu(x, slope=0.01):
        return F.leaky_relu(x, slope)

    @staticmethod
    def elu(x, alpha=1.0):
        return F.elu(x, alpha)

    def maximum(self, a, b):
        a, b = self._pair(a, b)
        return torch.maximum(a, b)

    def minimum(self, a, b):
        a, b = self._pair(a, b)
        return torch.minimum(a, b)

    def where(self, cond, a, b):
        return torch.where(self._bool(cond), a, b)

    @staticmethod
    def clip(x, lo, hi):
        return torch.clamp(x, lo, hi)

    # --- reductions and normalisers ---------------------------------------------------------------

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        if axis is None:
            return x.sum() if not keepdims else x.sum(dim=tuple(range(x.ndim)), keepdim=True)
        return x.sum(dim=axis, keepdim=keepdims)

    @staticmethod
    def mean(x, axis=None, keepdims=False):
        if axis is None:
            return x.mean() if not keepdims else x.mean(dim=tuple(range(x.ndim)), keepdim=True)
        return x.mean(dim=axis, keepdim=keepdims)

    @staticmethod
    def max(x, axis=None, keepdims=False):
        # amax shares the gradient evenly between tied maxima, as the NumPy op set does
        if axis is None:
            axis = tuple(range(x.ndim))
        return torch.amax(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def logsumexp(x, axis=-1, keepdims=False):
        if axis is None:
            axis = tuple(range(x.ndim))
        return torch.logsumexp(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def softmax(x, axis=-1):
        return F.softmax(x, dim=axis)

    @staticmethod
    def log_softmax(x, axis=-1):
        return F.log_softmax(x, dim=axis)

    # --- shapes and indexing ----------------------------------------------------------------------

    @staticmethod
    def reshape(x, shape):
        return x.reshape(_shape(shape))

    @staticmethod
    def transpose(x, axes):
        return x.permute(*axes)

    @staticmethod
    def concat(xs, axis):
        return torch.cat(list(xs), dim=axis)

    @staticmethod
    def stack(xs, axis):
        return torch.stack(list(xs), dim=axis)

    @staticmethod
    def expand_dims(x, axis):
        return x.unsqueeze(axis)

    def take(self, x, idx, axis=0):
        if not isinstance(idx, torch.Tensor):
            idx = self.indices(idx)
        elif idx.is_floating_point():     # ids a layer computed (category_lookup's index), as NumPy
            idx = idx.long()               # takes them
        axis %= x.ndim
        flat = torch.index_select(x, axis, idx.reshape(-1))
        if idx.ndim == 1:
            return flat
        return flat.reshape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])

    # --- linear algebra ---------------------------------------------------------------------------

    @staticmethod
    def matmul(a, b):
        return torch.matmul(a, b)

    @staticmethod
    def dense(x, w, b=None):
        # F.linear takes w as [out, in]; w.t() is a view, so this is one GEMM (+ bias) without a copy.
        # (Under CPU bf16 autocast a contiguous copy of w.t() per call was measured slower with
        # PyTorch 2.13: 0.59 against 0.43 ms for a 784x256 layer's forward and backward.)
        if b is not None and b.ndim == 1 and (x.ndim == 2 or (x.ndim > 2 and x.is_contiguous())):
            return _addmm(x, w, b)
        return F.linear(x, w.t(), b)

    # --- fused hot spots --------------------------------------------------------------------------

    def conv(self, x, w, b, stride, padding, dilation, groups):
        nd = x.ndim - 2
        fn = _CONV.get(nd)
        if fn is None:
            raise ApsiError(f"conv: {nd} spatial dimensions are not supported on torch (1, 2 or 3)")
        x, pad = _pad_if_uneven(x, padding, 0.0)
        return fn(x, w, b, tuple(stride), pad, tuple(dilation), groups)

    def max_pool(self, x, size, stride, padding):
        nd = x.ndim - 2
        size, stride = tuple(size), tuple(stride)
        # torch's own padding must be symmetric and at most half the window; pad with -inf ourselves
        # otherwise (the same numbers, since -inf never wins a max)
        ok = all(lo == hi and 2 * lo <= k for (lo, hi), k in zip(padding, size))
        if ok:
            return _MAX_POOL[nd](x, size, stride, tuple(lo for lo, _ in padding))
        x = F.pad(x, _flat_pad(padding), value=-math.inf)
        return _MAX_POOL[nd](x, size, stride, 0)

    def avg_pool(self, x, size, stride, padding):
        nd = x.ndim - 2
        size, stride = tuple(size), tuple(stride)
        ok = all(lo == hi and 2 * lo <= k for (lo, hi), k in zip(padding, size))
        if ok:
            return _AVG_POOL[nd](x, size, stride, tuple(lo for lo, _ in padding))
        # zeros padded explicitly count in the mean, as torch's count_include_pad does
        x = F.pad(x, _flat_pad(padding), value=0.0)
        return _AVG_POOL[nd](x, size, stride, 0)

    def batch_norm_train(self, x, gamma, beta, eps):
        c = x.shape[1]
        # F.batch_norm with momentum 1 writes the batch statistics into the "running" buffers: one
        # fused pass gives y and the statistics; the buffer holds the unbiased variance
        # statistics in the weights' dtype: under autocast x may be bfloat16 while gamma is float32
        dtype = gamma.dtype if gamma is not None else x.dtype
        mean = torch.zeros(c, device=x.device, dtype=dtype)
        var = torch.ones(c, device=x.device, dtype=dtype)
        y = F.batch_norm(x, mean, var, gamma, beta, training=True, momentum=1.0, eps=eps)
        n = x.numel() // c
        return y, mean, var * ((n - 1) / n) if n > 1 else var * 0.0

    @staticmethod
    def batch_norm_eval(x, gamma, beta, mean, var, eps):
        if mean.requires_grad or var.requires_grad:     # torch's kernel takes statistics as constants
            shape = (1, -1) + (1,) * (x.ndim - 2)
            y = (x - mean.reshape(shape)) * torch.rsqrt(var.reshape(shape) + eps)
            y = y if gamma is None else y * gamma.reshape(shape)
            return y if beta is None else y + beta.reshape(shape)
        return F.batch_norm(x, mean, var, gamma, beta, training=False, eps=eps)

    @staticmethod
    def layer_norm(x, gamma, beta, eps):
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)

    @staticmethod
    def rms_norm(x, gamma, eps):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), gamma, eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma

    def lstm(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh, mask=None):
        b, h = x.shape[0], w_hh.shape[1]
        h0 = self._state(h0, b, h, x)
        c0 = self._state(c0, b, h, x)
        if mask is None:
            with _full_precision_on_cpu(x) as f:
                ys, h_t, c_t = _fused("lstm")(f(x), (f(h0)[None], f(c0)[None]), (w_ih, w_hh, b_ih, b_hh),
                                              True, 1, 0.0, torch.is_grad_enabled(), False, True)
            return ys, h_t[0], c_t[0]
        return _masked_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, self._bool(mask))

    def gru(self, x, h0, w_ih, w_hh, b_ih, b_hh, mask=None):
        b, h = x.shape[0], w_hh.shape[1]
        h0 = self._state(h0, b, h, x)
        if mask is None:
            with _full_precision_on_cpu(x) as f:
                ys, h_t = _fused("gru")(f(x), f(h0)[None], (w_ih, w_hh, b_ih, b_hh),
                                        True, 1, 0.0, torch.is_grad_enabled(), False, True)
            return ys, h_t[0]
        return _masked_gru(x, h0, w_ih, w_hh, b_ih, b_hh, self._bool(mask))

    def attention(self, q, k, v, mask=None, causal=False):
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        mask = self._bool(mask)
        if causal:  # SDPA takes one or the other; fold the causal triangle into the mask
            tq, tk = q.shape[-2], k.shape[-2]
            mask = mask & torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
        if _sdpa_zeroes_empty_rows(q.device):  # a row that may attend nowhere comes out as zeros
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        # GPU kernels may give NaN there: let such rows attend everywhere, then zero them (no sync)
        anywhere = mask.any(-1, keepdim=True)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~anywhere)
        return out * anywhere.to(out.dtype)

    def softmax_cross_entropy(self, logits, labels, weights=None):
        if not isinstance(labels, torch.Tensor):
            labels = self.indices(labels)
        c = logits.shape[-1]
        if weights is None:
            return F.cross_entropy(logits.reshape(-1, c), labels.reshape(-1))
        # Keras's sum_over_batch_size: sum(w * loss) / count (F's weight= divides by the weights' sum)
        each = F.cross_entropy(logits.reshape(-1, c), labels.reshape(-1), reduction="none")
        w = weights.reshape(tuple(weights.shape) + (1,) * (labels.ndim - weights.ndim))
        return (each * w.expand(labels.shape).reshape(-1).to(each.dtype)).sum() / each.numel()

    def bce_with_logits(self, logits, targets):
        if not isinstance(targets, torch.Tensor):
            targets = self.constant(targets)
        return F.binary_cross_entropy_with_logits(logits, targets.to(logits.dtype))

    @staticmethod
    def dropout(x, rate, rng):
        if rate <= 0.0:
            return x
        keep = torch.empty(x.shape, device=x.device, dtype=x.dtype).bernoulli_(1.0 - rate, generator=rng)
        return x * keep.mul_(1.0 / (1.0 - rate))

    def normal(self, shape, rng):
        return torch.randn(_shape(shape), generator=rng, device=self.device, dtype=self.dtype)

    def rng(self, seed):
        g = torch.Generator(device=self.device)
        g.manual_seed(int(seed))
        return g

    # --- graphs -----------------------------------------------------------------------------------

    def scatter_add(self, src, index, n):
        out = torch.zeros((n,) + tuple(src.shape[1:]), device=src.device, dtype=src.dtype)
        return out.index_add(0, index, src)

    def segment_softmax(self, scores, index, n):
        shape = (n,) + tuple(scores.shape[1:])
        idx = index.reshape((-1,) + (1,) * (scores.ndim - 1)).expand(scores.shape)
        # the per-target maximum only keeps exp() in range; softmax does not depend on it, so it
        # carries no gradient
        top = torch.zeros(shape, device=scores.device, dtype=scores.dtype).scatter_reduce(
            0, idx, scores.detach(), reduce="amax", include_self=False)
        e = torch.exp(scores - top.index_select(0, index))
        total = torch.zeros(shape, device=scores.device, dtype=scores.dtype).index_add(0, index, e)
        return e / total.index_select(0, index)

    def bincount(self, index, n):
        return torch.bincount(index, minlength=n).to(self.dtype)

    # --- helpers (not ops) ------------------------------------------------------------------------

    def _pair(self, a, b):
        if not isinstance(a, torch.Tensor):
            a = torch.as_tensor(a, device=b.device, dtype=b.dtype)
        if not isinstance(b, torch.Tensor):
            b = torch.as_tensor(b, device=a.device, dtype=a.dtype)
        return a, b

    def _bool(self, cond):
        if isinstance(cond, torch.Tensor):
            return cond if cond.dtype == torch.bool else cond.to(torch.bool)
        return torch.as_tensor(np.asarray(cond, dtype=bool), device=self.device)

    @staticmethod
    def _state(s, b, h, x):
        if s is None:
            return torch.zeros(b, h, device=x.device, dtype=x.dtype)
        return s


@contextlib.contextmanager
def _full_precision_on_cpu(x):
    """The fused LSTM/GRU kernels have no bfloat16/float16 version on many CPUs (oneDNN refuses the
    primitive), so under CPU autocast they run in float32; yields the cast to apply to their inputs."""
    if not _cpu_autocast(x):
        yield lambda t: t
        return
    with torch.autocast("cpu", enabled=False):
        yield lambda t: t.float() if t.is_floating_point() else t


def _fused(cell):
    """torch._VF.lstm / gru: the kernel behind torch.nn.LSTM / GRU. Under torch.compile it runs outside
    the compiled graph, as torch.nn.LSTM does (TorchDynamo leaves RNN modules alone: Inductor cannot
    lower oneDNN's fused RNN, and fails at run time with "expected Tensor() for op mkldnn_rnn_layer")."""
    if _compiling():
        return _eager(cell)
    return _QUIET[cell]


# cuDNN warns on every call whose weights are separate tensors (the layers keep them apart, in the
# parameter tree) and advises nn.Module.flatten_parameters(), which means nothing to an Apsi program:
# the weights are packed for the call, as the warning says, and the warning is kept from the user
_UNFLATTENED = "RNN module weights are not part of single contiguous chunk of memory"


def _quiet(cell):
    def run(*args):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_UNFLATTENED)
            return getattr(torch._VF, cell)(*args)
    return run


_QUIET = {cell: _quiet(cell) for cell in ("lstm", "gru")}


def _compiling():
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling()


def _outside_compile(cell):
    run = _quiet(cell)
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return disable(run) if disable is not None else run


# made when a model is compiled, not at import: torch.compiler.disable imports TorchDynamo, which
# doubled the start (~1 s more than `import torch`) of a torch program that never compiles or trains
_EAGER: dict = {}


def ready_for_compile():
    """Make the cells' eager versions before torch.compile traces them: made inside the trace, the
    wrapper would be a graph break of its own instead of the one torch.compiler.disable says."""
    for cell in ("lstm", "gru"):
        _eager(cell)


def _eager(cell):
    if cell not in _EAGER:          # a Python caller's own torch.compile of an ApsiModule: in the trace
        _EAGER[cell] = _outside_compile(cell)
    return _EAGER[cell]


def _sdpa_zeroes_empty_rows(device):
    """True where SDPA's kernels give zeros (not NaN) for a query row whose mask is all False: the CPU.
    (A function, so the tests can run the GPU branch on the CPU.)"""
    return device.type == "cpu"


def _cpu_autocast(x):
    return x.device.type == "cpu" and torch.is_autocast_enabled("cpu")


def _shape(shape):
    return (int(shape),) if isinstance(shape, int) else tuple(int(n) for n in shape)


def _flat_pad(padding):
    """((lo, hi) per spatial dim, first dim first) -> F.pad's flat list, last dim first."""
    out = []
    for lo, hi in reversed(tuple(padding)):
        out += [int(lo), int(hi)]
    return out


def _pad_if_uneven(x, padding, value):
    """(x, the symmetric padding torch's kernel takes): uneven padding is applied here with F.pad."""
    padding = tuple(tuple(p) for p in padding)
    if all(lo == hi for lo, hi in padding):
        return x, tuple(lo for lo, _ in padding)
    return F.pad(x, _flat_pad(padding), value=value), (0,) * len(padding)


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _masked_lstm(x, h, c, w_ih, w_hh, b_ih, b_hh, mask):
    """LSTM with a step mask: the input projection of every step in one GEMM, then the recurrence."""
    xs = F.linear(x, w_ih, b_ih + b_hh)                     # [B, T, 4H]
    w_t = w_hh.t()
    ys = []
    for t in range(x.shape[1]):
        gates = torch.addmm(xs[:, t], h, w_t)
        i, f, g, o = gates.chunk(4, dim=1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_new = torch.sigmoid(o) * torch.tanh(c_new)
        m = mask[:, t, None]
        c = torch.where(m, c_new, c)
        h = torch.where(m, h_new, h)
        ys.append(h)
    return torch.stack(ys, dim=1), h, c


def _masked_gru(x, h, w_ih, w_hh, b_ih, b_hh, mask):
    """GRU with a step mask (torch's formulas: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)))."""
    xs = F.linear(x, w_ih, b_ih)                            # [B, T, 3H]
    ys = []
    for t in range(x.shape[1]):
        hs = F.linear(h, w_hh, b_hh)
        xr, xz, xn = xs[:, t].chunk(3, dim=1)
        hr, hz, hn = hs.chunk(3, dim=1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        h_new = (1.0 - z) * n + z * h
        h = torch.where(mask[:, t, None], h_new, h)
        ys.append(h)
    return torch.stack(ys, dim=1), h


def op_names():
    """The op names this op set implements (public attributes of TorchOps)."""
    return {n for n in dir(TorchOps) if not n.startswith("_")}


class NumpyStreamOps(TorchOps):
    """The torch op set drawing dropout masks and normal samples from NumPy's stream, exactly as the
    NumPy op set does: fit(precision="fp64") uses it, so a model with dropout or a VAE trains to the
    same numbers as on NumPy (check_torch uses it to compare random layers number for number). The
    draws are made on the host and moved, which costs a copy per draw; other precisions use torch's
    own generator on the device."""

    def rng(self, seed):
        return np.random.default_rng(seed)

    def normal(self, shape, rng):
        return self.constant(rng.standard_normal(_shape(shape)))

    def dropout(self, x, rate, rng):
        if rate <= 0.0:
            return x
        keep = rng.random(tuple(x.shape)) >= rate
        return x * self.constant(keep * (1.0 / (1.0 - rate)))


def _addmm(x, w, b):
    """What F.linear(x, w.t(), b) runs for a bias and a 2-D (or contiguous N-D) x, called directly:
    addmm(b, x, w.t().t()) on the rows of x. The same kernel and bits (forward and gradients, under
    autocast too), without the two transposes, which cost an op and two backward nodes per layer and
    step: most of a small model's overhead against torch.nn (issue 36)."""
    if x.ndim == 2:
        return torch.addmm(b, x, w)
    rows = math.prod(x.shape[:-1])          # not -1: a dimension may be 0 (as ATen's own flattening)
    return torch.addmm(b, x.reshape(rows, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])
