"""Layer constructors by their Apsi name, registered where each is defined (as Thinc's registry):

    @register()              # `use layers` binds dense
    def dense(units, ...): ...

    @register("dropout")     # the Apsi name differs from the Python one
    def dropout_layer(rate=0.5, name=None): ...

layers/__init__.py's names, `use layers`' exports (layers/exports.py) and check_torch's list of what
it must cover (backends/torch/check.py) are read from here, so a new layer is its family file, a test
and docs. Importing this file imports nothing.
"""

LAYERS: dict = {}                    # Apsi name -> constructor, in the order they were registered
CASES: list = []                     # functions (L, d) -> [case dicts]: check_torch's parity cases
# the family files: importing them registers their layers (layers/__init__.py imports them all)
FAMILIES = ("core", "conv", "norm", "recurrent", "attention", "graph", "compose", "zoo", "preprocessing")


_built: set | None = None            # while recording(): the names of the layers constructed


def register(name=None):
    """A decorator: the constructor becomes `use layers`' `name` (its own name when not given)."""
    def add(fn):
        from functools import wraps

        key = name or fn.__name__

        @wraps(fn)
        def construct(*args, **kwargs):
            if _built is not None:          # (a zoo model's own layers count too)
                _built.add(key)
            return fn(*args, **kwargs)

        if key in LAYERS and LAYERS[key].__wrapped__ is not fn:
            raise ValueError(f"two layers are registered as {key!r}: {LAYERS[key].__module__} and "
                             f"{fn.__module__}")
        LAYERS[key] = construct
        return construct
    return add


def recording(build):
    """The names of the registered layers that `build()` constructs, directly or inside others."""
    global _built
    outer, _built = _built, set()
    try:
        build()
        return _built
    finally:
        _built = outer


def parity_cases(fn):
    """A decorator for a family file's function (L, d) -> [dict(name, model, x, input_shape=, graph=,
    mask=)]: small models of its layers that check_torch runs on NumPy and on PyTorch and compares.
    L holds `use layers`' functions, d the shared inputs (d.x(*shape), d.tokens, d.seq, d.img,
    d.graph, d.mask, d.two, d.pair, and d.nn: nn's functions for a lambda)."""
    CASES.append(fn)
    return fn


def cases(L, d):
    """Every family's parity cases, in the families' order."""
    constructors()
    return [case for fn in CASES for case in fn(L, d)]


def constructors():
    """{Apsi name: constructor} of every built-in layer (the family files imported first)."""
    from importlib import import_module

    for family in FAMILIES:
        import_module(f"{__package__}.{family}")
    return dict(LAYERS)
