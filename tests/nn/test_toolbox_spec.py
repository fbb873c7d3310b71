"""nn/numlib/toolbox.py is the list of issue 35's functions; every layer must agree with it: nn exports each,
`use nn` binds each, the torch backend and `use units` implement each (or, for the constants made
from numbers, need not), docs/nn.md documents each with its reference, and each gradient-free one
really returns ints (no tape)."""

import re
from pathlib import Path

import numpy as np
import pytest

from apsi_layers import nn
from apsi_layers.apsi_modules import NN_EXPORTS
from apsi_layers.nn.numlib.toolbox import TOOLBOX

DOC = (Path(__file__).resolve().parents[2] / "docs" / "nn.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Statistics, special functions and curves")[1].split("\n## ")[0]
UNIT_RULES = {"keep", "delta", "square", "plain", "dimensionless", "product", "interp", "none"}


def test_the_table_is_well_formed():
    assert len(TOOLBOX) >= 30
    for name, entry in TOOLBOX.items():
        assert set(entry) == {"ref", "grad", "units"}, name
        assert entry["units"] in UNIT_RULES, name
        assert re.fullmatch(r"(numpy|scipy\.special)\.[a-z_.]+", entry["ref"]), name


@pytest.mark.parametrize("name", sorted(TOOLBOX))
def test_each_function_is_exported_bound_and_documented(name):
    assert callable(getattr(nn, name))
    assert name in NN_EXPORTS
    row = next((line for line in SECTION.splitlines() if f"`{name}(" in line), None)
    assert row is not None, f"docs/nn.md's section does not list {name}"
    ref = TOOLBOX[name]["ref"]
    package = "scipy.special" if ref.startswith("scipy.special.") else "numpy"
    assert f"`{package}." in row and ref[len(package) + 1:] in row, (ref, row)


@pytest.mark.parametrize("name", sorted(n for n, e in TOOLBOX.items() if e["units"] != "none"))
def test_units_has_a_rule_for_each(name):
    from apsi_layers.units import nn_impls
    from apsi_layers.units.exports import units_exports

    units_exports()
    assert name in nn_impls.IMPLS


@pytest.mark.parametrize("name", sorted(TOOLBOX))
def test_the_torch_backend_has_each(name):
    pytest.importorskip("torch")
    from apsi_layers.backends.torch import nn_dispatch

    nn_dispatch.install()
    assert name in nn_dispatch.IMPLS


@pytest.mark.parametrize("name", sorted(n for n, e in TOOLBOX.items() if e["units"] == "none"))
def test_units_refuses_the_number_only_ones_by_name(name):
    from apsi_lang.errors import ApsiError
    from apsi_layers.units.exports import units_exports

    u = units_exports()["u"]
    with pytest.raises(ApsiError, match=f"nn.{name} does not take values with units: convert with magnitude"):
        getattr(nn, name)(1.0 * u.m, 2.0 * u.m)


def test_the_new_rules_sit_in_the_one_rule_table():
    from apsi_layers.nn.autograd.vjps import RULES, rule_name
    from apsi_layers.nn.numlib.toolbox_vjps import TOOLBOX_RULES

    for name, rules in TOOLBOX_RULES.items():
        assert RULES[name] is rules and rule_name(rules) == name


@pytest.mark.parametrize("name", sorted(n for n, e in TOOLBOX.items() if e["grad"] == "none (ints)"))
def test_the_index_functions_give_ints_and_record_nothing(name):
    x = np.array([[0.5, np.nan, 2.0], [3.0, 0.0, -1.0]])
    call = {"digitize": lambda t: nn.digitize(t, [0.0, 1.0])}.get(name, getattr(nn, name))
    if name in ("nanargmax", "nanargmin"):
        x = np.nan_to_num(x)
    out = call(nn.Tensor(x))
    for part in out if isinstance(out, list) else [out]:
        assert part.data.dtype == np.int64 and part.tape is None


@pytest.mark.parametrize("name", sorted(TOOLBOX))
def test_each_has_the_help_text_apsi_shows(name):
    from apsi_layers.apsi_modules import nn_module

    doc = nn_module()[name].__doc__ or ""
    assert len(doc.strip()) > 20, name
