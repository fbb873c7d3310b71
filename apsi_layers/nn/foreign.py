"""Other libraries' tensors in nn's functions: how an Apsi-written loss or lambda layer runs on torch.

The torch backend registers torch.Tensor and a torch version of nn's functions here when it loads.
nn's functions look for a foreign tensor only on their slow path (an argument that is not an nn
Tensor), through `as_tensor` raising `Foreign`, which they catch (a try block costs nothing in
CPython 3.11 until something is raised): nn's own speed does not change. A function without a
registered version lets `Foreign` through, and its message says so.
"""

from apsi_lang.errors import ApsiError

TYPES = ()      # foreign tensor types (an isinstance tuple); empty until a backend registers
IMPLS = {}      # nn function name -> its foreign version, called with the same arguments
BACKEND = ""    # "torch", for messages


class Foreign(ApsiError):
    """An nn function met a foreign tensor; carries the function's name."""

    def __init__(self, fn):
        super().__init__(no_implementation(fn))
        self.fn = fn


def no_implementation(fn):
    return (f"the {BACKEND or 'torch'} backend has no implementation of nn.{fn}: an Apsi function run "
            f"by fit(backend=\"{BACKEND or 'torch'}\") called it on a torch tensor. Use a named loss or "
            "activation, give a lambda layer a torch version (lambda_layer(fn, torch_fn=...) from "
            "Python), or train with backend=\"numpy\"")


def register(types, impls, backend):
    """Accept `types` (a tuple) in nn's functions, running `impls[name]` for them."""
    global TYPES, BACKEND
    TYPES = tuple(types)
    IMPLS.update(impls)
    BACKEND = backend


def call(fn, *args, **kwargs):
    """The foreign version of nn function `fn` applied to args, or `Foreign` when there is none."""
    impl = IMPLS.get(fn)
    if impl is None:
        raise Foreign(fn)
    return impl(*args, **kwargs)
