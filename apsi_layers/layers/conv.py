"""Convolution and pooling, channels first: conv1d on [B, C, L], conv2d on [B, C, H, W]."""

import math

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import EMPTY, Layer, fmt, positive_int
from .core import activation_fn
from .registry import parity_cases, register


def tuple_arg(kind, arg, value, dims):
    """An int or a list of `dims` positive ints, as a tuple."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value] * dims
    if (isinstance(value, list | tuple) and len(value) == dims
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        return tuple(value)
    raise ApsiError(f"{kind}: {arg} must be a positive int or a list of {dims}, got {show(value, True)}")


def padding_arg(kind, value, dims):
    """"valid", "same", an int, or a list of ints per dimension (kept as given; pairs come later)."""
    if value in ("valid", "same"):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return (value,) * dims
    if (isinstance(value, list | tuple) and len(value) == dims
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
        return tuple(value)
    raise ApsiError(f"{kind}: padding must be \"valid\", \"same\", an int >= 0 or a list of {dims}, "
                    f"got {show(value, True)}")


def pad_pairs(padding, sizes, kernel, stride, dilation):
    """((lo, hi), ...) per spatial dimension. "same" keeps ceil(n / stride) outputs, the extra
    padding going after (as TensorFlow and, for stride 1, PyTorch do)."""
    if padding == "valid":
        return tuple((0, 0) for _ in kernel)
    if padding == "same":
        pairs = []
        for n, k, s, d in zip(sizes, kernel, stride, dilation, strict=True):
            span = d * (k - 1) + 1
            total = max((math.ceil(n / s) - 1) * s + span - n, 0) if n is not None else span - 1
            pairs.append((total // 2, total - total // 2))
        return tuple(pairs)
    return tuple((p, p) for p in padding)


def out_sizes(layer, sizes, kernel, stride, pads, dilation):
    out = []
    for n, k, s, (lo, hi), d in zip(sizes, kernel, stride, pads, dilation, strict=True):
        if n is None:
            out.append(None)
            continue
        m = (n + lo + hi - d * (k - 1) - 1) // s + 1
        if m < 1:
            layer.fail(f"the input size {n} is too small for kernel {k} (dilation {d}, padding "
                       f"{lo}+{hi}); use padding=\"same\" or a smaller kernel")
        out.append(m)
    return tuple(out)


def spatial(layer, input_shape, dims, what):
    if not isinstance(input_shape, tuple) or len(input_shape) != dims + 1 or input_shape[0] is None:
        layer.fail(f"expects per-sample inputs {what} (channels first), got {fmt(input_shape)}"
                   + ("; reshape flat images first, e.g. reshape(x, [n, 1, 28, 28])"
                      if isinstance(input_shape, tuple) and len(input_shape) == 1 else ""))
    return input_shape[0], input_shape[1:]


class Conv(Layer):
    dims = 2

    def __init__(self, filters, kernel, stride=1, padding="valid", dilation=1, groups=1, bias=True,
                 activation=None, inputs=None, name=None):
        kind = self.kind
        super().__init__(name, inputs, stride=None if stride == 1 else stride,
                         padding=None if padding == "valid" else padding,
                         dilation=None if dilation == 1 else dilation, groups=None if groups == 1 else groups,
                         bias=None if bias else False,
                         activation=activation)
        self.filters = positive_int(kind, "filters", filters)
        self.kernel = tuple_arg(kind, "kernel", kernel, self.dims)
        self.stride = tuple_arg(kind, "stride", stride, self.dims)
        self.dilation = tuple_arg(kind, "dilation", dilation, self.dims)
        self.padding = padding_arg(kind, padding, self.dims)
        self.groups = positive_int(kind, "groups", groups)
        if self.filters % self.groups:
            raise ApsiError(f"{kind}: filters ({filters}) must be a multiple of groups ({groups})")
        self.bias = bool(bias)
        self.act = activation_fn(kind, activation)

    def positional(self):
        return [self.filters, list(self.kernel) if len(set(self.kernel)) > 1 else self.kernel[0]]

    def build(self, rng, input_shape):
        what = "[channels, length]" if self.dims == 1 else "[channels, height, width]"
        channels, sizes = spatial(self, input_shape, self.dims, what)
        if channels % self.groups:
            self.fail(f"the input has {channels} channels, not a multiple of groups={self.groups}")
        per_group = channels // self.groups
        bound = 1.0 / math.sqrt(per_group * math.prod(self.kernel))     # torch.nn.Conv*d's default
        p = {"w": rng.uniform((self.filters, per_group) + self.kernel, bound)}
        if self.bias:
            p["b"] = rng.uniform((self.filters,), bound)
        pads = pad_pairs(self.padding, sizes, self.kernel, self.stride, self.dilation)
        return Record(**p), (self.filters,) + out_sizes(self, sizes, self.kernel, self.stride, pads,
                                                         self.dilation)

    def apply(self, params, x, ctx):
        w = params.w
        if len(x.shape) != self.dims + 2 or x.shape[1] != w.shape[1] * self.groups:
            self.fail(f"expects inputs [batch, {w.shape[1] * self.groups} channels, "
                      f"{'length' if self.dims == 1 else 'height, width'}], got shape {list(x.shape)}")
        pads = pad_pairs(self.padding, x.shape[2:], self.kernel, self.stride, self.dilation)
        y = ctx.ops.conv(x, w, params.b if self.bias else None, self.stride, pads, self.dilation,
                         self.groups)
        return self.act(ctx.ops, y) if self.act else y


class Conv1d(Conv):
    kind = "conv1d"
    dims = 1


class Conv2d(Conv):
    kind = "conv2d"
    dims = 2


class Pool(Layer):
    dims = 2
    op = "max_pool"

    def __init__(self, size=2, stride=None, padding="valid", name=None):
        super().__init__(name, None, stride=stride, padding=None if padding == "valid" else padding)
        self.size = tuple_arg(self.kind, "size", size, self.dims)
        self.stride = self.size if stride is None else tuple_arg(self.kind, "stride", stride, self.dims)
        self.padding = padding_arg(self.kind, padding, self.dims)
        self.ones = (1,) * self.dims

    def positional(self):
        return [self.size[0] if len(set(self.size)) == 1 else list(self.size)]

    def build(self, rng, input_shape):
        what = "[channels, length]" if self.dims == 1 else "[channels, height, width]"
        channels, sizes = spatial(self, input_shape, self.dims, what)
        pads = pad_pairs(self.padding, sizes, self.size, self.stride, self.ones)
        return EMPTY, (channels,) + out_sizes(self, sizes, self.size, self.stride, pads, self.ones)

    def apply(self, params, x, ctx):
        if len(x.shape) != self.dims + 2:
            self.fail(f"expects inputs with {self.dims} spatial axes after [batch, channels], got shape "
                      f"{list(x.shape)}")
        pads = pad_pairs(self.padding, x.shape[2:], self.size, self.stride, self.ones)
        return getattr(ctx.ops, self.op)(x, self.size, self.stride, pads)


class MaxPool1d(Pool):
    kind, dims, op = "max_pool1d", 1, "max_pool"


class MaxPool2d(Pool):
    kind, dims, op = "max_pool2d", 2, "max_pool"


class AvgPool1d(Pool):
    kind, dims, op = "avg_pool1d", 1, "avg_pool"


class AvgPool2d(Pool):
    kind, dims, op = "avg_pool2d", 2, "avg_pool"


class GlobalAvgPool(Layer):
    """The mean over every axis after the channels ([B, C, ...] -> [B, C]), or over `axis`."""

    kind = "global_avg_pool"

    def __init__(self, axis=None, name=None):
        super().__init__(name, None, axis=axis)
        if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool) or axis == 0):
            raise ApsiError(f"global_avg_pool: axis must be a non-zero int (axis 0 is the batch), "
                            f"got {show(axis, True)}")
        self.axis = axis

    def build(self, rng, input_shape):
        if not isinstance(input_shape, tuple) or len(input_shape) < (1 if self.axis else 2):
            self.fail(f"expects per-sample inputs [channels, ...], got {fmt(input_shape)}")
        if self.axis is None:
            return EMPTY, input_shape[:1]
        a = self.axis if self.axis < 0 else self.axis - 1      # shapes leave out the batch axis
        if not -len(input_shape) <= a < len(input_shape):
            self.fail(f"axis={self.axis} is outside inputs of per-sample shape {fmt(input_shape)} "
                      f"(axes 1..{len(input_shape)}, or negative from the end)")
        a %= len(input_shape)
        return EMPTY, input_shape[:a] + input_shape[a + 1:]

    def apply(self, params, x, ctx):
        axes = tuple(range(2, len(x.shape))) if self.axis is None else self.axis
        return ctx.ops.mean(x, axis=axes)


@register()
def conv1d(filters, kernel, stride=1, padding="valid", dilation=1, groups=1, bias=True,
           activation=None, inputs=None, name=None):
    """1-D convolution over [B, C, L] (weights [filters, C/groups, kernel], as torch.nn.Conv1d)."""
    return Conv1d(filters, kernel, stride, padding, dilation, groups, bias, activation, inputs, name)


@register()
def conv2d(filters, kernel, stride=1, padding="valid", dilation=1, groups=1, bias=True,
           activation=None, inputs=None, name=None):
    """2-D convolution over [B, C, H, W] (weights [filters, C/groups, kh, kw], as torch.nn.Conv2d)."""
    return Conv2d(filters, kernel, stride, padding, dilation, groups, bias, activation, inputs, name)


@register()
def max_pool1d(size=2, stride=None, padding="valid", name=None):
    return MaxPool1d(size, stride, padding, name)


@register()
def max_pool2d(size=2, stride=None, padding="valid", name=None):
    return MaxPool2d(size, stride, padding, name)


@register()
def avg_pool1d(size=2, stride=None, padding="valid", name=None):
    return AvgPool1d(size, stride, padding, name)


@register()
def avg_pool2d(size=2, stride=None, padding="valid", name=None):
    return AvgPool2d(size, stride, padding, name)


@register()
def global_avg_pool(axis=None, name=None):
    return GlobalAvgPool(axis, name)


@parity_cases
def _cases(L, d):
    seq_of = L.sequential
    pools = seq_of(L.max_pool2d(2), L.avg_pool2d(3, stride=1, padding="same"),
                   L.max_pool2d(3, stride=2, padding="same"), L.global_avg_pool())
    return [
        dict(name="conv1d", model=seq_of(L.conv1d(4, 3, padding="same", inputs=[3, 10]),
                                         L.conv1d(4, 2, stride=2, dilation=2, groups=2), L.flatten(),
                                         L.dense(2)), x=d.x(2, 3, 10)),
        dict(name="conv2d_opts", model=seq_of(L.conv2d(4, [3, 2], stride=[2, 1], padding=1, inputs=[2, 8, 8]),
                                              L.conv2d(4, 3, padding="same", dilation=2, groups=4)), x=d.img),
        dict(name="pooling", model=pools, x=d.img, input_shape=[2, 8, 8]),
        dict(name="pooling1d", model=seq_of(L.max_pool1d(3, stride=2, padding="same"), L.avg_pool1d(2),
                                            L.flatten()), x=d.x(2, 3, 10), input_shape=[3, 10]),
    ]
