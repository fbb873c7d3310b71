"""Numbers without `use nn`: Python's math functions as Apsi builtins.

Each function takes ints or floats (a bool or a string is an Apsi error naming the function) and
returns what Python's math module returns. `use nn` shadows exp, log, sqrt, sin, cos with its tensor
versions (they still take numbers, and give tensors).
"""

import math

from .errors import ApsiError
from .values import a_type


def _number(fn, x):
    if type(x) is bool or not isinstance(x, int | float):
        raise ApsiError(f"{fn}(x): x must be a number, got {a_type(x)}")
    return x


def _unary(name, f, domain=None):
    def fn(x):
        x = _number(name, x)
        try:
            return f(x)
        except (ValueError, OverflowError) as e:
            big = isinstance(e, OverflowError)
            why = domain or ("the result is too large" if big else "not defined there")
            raise ApsiError(f"{name}({x!r}): {why}") from None
    fn.__name__ = fn.__qualname__ = name
    return fn


def log(x, base=None):
    """Natural logarithm, or to `base`."""
    x = _number("log", x)
    if x <= 0:
        raise ApsiError(f"log({x!r}): the logarithm needs a number > 0")
    if base is None:
        return math.log(x)
    base = _number("log", base)
    if base <= 0 or base == 1:
        raise ApsiError(f"log(x, {base!r}): the base must be > 0 and not 1")
    return math.log(x, base)


def atan2(y, x):
    return math.atan2(_number("atan2", y), _number("atan2", x))


def hypot(*xs):
    return math.hypot(*(_number("hypot", x) for x in xs))


def gcd(*ns):
    for n in ns:
        if type(n) is not int:
            raise ApsiError(f"gcd: expects ints, got {a_type(n)}")
    return math.gcd(*ns)


def _rounding(name, f):
    def fn(x):
        x = _number(name, x)
        if x != x or x in (math.inf, -math.inf):
            raise ApsiError(f"{name}({x!r}): nan and inf have no whole-number value")
        return f(x)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _test(name, f):
    def fn(x):
        return f(_number(name, x))
    fn.__name__ = fn.__qualname__ = name
    return fn


NUMBER_BUILTINS = {
    "sqrt": _unary("sqrt", math.sqrt, "the square root needs a number >= 0"),
    "exp": _unary("exp", math.exp),
    "log": log,
    "log2": _unary("log2", math.log2, "the logarithm needs a number > 0"),
    "log10": _unary("log10", math.log10, "the logarithm needs a number > 0"),
    "sin": _unary("sin", math.sin), "cos": _unary("cos", math.cos), "tan": _unary("tan", math.tan),
    "asin": _unary("asin", math.asin, "needs a number from -1 to 1"),
    "acos": _unary("acos", math.acos, "needs a number from -1 to 1"),
    "atan": _unary("atan", math.atan), "atan2": atan2, "hypot": hypot,
    "floor": _rounding("floor", math.floor), "ceil": _rounding("ceil", math.ceil),
    "trunc": _rounding("trunc", math.trunc),
    "isnan": _test("isnan", math.isnan), "isinf": _test("isinf", math.isinf),
    "isfinite": _test("isfinite", math.isfinite),
    "gcd": gcd,
    "pi": math.pi, "inf": math.inf, "nan": math.nan,
}
