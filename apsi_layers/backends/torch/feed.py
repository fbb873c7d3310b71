"""Data on the torch backend: one copy to the device for small in-memory data (batches gathered
there), or per-batch copies for data that stays on the host.

Per-batch copies are for columns (memory-mapped .npy files, dataset batches: apsi_layers/data) and
for in-memory arrays larger than a share of the device's memory. Each batch is read on the host (in
the read-ahead thread when the driver announced it), cast there to the weights' dtype, put in pinned
(page-locked) memory and copied with non_blocking=True, so the copy overlaps the device's work
(https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers).
"""

import numpy as np
import torch

from . import convert

DEVICE_SHARE = 0.25       # in-memory data above this share of the device's memory is copied per batch


def on_device(setup, a):
    """What a session holds for one input or target array: a device tensor, or a HostFeed."""
    if hasattr(a, "source") or _too_big(setup.device, a) or _shows_numbers_again(a):
        return HostFeed(a, setup)
    return setup.tensor(a)


def _shows_numbers_again(a):
    """A strided view that shows its numbers many times (windows(series, 48): each value in 48
    windows): copied whole it would take many times the memory it views, so it goes per batch."""
    if not isinstance(a, np.ndarray) or not a.size:
        return False
    span = a.itemsize + sum((n - 1) * abs(step) for n, step in zip(a.shape, a.strides, strict=True))
    return a.nbytes > 2 * span         # (the bytes it shows against the bytes it spans)


def _too_big(device, a):
    if device.type != "cuda" or not isinstance(a, np.ndarray):
        return False
    return a.nbytes > DEVICE_SHARE * torch.cuda.get_device_properties(device).total_memory


class HostFeed:
    """Rows on the host, sent to the device batch by batch (index_select and slices as a tensor's)."""

    def __init__(self, a, setup):
        self.a, self.s = a, setup
        self.pin = setup.device.type == "cuda"
        self.shape = tuple(a.shape)

    def __len__(self):
        return self.shape[0]

    def _host(self, idx):
        return self.a.take(idx) if hasattr(self.a, "source") else self.a[idx]

    def _send(self, rows):
        dtype = self.s.precision.dtype
        t = torch.from_numpy(np.ascontiguousarray(rows))
        if t.is_floating_point() and t.dtype != dtype:
            t = t.to(dtype) if dtype != torch.bfloat16 else t.float().to(dtype)
        if self.pin:
            return t.pin_memory().to(self.s.device, non_blocking=True)
        return t.to(self.s.device)

    def index_select(self, dim, rows):
        return self._send(self._host(rows.cpu().numpy()))

    def __getitem__(self, key):
        idx = np.arange(self.shape[0])[key]
        return self._send(self._host(idx))


__all__ = ["HostFeed", "convert", "on_device"]
