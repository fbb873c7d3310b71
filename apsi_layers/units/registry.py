"""pint's registry behind Apsi's own Unit: parsing, names, conversion factors, cached dimension algebra.

pint is imported here and only here, the first time `use units` runs. Apsi code never receives a pint
object: a Unit keeps pint's unit in a slot whose name starts with '_' (which Apsi cannot spell) and
its type exposes no attributes (`__apsi_attrs__` is empty). Units are interned (one Unit per pint
unit), so the hot paths compare units by identity, and every derived fact (the product of two units,
a conversion factor, the rule for adding two units) is computed with pint once and cached.
"""

from apsi_lang.errors import ApsiError

_REG = None             # pint's UnitRegistry, made on first use
_UNITS = {}             # pint unit -> Unit
_PARSED = {}            # unit text -> Unit
_MUL, _DIV, _POW = {}, {}, {}
_FACTORS = {}           # (from Unit, to Unit) -> (scale, offset)
_ADD = {}               # (op, Unit, Unit) -> (result Unit, alpha, beta, gamma)

# Names users expect for constants whose pint symbol means something else (G is gauss in pint).
ALIASES = {"G": "gravitational_constant", "g0": "standard_gravity", "me": "electron_mass",
           "NA": "avogadro_constant", "kB": "boltzmann_constant"}


def registry():
    global _REG
    if _REG is None:
        import pint

        _REG = pint.UnitRegistry()
    return _REG


class Unit:
    """A unit of measurement as Apsi sees it: printable, comparable, combinable with * / **."""

    __slots__ = ("_pint", "_dim", "_text", "_offset", "_dimless", "__weakref__")
    __apsi_attrs__ = frozenset()
    __apsi_type__ = "unit"
    __array_ufunc__ = None          # ndarray * unit must come to Unit.__rmul__

    @staticmethod
    def __apsi_refusal__(name):
        return (f"'.{name}' of a unit is not available: a unit has no fields; use dimension(x), "
                "dimensionless(x), or combine it: 3 * u.m, u.km / u.h, to(q, u.cm)")

    def __repr__(self):
        return self._text

    __str__ = __repr__

    def __format__(self, spec):
        return format(self._text, spec)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


def wrap(pu):
    """The interned Unit of pint unit `pu`."""
    found = _UNITS.get(pu)
    if found is None:
        found = Unit()
        found._pint = pu
        dim = pu.dimensionality
        found._dim = frozenset(dict(dim).items())
        found._text = _text(pu)
        found._offset = not registry()._units[str(pu)].is_multiplicative if _single(pu) else False
        found._dimless = not found._dim
        _UNITS[pu] = found
    return found


def _single(pu):
    items = list(pu._units.items())
    return len(items) == 1 and items[0][1] == 1 and items[0][0] in registry()._units


def _text(pu):
    text = format(pu, "~P")
    return text if text else "dimensionless"


DIMENSIONLESS = None


def dimensionless_unit():
    global DIMENSIONLESS
    if DIMENSIONLESS is None:
        DIMENSIONLESS = wrap(registry().dimensionless)
    return DIMENSIONLESS


def parse(text, fn="unit"):
    """The Unit a text names ("km/h", "kg*m/s^2", "degC"); an ApsiError naming `fn` otherwise."""
    found = _PARSED.get(text)
    if found is not None:
        return found
    if type(text) is not str:
        raise ApsiError(f"{fn}: a unit is a text such as \"km/h\" or a unit such as u.m, not "
                        f"{_describe(text)}")
    reg = registry()
    try:
        pu = reg.parse_units(ALIASES.get(text.strip(), text))
    except Exception as e:
        raise ApsiError(f"{fn}: {text!r} is not a unit pint knows ({_reason(e)}); write units "
                        "like \"m\", \"km/h\", \"kg*m/s^2\", \"degC\" (docs/units.md lists them)") from None
    found = _PARSED[text] = wrap(pu)
    return found


def _reason(e):
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text[:120]


def _describe(x):
    from apsi_lang.values import a_type

    return a_type(x)


def dimension_text(unit):
    """'length', 'length/time²', 'mass·length²/time²', 'dimensionless'."""
    if unit._dimless:
        return "dimensionless"
    num, den = [], []
    for name, power in sorted(dict(unit._pint.dimensionality).items(), key=lambda kv: (-kv[1], kv[0])):
        word = name.strip("[]")
        p = abs(power)
        part = word if p == 1 else f"{word}{_SUP.get(p, '^' + _num(p))}"
        (num if power > 0 else den).append(part)
    top = "·".join(num) or "1"
    return top + ("/" + "·".join(den) if den else "")


_SUP = {2: "²", 3: "³", 4: "⁴", 0.5: "^½"}


def _num(p):
    return str(int(p)) if float(p).is_integer() else str(p)


def describe_unit(unit):
    """'m (length)': how errors name a unit."""
    return f"{unit._text} ({dimension_text(unit)})"


def mul(a, b):
    key = (a, b)
    found = _MUL.get(key)
    if found is None:
        _no_offset(a, b, "multiply")
        found = _MUL[key] = wrap(a._pint * b._pint)
    return found


def div(a, b):
    key = (a, b)
    found = _DIV.get(key)
    if found is None:
        _no_offset(a, b, "divide")
        found = _DIV[key] = wrap(a._pint / b._pint)
    return found


def power(a, n):
    key = (a, n)
    found = _POW.get(key)
    if found is None:
        if a._offset and n != 1:
            _no_offset(a, a, "raise to a power")
        found = _POW[key] = wrap(a._pint ** n)
    return found


def _no_offset(a, b, what):
    for x in (a, b):
        if x._offset:
            raise ApsiError(f"cannot {what} {x._text}: it is a temperature on an offset scale; convert "
                            f"it first, e.g. to(t, \"K\"), or use a difference (delta_{x._pint!s})")


def factor(src, dst, fn="to"):
    """(scale, offset) with value_in_dst = value_in_src * scale + offset; an ApsiError when the
    dimensions differ."""
    key = (src, dst)
    found = _FACTORS.get(key)
    if found is None:
        if src._dim != dst._dim:
            raise ApsiError(f"{fn}: cannot convert {describe_unit(src)} to {describe_unit(dst)}: "
                            "the dimensions differ")
        import pint

        Q = registry().Quantity
        try:
            zero = float(Q(0.0, src._pint).to(dst._pint).magnitude)
            one = float(Q(1.0, src._pint).to(dst._pint).magnitude)
        except pint.errors.PintError:   # a temperature difference (Δ°C) is not a temperature (°C)
            raise ApsiError(f"{fn}: cannot convert {src._text} to {dst._text}: a temperature difference "
                            "and a temperature on an offset scale do not convert into each other; add "
                            "the difference to a temperature, or use K for both") from None
        found = _FACTORS[key] = (one - zero, zero)
    return found


_WORDS = {"+": "add", "-": "subtract"}


def additive(op, a, b):
    """(result unit, alpha, beta, gamma): a ± b = am*alpha + bm*beta + gamma in the result unit,
    following pint's rules (offset temperatures: degC - degC is a delta, degC + degC an error)."""
    key = (op, a, b)
    found = _ADD.get(key)
    if found is not None:
        return found
    if a._dim != b._dim:
        raise ApsiError(f"cannot {_WORDS[op]} {describe_unit(a)} and {describe_unit(b)}: "
                        f"{_WORDS[op]} only values of the same dimension")
    if not (a._offset or b._offset):
        scale = factor(b, a)[0]
        found = (a, 1.0, scale if op == "+" else -scale, 0.0)
    else:
        found = _affine(op, a, b)
    _ADD[key] = found
    return found


def _affine(op, a, b):
    import pint

    Q = registry().Quantity

    def run(x, y):
        qa, qb = Q(x, a._pint), Q(y, b._pint)
        return qa + qb if op == "+" else qa - qb

    try:
        r00 = run(0.0, 0.0)
    except pint.errors.PintError:
        raise ApsiError(f"cannot {_WORDS[op]} {a._text} and {b._text}: on an offset scale only a "
                        f"difference can be added to a temperature; use delta units (e.g. "
                        f"quantity(5, \"delta_degC\")) or convert to K first") from None
    ru = r00.units
    g = float(r00.magnitude)
    alpha = float(run(1.0, 0.0).to(ru).magnitude) - g
    beta = float(run(0.0, 1.0).to(ru).magnitude) - g
    return wrap(ru), alpha, beta, g


def names():
    """Every name `u.NAME` accepts: pint's units, symbols and aliases, with and without prefixes."""
    reg = registry()
    units = set()
    for name, d in reg._units.items():
        units.update(n for n in (name, d.symbol, *d.aliases) if n)
    prefixes = {""}
    for name, d in reg._prefixes.items():
        prefixes.update(n for n in (name, d.symbol, *d.aliases) if n)
    found = {p + n for p in prefixes for n in units}
    found.update(ALIASES)
    return frozenset(n for n in found if n.isidentifier() and not n.startswith("_"))


_BASE = {}


def base(unit):
    """The SI base unit of `unit` (km/h -> m/s), cached."""
    found = _BASE.get(unit)
    if found is None:
        found = _BASE[unit] = wrap(registry().Quantity(1.0, unit._pint).to_base_units().units)
    return found


def no_such_unit(name):
    """The message for `u.NAME` when pint has no unit of that name, with the closest names."""
    import difflib

    reg = registry()
    plain = {n for k, d in reg._units.items() for n in (k, d.symbol, *d.aliases) if n}
    close = difflib.get_close_matches(name, sorted(plain | set(ALIASES)), n=3)
    hint = f" (did you mean {', '.join('u.' + c for c in close)}?)" if close else ""
    return (f"u.{name}: pint's catalogue has no unit named '{name}'{hint}; units take prefixes "
            "(u.km, u.mg), and unit(\"...\") parses a unit text such as unit(\"km/h\")")
