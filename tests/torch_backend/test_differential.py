"""Issue 16: the same programs on NumPy and on torch fp64 give the same numbers (histories, val
histories, trained parameters and running statistics, predictions: 1e-10) and the same messages.
Every zoo model with its random parts on (dropout, VAE noise: fp64 draws from NumPy's stream), with
the options that each backend implements on its own (optimizers, schedules, clipping, masks, val=)."""

import numpy as np
import pytest

pytest.importorskip("torch")

from apsi_lang.errors import ApsiError  # noqa: E402
from apsi_layers import layers as L  # noqa: E402
from apsi_layers import nn  # noqa: E402

rng = np.random.default_rng(7)
EDGES = np.array([[0, 1, 2, 3, 4, 5, 2], [1, 2, 3, 4, 5, 0, 2]])     # with a self-loop already there
SEQ_MASK = np.arange(5)[None, :] < np.array([5, 3, 4, 2, 5, 1, 4, 5])[:, None]


def _ids(shape, vocab):
    return rng.integers(0, vocab, shape)


MODELS = [
    # (batch norm is compared with SGD in test_fit.py: a bias before it has a zero gradient, which
    # Adam's g / sqrt(v) turns into rounding noise of the size of lr, on any backend)
    ("mlp_dropout", lambda: L.mlp(3, 2, hidden=[6, 6], dropout=0.3),
     rng.standard_normal((12, 3)), np.arange(12) % 2, {}),
    ("resnet_mlp", lambda: L.resnet_mlp(3, 2, width=8, blocks=2, dropout=0.2), rng.standard_normal((12, 3)),
     np.arange(12) % 2, {}),
    ("cnn_classifier", lambda: L.cnn_classifier([1, 6, 6], 3, filters=[2, 3], hidden=4, dropout=0.25),
     rng.standard_normal((8, 1, 6, 6)), np.arange(8) % 3, {}),
    ("lstm_classifier_masked", lambda: L.lstm_classifier(3, 2, units=4, layers=2, dropout=0.2),
     rng.standard_normal((8, 5, 3)), np.arange(8) % 2, {"mask": SEQ_MASK}),
    ("gru_ids", lambda: L.lstm_classifier(0, 2, units=4, vocab=9, embed=3, cell="gru"),
     _ids((8, 5), 9), np.arange(8) % 2, {}),
    ("transformer_lm", lambda: L.transformer_lm(9, d=8, heads=2, layers=2, context=6, dropout=0.1),
     _ids((8, 6), 9), _ids((8, 6), 9), {}),
    ("gcn_classifier", lambda: L.gcn_classifier(3, 2, hidden=[4], dropout=0.5), rng.standard_normal((6, 3)),
     np.arange(6) % 2, {"graph": EDGES}),
    ("gat_classifier", lambda: L.gcn_classifier(3, 2, hidden=[4], kind="gat", dropout=0.3),
     rng.standard_normal((6, 3)), np.arange(6) % 2, {"graph": EDGES}),
]

OPTIONS = [
    ("adam_clip", {"opt": nn.adam(lr=0.01), "clip": 0.5}),
    ("nadam_schedule", {"opt": nn.nadam(lr=0.01), "schedule": lambda s: 0.01 / (1 + s)}),
    ("sgd_momentum", {"opt": nn.sgd(lr=0.05, momentum=0.9, nesterov=True)}),
]


def _leaves(tree):
    return [v.data for _, v in nn.flatten(tree)]


def _close(a, b, tol=1e-10):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def _both(model, x, y, **opts):
    p = model.init(seed=0)
    out = []
    for backend in ("numpy", "torch"):
        extra = {"backend": "torch", "precision": "fp64", "device": "cpu"} if backend == "torch" else {}
        out.append(L.fit(model, p, x, y, loss="cross_entropy", epochs=2, batch_size=4, seed=1,
                         verbose=False, **opts, **extra))
    return out


@pytest.mark.parametrize("case", MODELS, ids=[c[0] for c in MODELS])
@pytest.mark.parametrize("option", OPTIONS, ids=[o[0] for o in OPTIONS])
def test_every_zoo_model_trains_to_the_same_numbers(case, option, python_allowed):
    _, make, x, y, data_opts = case
    model = make()
    opts = dict(data_opts, **option[1])
    if "graph" not in data_opts:            # a validation set (a graph trains on all nodes at once)
        opts["val"] = [x[:4], y[:4], data_opts["mask"][:4]] if "mask" in data_opts else [x[:4], y[:4]]
    a, b = _both(model, x, y, **opts)
    assert _close(a.history, b.history), (a.history, b.history)
    assert _close(a.val_history, b.val_history), (a.val_history, b.val_history)
    for u, v in zip(_leaves(a.params), _leaves(b.params), strict=True):
        assert _close(u, v)
    pred = {k: v for k, v in data_opts.items() if k in ("graph", "mask")}
    pa = L.predict(model, a.params, x, **pred)
    pb = L.predict(model, a.params, x, backend="torch", precision="fp64", **pred)
    assert _close(pa.data, pb.data)


def test_the_vae_trains_to_the_same_numbers(python_allowed):
    v = L.vae(6, 2, hidden=[8])
    x = rng.random((16, 6))
    p = v.init(seed=0)
    a = L.fit(v, p, x, None, epochs=3, batch_size=4, verbose=False)
    b = L.fit(v, p, x, None, epochs=3, batch_size=4, verbose=False, backend="torch", precision="fp64")
    assert _close(a.history, b.history)
    for u, w in zip(_leaves(a.params), _leaves(b.params), strict=True):
        assert _close(u, w)


X, Y = rng.standard_normal((12, 3)), np.arange(12) % 2
NET = L.mlp(3, 2, hidden=[4], batch_norm=True)

BAD = [
    ("constant loss", {"loss": lambda p, t: 1.0}),
    ("schedule nan", {"schedule": lambda s: float("nan")}),
    ("schedule text", {"schedule": lambda s: "a"}),
    ("lone batch", {"batch_size": 11}),
    ("nan input", {"x": np.where(np.eye(12, 3) > 0, np.nan, X)}),
    ("label range", {"y": np.arange(12) % 2 + 5}),
    ("huge label", {"y": np.full(12, 1e30)}),
    ("all-false mask", {"mask": np.zeros(12, dtype=bool)}),
    ("val nan", {"val": [np.full((2, 3), np.inf), Y[:2]]}),
    ("lr function inf", {"opt": nn.sgd(lr=lambda s: float("inf"))}),
    ("custom target broadcast", {"loss": lambda p, t: nn.mean((p - t) ** 2), "y": X[:, :1],
                                 "net": L.mlp(3, 2)}),
    ("unknown option", {"epoch": 2}),
]


def _message(backend, case):
    opts = dict(case)
    x, y, net = opts.pop("x", X), opts.pop("y", Y), opts.pop("net", NET)
    opts.setdefault("loss", "cross_entropy")
    extra = {"backend": "torch", "precision": "fp64"} if backend == "torch" else {}
    try:
        L.fit(net, net.init(seed=0), x, y, epochs=2, verbose=False, **opts, **extra)
    except ApsiError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_the_same_mistake_gets_the_same_message(case, python_allowed):
    a, b = _message("numpy", case[1]), _message("torch", case[1])
    assert a is not None and a.startswith("fit"), a
    assert a == b
