"""Issue 16: Apple MPS refuses float64 tensors. No Mac here, so a fake device: every aten op that runs
during fit/predict at precision="fp32" is watched (a TorchDispatchMode), and none may make a float64
tensor. Host data reaches the device the way MPS needs it: converted with NumPy (or cast on the host
from a NumPy array, which is not an aten op on a float64 result) and then moved."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from apsi_layers import layers as L  # noqa: E402

rng = np.random.default_rng(0)


class NoFloat64(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, tuple | list) else [out]
        if any(isinstance(o, torch.Tensor) and o.dtype == torch.float64 for o in outs):
            self.seen.append(str(func))
        return out


CASES = [
    ("mlp_val_dropout", lambda: L.mlp(3, 2, hidden=[4], dropout=0.2, batch_norm=True),
     rng.standard_normal((16, 3)), np.arange(16) % 2,
     {"val": [rng.standard_normal((4, 3)), np.arange(4) % 2]}),
    ("transformer_sinusoidal",
     lambda: L.transformer_lm(9, d=8, heads=2, layers=1, context=6, positions="sinusoidal"),
     rng.integers(0, 9, (8, 6)), rng.integers(0, 9, (8, 6)), {}),
    ("gcn_graph", lambda: L.gcn_classifier(3, 2, hidden=[4]), rng.standard_normal((6, 3)), np.arange(6) % 2,
     {"graph": np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])}),
    ("gat_graph", lambda: L.gcn_classifier(3, 2, hidden=[4], kind="gat"), rng.standard_normal((6, 3)),
     np.arange(6) % 2, {"graph": np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])}),
    ("lstm_mask", lambda: L.lstm_classifier(3, 2, units=4), rng.standard_normal((8, 5, 3)), np.arange(8) % 2,
     {"mask": np.arange(5)[None, :] < np.array([5, 3, 4, 2, 5, 1, 4, 5])[:, None]}),
    ("cnn", lambda: L.cnn_classifier([1, 6, 6], 3, filters=[2], hidden=4), rng.standard_normal((4, 1, 6, 6)),
     np.arange(4) % 3, {}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_fit_and_predict_make_no_float64_tensor(case, precision, python_allowed):
    _, make, x, y, opts = case
    net = make()
    p = net.init(seed=0)
    with NoFloat64() as mode:
        r = L.fit(net, p, x, y, loss="cross_entropy", epochs=2, batch_size=4, verbose=False, backend="torch",
                  precision=precision, **opts)
        pred = {k: v for k, v in opts.items() if k in ("graph", "mask")}
        L.predict(net, r.params, x, backend="torch", precision=precision, **pred)
    assert mode.seen == [], sorted(set(mode.seen))
    assert np.isfinite(r.history).all()


def test_the_vae_noise_is_not_float64(python_allowed):
    v = L.vae(6, 2, hidden=[8])
    with NoFloat64() as mode:
        L.fit(v, v.init(seed=0), rng.random((8, 6)), None, epochs=1, batch_size=4, verbose=False,
              backend="torch", precision="fp32")
    assert mode.seen == [], sorted(set(mode.seen))


def test_the_watch_sees_a_float64_tensor():
    with NoFloat64() as mode:
        torch.ones(2, dtype=torch.float32).to(torch.float64)
    assert mode.seen
