"""windows(...) gives strided views that show each number many times: the torch backend sends them
per batch instead of copying them whole to the device (a copy took `length` times the series'
memory: 160 MB for a 1.6 MB series cut into windows of 200)."""

import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def _setup():
    return types.SimpleNamespace(device=torch.device("cpu"),
                                 precision=types.SimpleNamespace(dtype=torch.float64),
                                 tensor=lambda a: torch.as_tensor(np.ascontiguousarray(a)))


def test_a_windows_view_goes_per_batch_with_the_rows_a_copy_gives():
    from apsi_layers.backends.torch.feed import HostFeed, on_device
    from apsi_layers.data.windows import windows
    from apsi_layers.nn.autograd.tensor import Tensor

    series = np.random.default_rng(0).normal(size=(500, 2))
    x, y = (t.data for t in windows(Tensor(series), 40, horizon=3, stride=2))
    fed = on_device(_setup(), x)
    assert isinstance(fed, HostFeed)
    rows = torch.tensor([7, 0, 200, 7])
    want = np.stack([series[k * 2:k * 2 + 40] for k in (7, 0, 200, 7)])
    assert np.array_equal(fed.index_select(0, rows).numpy(), want)
    assert np.array_equal(fed[3:5].numpy(), np.stack([series[6:46], series[8:48]]))
    # plain arrays, slices and a y view that repeats nothing still go to the device once
    for a in (series, series[::2], y, np.ascontiguousarray(x)):
        assert isinstance(on_device(_setup(), a), torch.Tensor)
