"""Preprocessing layers that learn from data: normalization, category_lookup, impute.

What they learn sits in the parameter tree under `state` (as batch norm's running statistics): the
optimizer never changes it, save_params/save_model and checkpoints carry it, and predict (NumPy,
torch, `use web`) applies it exactly as fit did. It is learnt by adapt(model, params, data), which
reads the training data once, streamed (an array, a mapped .npy file or a dataset), and returns the
tree with each preprocessing layer's state filled in. Adapt on the training split only: statistics
of validation or test rows in the model would leak them into training.
"""

import contextlib

import numpy as np

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, show

from .base import Layer, field, fmt
from .registry import parity_cases, register


def _features(layer, input_shape):
    if not isinstance(input_shape, tuple) or not input_shape or input_shape[-1] is None:
        layer.fail(f"works on the last axis (features) and needs its size, got inputs {fmt(input_shape)}")
    return input_shape[-1]


class Normalization(Layer):
    """(x - mean) / sqrt(var + eps) per feature (the last axis), mean and var learnt by adapt."""

    kind = "normalization"

    def __init__(self, eps=1e-12, name=None):
        super().__init__(name, None, eps=None if eps == 1e-12 else eps)
        if isinstance(eps, bool) or not isinstance(eps, int | float) or eps < 0:
            raise ApsiError(f"normalization: eps must be a number >= 0, got {show(eps, True)}")
        self.eps = float(eps)

    def build(self, rng, input_shape):
        f = _features(self, input_shape)
        return Record(state=Record(mean=rng.zeros((f,)), var=rng.ones((f,)))), input_shape

    def apply(self, params, x, ctx):
        st = params.state
        return (x - st.mean) / ctx.ops.sqrt(st.var + self.eps)

    def learner(self):
        return _Moments()


class _Moments:
    """Mean and (population) variance in one pass, block by block (Chan et al.'s pairwise update),
    in float64."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, None, None

    def add(self, block):
        b = block.reshape(-1, block.shape[-1]).astype(np.float64)
        if not len(b):
            return
        n_b, mean_b = len(b), b.mean(axis=0)
        m2_b = ((b - mean_b) ** 2).sum(axis=0)
        if self.mean is None:
            self.n, self.mean, self.m2 = n_b, mean_b, m2_b
            return
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (n_b / n)
        self.m2 = self.m2 + m2_b + delta ** 2 * (self.n * n_b / n)
        self.n = n

    def state(self, like):
        if self.mean is None:
            raise ApsiError("adapt: normalization saw no rows")
        var = self.m2 / self.n
        # A feature constant in the training split has no scale to learn: sqrt(0 + eps) would multiply
        # any later difference by 1e6. It keeps its scale (variance 1), as scikit-learn's StandardScaler
        # does; "constant" up to the rounding of n values of this size (the mean's own error).
        rounding = (self.n * np.finfo(np.float64).eps * np.abs(self.mean)) ** 2
        return Record(mean=self.mean, var=np.where(var <= rounding, 1.0, var))


class CategoryLookup(Layer):
    """Category codes (numbers) to one-hot columns: [unknown, c_1, …, c_K] with the K most frequent
    codes seen by adapt (ties: the smaller code first), sorted. A code adapt did not keep (or never
    saw) sets the unknown column; unknown="zeros" leaves all columns 0 for it instead; output="index"
    gives its column number (0 = unknown) as a float."""

    kind = "category_lookup"

    def __init__(self, max_categories, unknown="column", output="one_hot", name=None):
        super().__init__(name, None, unknown=None if unknown == "column" else unknown,
                         output=None if output == "one_hot" else output)
        if type(max_categories) is not int or max_categories < 1:
            raise ApsiError(f"category_lookup: max_categories must be an int >= 1, got "
                            f"{show(max_categories, True)}")
        if unknown not in ("column", "zeros"):
            raise ApsiError(f'category_lookup: unknown must be "column" or "zeros", got '
                            f'{show(unknown, True)}')
        if output not in ("one_hot", "index"):
            raise ApsiError(f'category_lookup: output must be "one_hot" or "index", got {show(output, True)}')
        self.k, self.unknown, self.output = max_categories, unknown, output

    def positional(self):
        return [self.k]

    def build(self, rng, input_shape):
        if input_shape not in ((), (1,)):
            self.fail(f"takes one category code per sample (inputs [N] or [N, 1]), got {fmt(input_shape)}")
        # unused slots hold NaN, which equals no code
        values = rng.full((self.k,), float("nan"))
        out = (1,) if self.output == "index" else (self.k + 1,)
        return Record(state=Record(values=values)), out

    def apply(self, params, x, ctx):
        ops = ctx.ops
        codes = ops.reshape(x, (x.shape[0], 1))
        hit = codes == ops.expand_dims(params.state.values, 0)          # [N, K]
        ones, zeros = ops.ones((1, self.k)), ops.zeros((1, self.k))
        found = ops.where(hit, ones, zeros)
        known = ops.sum(found, axis=1, keepdims=True)
        if self.output == "index":
            position = ops.constant(np.arange(1, self.k + 1, dtype=np.float64).reshape(1, -1))
            return ops.sum(found * position, axis=1, keepdims=True)
        first = 1.0 - known if self.unknown == "column" else known * 0.0
        return ops.concat([first, found], 1)

    def learner(self):
        return _Counts(self.k)


class _Counts:
    def __init__(self, k):
        self.k, self.counts = k, {}

    def add(self, block):
        values, counts = np.unique(block.reshape(-1).astype(np.float64), return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist(), strict=True):
            if v == v:                       # NaN is no category
                self.counts[v] = self.counts.get(v, 0) + c

    def state(self, like):
        top = sorted(self.counts.items(), key=lambda vc: (-vc[1], vc[0]))[:self.k]
        values = np.full(self.k, np.nan)
        values[:len(top)] = sorted(v for v, _ in top)
        return Record(values=values)


STRATEGIES = ("mean", "median", "most_frequent", "constant")


class Impute(Layer):
    """Missing values (NaN) replaced per feature: by the mean, the median or the most frequent value
    adapt saw (scikit-learn's SimpleImputer strategies; ties: the smallest value), or by `fill`
    (strategy="constant"). fit and predict accept NaN in the inputs of a model starting with it."""

    kind = "impute"

    def __init__(self, strategy="mean", fill=0.0, name=None):
        super().__init__(name, None, strategy=None if strategy == "mean" else strategy,
                         fill=None if fill == 0.0 else fill)
        if strategy not in STRATEGIES:
            raise ApsiError(f"impute: strategy must be one of {', '.join(map(repr, STRATEGIES))}, got "
                            f"{show(strategy, True)}".replace("'", '"'))
        if isinstance(fill, bool) or not isinstance(fill, int | float) or fill != fill:
            raise ApsiError(f"impute: fill must be a number, got {show(fill, True)}")
        self.strategy, self.fill = strategy, float(fill)

    def build(self, rng, input_shape):
        f = _features(self, input_shape)
        values = rng.full((f,), self.fill)
        return Record(state=Record(values=values)), input_shape

    def apply(self, params, x, ctx):
        return ctx.ops.where(x != x, params.state.values, x)      # (NaN is the one value not equal to itself)

    def learner(self):
        if self.strategy == "mean":
            return _NanMeans(self.fill)
        return None if self.strategy == "constant" else _ValueCounts(self.strategy, self.fill)


class _NanMeans:
    def __init__(self, fill):
        self.fill, self.total, self.count = fill, None, None

    def add(self, block):
        b = block.reshape(-1, block.shape[-1]).astype(np.float64)
        seen = ~np.isnan(b)
        total, count = np.where(seen, b, 0.0).sum(axis=0), seen.sum(axis=0)
        self.total = total if self.total is None else self.total + total
        self.count = count if self.count is None else self.count + count

    def state(self, like):
        if self.total is None:
            raise ApsiError("adapt: impute saw no rows")
        with np.errstate(invalid="ignore", divide="ignore"):
            means = self.total / self.count
        return Record(values=np.where(self.count > 0, means, self.fill))   # a column all NaN: fill


class _ValueCounts:
    """Per feature, each distinct value seen and how often (NaN left out), merged block by block:
    memory of the distinct values, not of the rows. The median and the most frequent value (the
    smallest of those tied) come from them exactly."""

    def __init__(self, strategy, fill):
        self.strategy, self.fill, self.features = strategy, fill, None

    def add(self, block):
        b = block.reshape(-1, block.shape[-1]).astype(np.float64)
        if self.features is None:
            self.features = [(np.empty(0), np.empty(0, np.int64)) for _ in range(b.shape[1])]
        for j, (values, counts) in enumerate(self.features):
            col = b[:, j]
            new, times = np.unique(col[~np.isnan(col)], return_counts=True)
            self.features[j] = _merge(np.concatenate([values, new]), np.concatenate([counts, times]))

    def state(self, like):
        if self.features is None:
            raise ApsiError("adapt: impute saw no rows")
        pick = _median if self.strategy == "median" else _most_frequent
        return Record(values=np.array([pick(v, c) if len(v) else self.fill for v, c in self.features]))


def _merge(values, counts):
    if not len(values):
        return values, counts
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return values[starts], np.add.reduceat(counts, starts)


def _median(values, counts):
    """np.median of the values repeated counts times (the mean of the middle two for an even count)."""
    ends = np.cumsum(counts)
    n = int(ends[-1])
    low, high = np.searchsorted(ends, [(n - 1) // 2, n // 2], side="right")
    return (values[low] + values[high]) / 2


def _most_frequent(values, counts):
    return values[int(np.argmax(counts))]         # (values ascending: the first of the tied is the smallest)


@register()
def normalization(eps=1e-12, name=None):
    """A layer (x - mean) / sqrt(var + eps) per feature; adapt(model, params, x_train) learns them."""
    return Normalization(eps, name)


@register()
def category_lookup(max_categories, unknown="column", output="one_hot", name=None):
    """A layer from category codes to one-hot columns (column 0: unknown); adapt learns the codes."""
    return CategoryLookup(max_categories, unknown, output, name)


@register()
def impute(strategy="mean", fill=0.0, name=None):
    """A layer filling NaN inputs per feature (the mean, median or most frequent value adapt saw, or
    fill)."""
    return Impute(strategy, fill, name)


PREPROCESSING = (Normalization, CategoryLookup, Impute)


@parity_cases
def _cases(L, d):
    import numpy as np

    codes = np.array([[3.0], [1.0], [2.0], [7.0], [1.0]])
    return [
        dict(name="normalization", model=L.sequential(L.normalization(), L.dense(3)), x=d.x(5, 6),
             input_shape=[6]),
        dict(name="impute", model=L.sequential(L.impute(fill=0.5), L.dense(3)), x=d.x(5, 6),
             input_shape=[6]),
        dict(name="category_lookup", model=L.sequential(L.category_lookup(4), L.dense(2)), x=codes,
             input_shape=[1]),
    ]


def takes_missing(model):
    """Whether NaN in the inputs meets only layers that take it as a missing value: impute() fills
    it, a category_lookup gives it the unknown column (NaN equals no code). A lambda_layer before them
    (picking columns) passes it on; in a parallel, every branch must take it."""
    from .core import Lambda

    if isinstance(model, Impute | CategoryLookup):
        return True
    kids = [child for _, child in model.children()]
    if model.kind == "parallel":
        return all(takes_missing(child) for child in kids)
    if model.kind == "sequential":
        kids = [child for child in kids if not isinstance(child, Lambda)]
    return bool(kids) and takes_missing(kids[0])


def inside(model, path=()):
    """Every preprocessing layer in the model, in the order its combinators run them, with its path
    of keys in the parameter tree: also in a parallel branch or a dag node, after a lambda_layer
    that picks its columns."""
    if isinstance(model, PREPROCESSING):
        return [(path, model)]
    found = []
    for key, child in model.children():
        found += inside(child, (*path, key) if key != "" else path)     # (residual: the same params)
    return found


EXACT_IN_FLOAT32 = 2 ** 24     # every whole number below it, and none of the odd ones above


def check_codes_fit_float32(fn, model, params, precision):
    """The torch backend compares category codes in float32 (below fp64): codes of 2^24 and more, or
    fractional ones it cannot hold, would match their neighbours (16777217 as 16777216), several
    one-hot columns or the wrong one. Refused, saying what to do."""
    for path, layer in inside(model):
        if not isinstance(layer, CategoryLookup):
            continue
        values = getattr(getattr(_at(params, path), "state", None), "values", None)
        codes = np.asarray(getattr(values, "data", values), dtype=np.float64)
        codes = codes[~np.isnan(codes)]
        held = codes.astype(np.float32).astype(np.float64) == codes
        bad = codes[~held | (np.abs(codes) >= EXACT_IN_FLOAT32)]
        if len(bad):
            raise ApsiError(f"{fn}: {_named(layer, path)} keeps the category code {bad[0]:.17g}, which "
                            f"float32 (the torch backend at precision=\"{precision}\") cannot tell from its "
                            f"neighbours: codes there must be whole numbers below 2^24 = {EXACT_IN_FLOAT32}; "
                            "renumber the codes 0, 1, 2, … before adapt, or use precision=\"fp64\"")


class _Reached(Exception):
    """The forward pass got to the layer being adapted: the rest of the model is not needed."""


def adapt(model, params, data):
    """The parameter tree with the state of each preprocessing layer in the model learnt from `data`
    (a tensor, a mapped .npy array or a dataset: its x), read once per layer, streamed: each piece
    goes through the model up to the layer (the layers before it as learnt)."""
    from apsi_layers.backends import registry
    from apsi_layers.data.predict_source import at_piece
    from apsi_layers.nn.autograd.tensor import Tensor

    from .context import Ctx

    found = inside(model)
    if not found:
        raise ApsiError(f"adapt: {model.label()} has no preprocessing layer (normalization, category_lookup, "
                        "impute); there is nothing to adapt")
    ops = registry.find("numpy").opset()        # adapt reads the data on the host, in float64
    with _reading(data) as each:            # (a dataset's workers serve every layer's pass)
        for path, layer in found:
            learner = layer.learner()
            if learner is None:
                continue
            start = 0
            for where, piece in each():
                start += at_piece(where, _learn, model, params, path, layer, learner, piece, start,
                                  Ctx(ops, training=False), start == 0)
            state = learner.state(None)
            _check_state(layer, path, getattr(_at(params, path), "state", None), state)
            params = _put(params, path, Record(**{k: Tensor(np.asarray(v, dtype=np.float64))
                                                 for k, v in vars(state).items()}))
    return params


def _learn(model, params, path, layer, learner, x, start, ctx, first):
    """One piece (rows from `start` of the data) into a layer's statistics: what reaches the layer in
    the model's forward pass; its number of rows. On the first piece, what reaches it must not
    depend on trainable weights (a dense before it): adapt learns from the data."""
    block = _reaching(model, params, layer, x, ctx)
    if first and not np.array_equal(block, _reaching(model, _moved(params), layer, x, ctx), equal_nan=True):
        raise ApsiError(f"adapt: {_named(layer, path)} is reached through layers "
                        "with trainable weights, whose initial values would be learnt as the data's; put "
                        "preprocessing layers before them (first in the model, or in a branch after a "
                        "lambda_layer that picks columns)")
    _check_block(layer, block, start)
    learner.add(block)
    return len(block)


def _named(layer, path):
    where = ".".join(map(str, path))
    return layer.label() if where in ("", layer.label()) else f"{layer.label()} (at {where})"


def _reaching(model, params, layer, x, ctx):
    """What the forward pass hands `layer`, as an array."""
    seen = []

    def reached(p, value, c):
        seen.append(np.asarray(value.data))
        raise _Reached

    layer.apply = reached            # (this instance only, for this pass)
    try:
        model.apply(params, x, ctx)
    except _Reached:
        pass
    finally:
        del layer.apply
    return seen[0]


def _moved(params):
    """The tree with every weight but the preprocessing state moved by 1."""
    from apsi_layers.nn.autograd.tensor import Tensor

    if isinstance(params, Record):
        return Record(**{k: v if k == "state" else _moved(v) for k, v in vars(params).items()})
    if isinstance(params, list | tuple):
        return type(params)(_moved(v) for v in params)
    if isinstance(params, Tensor) and params.data.dtype.kind == "f":
        return Tensor(params.data + 1.0)
    return params


def _check_block(layer, block, start):
    """What a layer cannot learn from: a normalization's NaN or inf (its mean and variance would be
    NaN, and fit would only say its loss became NaN), several codes per sample for a lookup."""
    if isinstance(layer, CategoryLookup) and block.shape[1:] not in ((), (1,)):
        raise ApsiError(f"adapt: {layer.label()} takes one category code per sample (data [N] or [N, 1]), "
                        f"but the data has per-sample shape {list(block.shape[1:])}")
    if block.dtype.kind != "f" or isinstance(layer, CategoryLookup):
        return
    bad = np.isinf(block) if isinstance(layer, Impute) else ~np.isfinite(block)     # (impute fills NaN)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        fix = "impute fills NaN only: replace those values first" if isinstance(layer, Impute) else \
            "put impute() before it (it fills NaN) or replace those values first"
        raise ApsiError(f"adapt: {layer.label()} met {block[where]} at row {start + int(where[0])} of the "
                        f"data; {fix}")


def _check_state(layer, path, old, new):
    """The state learnt must have the shape init gave it: data of another width is an error here, not
    a shape error at the first predict."""
    for key, value in vars(new).items():
        before = getattr(old, key, None)
        had, got = np.shape(getattr(before, "data", before)), np.shape(value)
        if before is not None and had != got:
            where = ".".join(map(str, path)) or layer.label()
            raise ApsiError(f"adapt: {layer.label()} (at {where}) was made by init for {had[0]} features "
                            f"per sample, but the data has {got[0]}; adapt on data of the model's input "
                            "shape (or init the model with input_shape=[…] of this data)")


@contextlib.contextmanager
def _reading(data):
    from apsi_layers.data.fit_data import is_source
    from apsi_layers.data.predict_source import reading
    from apsi_layers.nn.autograd.tensor import Tensor

    from .training.arrays import as_array

    if is_source(data):
        with reading(data, "adapt") as each:
            yield each
        return
    a = as_array("adapt", "data", data)
    yield lambda: iter([("", Tensor(a.astype(np.float64) if a.dtype != np.float64 else a))])


def _at(params, path):
    for key in path:
        params = field(params, key)
    return params


def _put(params, path, state):
    """A copy of the tree with the record at `path` given the new state."""
    if not path:
        return Record(**{**vars(params), "state": state})
    key = path[0]
    return Record(**{**vars(params), key: _put(getattr(params, key), path[1:], state)})
