"""No pint object is reachable from Apsi code: units, quantities and the catalogue expose only their
allow-lists, dunder names never parse, and every value the module hands out is Apsi's own type."""

import pytest

from apsi_lang.errors import ApsiError, ApsiSyntaxError

HEAD = "use nn\nuse units\nlet q = 3 * u.m\nlet un = unit_of(q)\n"

REFUSED = [
    "q.m", "q.magnitude", "q.units", "q.to", "q.dimensionality", "q.tolist",
    "un.dimensionality", "un.units", "un.from_", "un.format_babel", "un.systems",
    "u.registry", "u.Quantity", "u.Unit", "u.define", "u.parse_units", "u.get_dimensionality",
    "(u.m * u.s).dimensionality", "to(q, \"cm\").magnitude", "unit(\"km\").format_babel",
]


@pytest.mark.parametrize("expr", REFUSED)
def test_attributes_beyond_the_allow_lists_are_refused(run, expr):
    with pytest.raises(ApsiError, match="is not available|catalogue has no unit named") as e:
        run(HEAD + f"print({expr})\n")
    assert e.value.kind == "permission"


@pytest.mark.parametrize("expr", ["q._m", "q._u", "un._pint", "u._REG", "q.__class__", "u.__dict__",
                                  "un.__reduce__", "u.m.__init__"])
def test_underscore_names_do_not_even_parse(run, expr):
    with pytest.raises(ApsiSyntaxError):
        run(HEAD + f"print({expr})\n")


@pytest.mark.parametrize("expr", ['getattr(u, "_REG")', 'get(u, "_REG", 0)', 'get(q, "_m", 0)',
                                  'get(un, "_pint", 0)', 'vars(q)', 'dir(u)'])
def test_no_computed_attribute_reads(run, expr):
    with pytest.raises((ApsiError, ApsiSyntaxError)):
        run(HEAD + f"print({expr})\n")


def test_what_apsi_may_read(run):
    _, out = run(HEAD + "print(q.shape, q.ndim, q.size, type(q), type(un), type(u))\n"
                        "print((array([1, 2]) * u.s).shape)\n")
    assert out == "() 0 1 quantity unit unit catalogue\n(2,)\n"


def test_every_value_handed_out_is_apsis_own(run):
    from apsi_layers import nn
    from apsi_layers.units.quantity import Quantity
    from apsi_layers.units.registry import Unit

    ns, _ = run(HEAD + """let values = [q, un, u.km, u.c, u.hbar, u.G, unit("kg*m/s^2"), quantity(1, "degC"),
    to(q, "cm"), si(q), q * q, q / u.s, sqrt(q * q), mean(array([1, 2]) * u.m), grad(fn(x) => x * x)(q),
    magnitude(q, "cm"), dimension(q), dimensionless(q), q + 1 * u.cm, q > 1 * u.cm]
""")
    allowed = (Quantity, Unit, nn.Tensor, int, float, str, bool)
    for v in ns["values"]:
        assert type(v) in allowed, type(v)
        if type(v) is Quantity:
            assert type(v._u) is Unit and type(v._m) in (int, float, nn.Tensor)
    assert not any(type(v).__module__.startswith("pint") for v in ns["values"])


def test_the_catalogue_allow_list_is_only_names_of_units(U):
    from apsi_lang import sandbox
    from apsi_layers.units.exports import Catalogue

    names = sandbox.allowed_attrs(Catalogue)
    assert {"m", "km", "kilometer", "s", "degC", "c", "hbar", "G"} <= names
    assert not {n for n in names if n.startswith("_")}
    for n in ("define", "parse_units", "Quantity", "Unit", "registry", "get_dimensionality"):
        assert n not in names


def test_a_misspelt_unit_says_so_and_suggests(run):
    with pytest.raises(ApsiError, match=r"u.meterz: pint's catalogue has no unit named 'meterz' "
                                        r"\(did you mean u.meter") as e:
        run(HEAD + "print(u.meterz)\n")
    assert "--allow-python" not in e.value.message and e.value.kind == "permission"


def test_refusals_say_what_to_use_instead(run):
    with pytest.raises(ApsiError, match=r"'.magnitude' of a quantity is not available.*magnitude\(q, ") as e:
        run(HEAD + "print(q.magnitude)\n")
    assert "--allow-python" not in e.value.message
    with pytest.raises(ApsiError, match=r"'.dimensionality' of a unit is not available.*dimension\(x\)"):
        run(HEAD + "print(un.dimensionality)\n")
