"""`@record` / `@record(frozen=True)`: the part of dataclasses that start-up's classes (Config, Grants,
the confinement Policy) use — an __init__ from the annotated fields with their defaults, equality and a
repr, immutability when frozen — without importing dataclasses, which imports inspect, dis and
tokenize: a quarter of `apsi -e "print(1)"`'s instructions beyond Python's own start (issue 36)."""


class Factory:
    """A field default made fresh for every instance: `names: dict = Factory(dict)`."""

    def __init__(self, make):
        self.make = make


def record(cls=None, *, frozen=False):
    if cls is None:
        return lambda c: record(c, frozen=frozen)
    names = tuple(n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("__"))
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    for n in defaults:
        delattr(cls, n)             # instances hold their own values; the class keeps no stale default
    cls._fields = names
    setter = object.__setattr__

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes at most {len(names)} positional arguments")
        unknown = set(kwargs) - set(names[len(args):])
        if unknown:
            raise TypeError(f"{cls.__name__}() got unexpected or repeated arguments {sorted(unknown)}")
        for i, n in enumerate(names):
            if i < len(args):
                value = args[i]
            elif n in kwargs:
                value = kwargs[n]
            elif n in defaults:
                d = defaults[n]
                value = d.make() if isinstance(d, Factory) else d
            else:
                raise TypeError(f"{cls.__name__}() missing argument {n!r}")
            setter(self, n, value)

    def values(self):
        return tuple(getattr(self, n) for n in names)

    def __eq__(self, other):
        return values(self) == values(other) if other.__class__ is self.__class__ else NotImplemented

    def __repr__(self):
        return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    cls.__init__, cls.__eq__, cls.__repr__ = __init__, __eq__, __repr__
    if frozen:
        def __setattr__(self, name, value=None):
            raise AttributeError(f"{cls.__name__} is frozen: cannot change {name!r}")

        cls.__setattr__, cls.__delattr__ = __setattr__, __setattr__
        cls.__hash__ = lambda self: hash(values(self))
    else:
        cls.__hash__ = None
    return cls
