"""Other libraries' values in nn's functions: how an Apsi-written loss or lambda layer runs on torch,
and how `use units` quantities pass through nn's functions.

A backend (torch) or a value type (units' Quantity) registers its types and a version of nn's
functions here when it loads. nn's functions look for a foreign value only on their slow path (an
argument that is not an nn Tensor), through `as_tensor` raising `Foreign`, which they catch (a try
block costs nothing in CPython 3.11 until something is raised): nn's own speed does not change. A
function without a registered version lets `Foreign` through, and its message says so.
"""

from apsi_lang.errors import ApsiError

TYPES = ()      # every registered foreign type (an isinstance tuple); empty until one registers
IMPLS = {}      # nn function name -> the torch backend's version (kept for the torch backend's tests)
BACKEND = ""    # "torch", for messages
_REGISTERED = {}   # type -> (impls, name, message for a missing function)


class Foreign(ApsiError):
    """An nn function met a foreign tensor; carries the function's name. Raised and caught on every
    call of an nn function with a foreign value, so its message is made only when someone reads it."""

    def __init__(self, fn, message=None):      # noqa: B042  (no super().__init__: that formats the text)
        self.fn = fn
        self._text = message
        self.kind = "error"

    @property
    def message(self):
        if self._text is None:
            self._text = no_implementation(self.fn)
        return self._text

    @message.setter
    def message(self, text):
        self._text = text

    @property
    def args(self):
        return (self.message,)

    @args.setter
    def args(self, value):
        self._text = value[0] if value else ""

    def __str__(self):
        return self.message


def no_implementation(fn):
    return (f"the {BACKEND or 'torch'} backend has no implementation of nn.{fn}: an Apsi function run "
            f"by fit(backend=\"{BACKEND or 'torch'}\") called it on a torch tensor. Use a named loss or "
            "activation, give a lambda layer a torch version (lambda_layer(fn, torch_fn=...) from "
            "Python), or train with backend=\"numpy\"")


def register(types, impls, backend, missing=None):
    """Accept `types` (a tuple) in nn's functions, running `impls[name]` for them. `missing(fn)` is
    the message for a function `impls` lacks (the torch backend's by default)."""
    global TYPES, BACKEND
    for t in types:
        _REGISTERED[t] = (impls, backend, missing)
    TYPES = tuple(_REGISTERED)
    if missing is None:
        IMPLS.update(impls)
        BACKEND = backend


def _owner(args, kwargs):
    """The registration of the first foreign value among the arguments (lists looked into, for
    concat and stack)."""
    for a in (*args, *kwargs.values()):
        for v in (a if type(a) is list or type(a) is tuple else (a,)):
            entry = _REGISTERED.get(type(v))
            if entry is None and TYPES and isinstance(v, TYPES):
                entry = next(e for t, e in _REGISTERED.items() if isinstance(v, t))
            if entry is not None:
                return entry
    return IMPLS, BACKEND, None


def call(fn, *args, **kwargs):
    """The foreign version of nn function `fn` applied to args, or `Foreign` when there is none."""
    entry = _REGISTERED.get(type(args[0])) if args else None
    return _run(entry or _owner(args, kwargs), fn, args, kwargs)


def call_for(values, fn, *args, **kwargs):
    """`fn`'s version registered for the first foreign value among `values` (the leaves of the
    arguments of grad, which may sit deep in a record) applied to args."""
    return _run(_owner(values, {}), fn, args, kwargs)


def _run(entry, fn, args, kwargs):
    impls, _, missing = entry
    impl = impls.get(fn)
    if impl is None:
        raise Foreign(fn, missing(fn) if missing else None)
    return impl(*args, **kwargs)


def handles(fn, values):
    """Whether one of `values` is a foreign value whose registration has a version of `fn` (the
    autodiff functions' check: a torch tensor passed along to f is not theirs to handle)."""
    for v in values:
        entry = _REGISTERED.get(type(v))
        if entry is not None and fn in entry[0]:
            return True
    return False
