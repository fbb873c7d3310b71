"""One torch thread for these tests: they use tiny tensors, and on a machine whose cores are shared
(CI, several test runs at once) OpenMP's waiting threads make each small kernel many times slower."""

import importlib.util

import pytest


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    if importlib.util.find_spec("torch") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
