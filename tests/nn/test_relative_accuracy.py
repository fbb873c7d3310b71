"""Issue 16: float64 means relative error near 1e-15 for small values too, in the fused kernels."""

import math

import numpy as np
import pytest

from apsi_layers.nn.fused import fastmath

MAGNITUDES = [1e-300, 1e-30, 1e-12, 1e-9, 1e-5, 1e-2, 0.3, 1.0, 3.0, 18.0, 25.0]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_tanh_relative_error(sign):
    x = sign * np.array(MAGNITUDES)
    got = fastmath.tanh(x.copy())
    want = np.array([math.tanh(v) for v in x])
    assert np.all(np.abs(got - want) <= 2e-16 * np.abs(want)), (got - want) / want


def test_sigmoid_relative_error():
    x = np.concatenate([-np.array(MAGNITUDES[::-1]), np.array(MAGNITUDES), [-700.0, 40.0]])
    got = fastmath.sigmoid(x.copy())
    want = np.array([1.0 / (1.0 + math.exp(-v)) for v in x])
    assert np.all(np.abs(got - want) <= 4e-16 * np.abs(want))


def test_lstm_and_gru_with_tiny_states_match_torch_nn_relatively():
    """States of size 1e-9 through the fused NumPy kernels against torch.nn.LSTM/GRU in float64."""
    torch = pytest.importorskip("torch")
    from apsi_layers.backends.numpy.ops import OPSET as O

    rng = np.random.default_rng(0)
    B, T, F, H = 3, 5, 4, 6
    x = 1e-9 * rng.standard_normal((B, T, F))
    for gates, ref, fused in ((4, torch.nn.LSTM, O.lstm), (3, torch.nn.GRU, O.gru)):
        w_ih, w_hh = 0.5 * rng.standard_normal((gates * H, F)), 0.5 * rng.standard_normal((gates * H, H))
        b = np.zeros(gates * H)
        m = ref(F, H, batch_first=True).double()
        with torch.no_grad():
            for name, value in (("weight_ih_l0", w_ih), ("weight_hh_l0", w_hh), ("bias_ih_l0", b),
                                ("bias_hh_l0", b)):
                getattr(m, name).copy_(torch.tensor(value))
            want = m(torch.tensor(x))[0].numpy()
        h0 = np.zeros((B, H))
        args = (x, h0, h0, w_ih, w_hh, b, b) if gates == 4 else (x, h0, w_ih, w_hh, b, b)
        got = fused(*[O.constant(a) for a in args])[0].data
        assert np.max(np.abs(want)) < 1e-8                      # the states really are tiny
        rel = np.max(np.abs(got - want) / np.abs(want))
        assert rel < 1e-13, (ref.__name__, rel)
