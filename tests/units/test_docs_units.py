"""Every ```apsi example in docs/units.md runs as written, and its commented results are what it
prints."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "units.md"
BLOCKS = re.findall(r"```apsi\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs_and_prints_what_its_comments_say(source, run):
    _, out = run(source)
    printed = out.splitlines()
    said = [line.split("# ", 1)[1].strip() for line in source.splitlines()
            if line.startswith("print(") and "# " in line]
    for text in said:
        assert text in printed, (text, printed)
    assert printed


def test_the_catalogue_names_in_the_doc_exist(U):
    for name in ("m", "kg", "N", "J", "Pa", "km", "mg", "kilometer", "MHz", "inch", "ft", "mi", "lb", "psi",
                 "gallon", "h", "deg", "degC", "degF", "K", "c", "hbar", "k", "e", "N_A", "G", "gauss", "g0"):
        getattr(U.u, name)
    assert U.magnitude(1 * U.u.k, "J/K") == pytest.approx(1.380649e-23)
    assert U.magnitude(1 * U.u.e, "C") == pytest.approx(1.602176634e-19)
    assert U.magnitude(1 * U.u.N_A, "1/mol") == pytest.approx(6.02214076e23)
    assert U.magnitude(1 * U.u.g0, "m/s^2") == pytest.approx(9.80665)
    assert U.dimension(U.u.gauss) != U.dimension(U.u.G)
