"""Out of memory, on either backend: one message with the hint that helps (a smaller batch_size).

NumPy raises MemoryError; PyTorch raises torch.OutOfMemoryError on GPUs and a RuntimeError whose text
is the only sign on the CPU ("DefaultCPUAllocator: can't allocate memory") and on Apple MPS ("MPS
backend out of memory"), so those two texts are recognised here, once, for both loops.
"""

from apsi_lang.errors import ApsiError

_TORCH_TEXTS = ("out of memory", "can't allocate memory")


def is_out_of_memory(error):
    if isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError":
        return True
    return isinstance(error, RuntimeError) and any(t in str(error) for t in _TORCH_TEXTS)


def out_of_memory(fn, plan):
    """The ApsiError for an out-of-memory failure during fit/predict with this plan."""
    size = plan.batch_size or plan.data.n
    where = "on the GPU" if (plan.device or "").startswith(("cuda", "mps", "xpu")) else "in main memory"
    if plan.data.first is not None:      # a dataset: each call is a batch, batch_size does not apply
        return ApsiError(f"{fn}: ran out of memory {where} on a dataset of {plan.data.n} batches; return "
                         "smaller batches from its function, make fewer of them (each epoch's order of "
                         "the calls takes 8 bytes per call), use a smaller model, or, on torch, a lower "
                         'precision (precision="bf16")')
    smaller = max(1, size // 2)
    return ApsiError(f"{fn}: ran out of memory {where} with batch_size={size} ({plan.data.n} samples); "
                     f"lower batch_size (e.g. batch_size={smaller}), use a smaller model, or, on torch, "
                     'a lower precision (precision="bf16")')
