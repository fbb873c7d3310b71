"""read_csv and load_csv are strict where leniency hid mistakes (issue 19, data files): an unclosed
quote, numbers nobody meant, a column of text turned into numbers, 1e400 read as inf."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apsi_lang import csv_read
from apsi_lang.data_files import read_csv
from apsi_lang.errors import ApsiError
from apsi_layers import nn

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = {"as": "columns"}


def write(name, text):
    Path(name).write_bytes(text.encode())
    return name


@pytest.mark.parametrize("cell, value", [
    ("1", 1), ("-12", -12), ("+3", 3), (" 4 ", 4), ("\t5", 5), ("1.5", 1.5), ("-.5", -0.5), ("5.", 5.0),
    ("1e3", 1000.0), ("2E-2", 0.02), ("+1.5e+2", 150.0), ("00012", 12), ("nan", "nan"),
    ("inf", float("inf")), ("-inf", float("-inf")), ("+inf", float("inf")), ("1e308", 1e308),
])
def test_numbers_as_a_csv_user_writes_them(cell, value):
    got = csv_read.number(cell)
    if value == "nan":
        assert got != got
    else:
        assert got == value and type(got) is type(value)


@pytest.mark.parametrize("cell", ["Nan", "NaN", "NAN", "INF", "Inf", "Infinity", "infinity", "-Infinity",
                                  "1_0", "1_000.5", "0x10", "1d5", "١٢", "1e", ".", "-", "1.5.5", "1 2",
                                  "", " ", "NA", "true", "1e5.5", "\x0c1", "1" * 401])
def test_not_numbers(cell):
    assert csv_read.number(cell) is csv_read.NOT_A_NUMBER


def test_overflow_is_not_a_number_but_an_error():
    for cell in ["1e400", "-1e400", "1" * 320 + ".0"]:
        with pytest.raises(csv_read.Overflow):
            csv_read.number(cell)


def test_the_issue_file_with_an_unclosed_quote(inside):
    """It used to be one row with the rest of the file in a cell, and exit 0."""
    write("u.csv", 'a,b\n1,"unterminated\n2,3\n')
    for call in (lambda: read_csv("u.csv"), lambda: nn.load_csv("u.csv"),
                 lambda: read_csv("u.csv", **COLUMNS)):
        with pytest.raises(ApsiError, match=r'\("u.csv"\): line 2: a quoted cell starts in this record '
                                            r'and its closing " never comes'):
            call()


def test_an_unclosed_quote_far_into_a_big_file_names_its_line(inside):
    rows = "".join(f"{i},{i}\n" for i in range(30000))
    write("u.csv", "a,b\n" + rows + '7,"oops\n' + rows)
    with pytest.raises(ApsiError, match="line 30002: a quoted cell"):
        read_csv("u.csv")
    with pytest.raises(ApsiError, match="line 30002: a quoted cell"):
        nn.load_csv("u.csv")


def test_text_after_a_closing_quote_is_an_error(inside):
    write("q.csv", 'a,b\n1,2\n"x"y,3\n')
    with pytest.raises(ApsiError, match=r'line 3: a closing " must be followed by "," or the end'):
        read_csv("q.csv")


def test_quoted_cells_that_close_are_fine(inside):
    write("q.csv", 'name,n\n"a, b",1\n"two\nlines",2\n"say ""hi""",3\n')
    rows = read_csv("q.csv")
    assert [(r.name, r.n) for r in rows] == [("a, b", 1), ("two\nlines", 2), ('say "hi"', 3)]


def test_the_issue_words_stay_text(inside):
    write("w.csv", "name,v,code\nNan,1,1_0\nINF,2,7\nInfinity,3,1e3\n")
    rows = read_csv("w.csv")
    assert [r.name for r in rows] == ["Nan", "INF", "Infinity"]
    assert [r.v for r in rows] == [1, 2, 3]
    assert [r.code for r in rows] == ["1_0", "7", "1e3"]       # a column of text stays text


def test_a_column_of_text_stays_text(inside):
    write("z.csv", "zip,n\n02139,1\n10001,2\nSW1A,3\n")
    cols = read_csv("z.csv", **COLUMNS)
    assert cols.zip == ["02139", "10001", "SW1A"] and cols.n == [1, 2, 3]


def test_empty_cells_in_a_column_of_numbers_are_none(inside):
    write("e.csv", "a,b,c\n1,,x\n,2.5,\n")
    rows = read_csv("e.csv")
    assert [(r.a, r.b, r.c) for r in rows] == [(1, None, "x"), (None, 2.5, "")]


def test_nan_and_inf_as_python_and_numpy_write_them_round_trip(inside):
    np.savetxt("s.csv", np.array([[np.nan, np.inf], [-np.inf, 1.5]]), delimiter=",", header="a,b",
               comments="")
    got = nn.load_csv("s.csv").data
    assert np.isnan(got[0, 0]) and got[0, 1] == np.inf and got[1, 0] == -np.inf and got[1, 1] == 1.5
    rows = read_csv("s.csv")
    assert rows[0].b == float("inf") and rows[1].a == float("-inf")


@pytest.mark.parametrize("text, where", [
    ("a,b\n1,2\n3,1e400\n", "line 3, column b: 1e400 is beyond the range of a float64"),
    ("a,b\n1,-1e400\n", "line 2, column b: -1e400 is beyond"),
    ("a,b\n1,2\n\n\n4,-1" + "0" * 320 + ".5\n", "line 5, column b: -1000"),
], ids=["1e400", "-1e400", "long"])
def test_overflow_names_file_line_and_column(inside, text, where):
    write("o.csv", text)
    with pytest.raises(ApsiError, match=r'^read_csv\("o.csv"\): ' + where):
        read_csv("o.csv")
    with pytest.raises(ApsiError, match=r'^load_csv\("o.csv"\): ' + where):
        nn.load_csv("o.csv")
    with pytest.raises(ApsiError, match=r'^load_csv\("o.csv"\): ' + where):
        nn.load_csv("o.csv", **COLUMNS)


def test_a_long_int_is_an_int_for_read_csv_and_too_large_for_load_csv(inside):
    write("o.csv", "a,b\n1,2\n\n\n" + "1" * 350 + ",3\n")
    assert read_csv("o.csv")[1].a == int("1" * 350)
    with pytest.raises(ApsiError, match=r'load_csv\("o.csv"\): line 5, column a: 1111'):
        nn.load_csv("o.csv")
    with pytest.raises(ApsiError, match=r'load_csv\("o.csv"\): line 5, column a: 1111'):
        nn.load_csv("o.csv", **COLUMNS)


def test_overflow_in_a_column_of_text_is_text(inside):
    write("o.csv", "a\n1e400\nabc\n")
    assert read_csv("o.csv", **COLUMNS).a == ["1e400", "abc"]


@pytest.mark.parametrize("cell, hint", [
    ("NaN", "write nan, inf or -inf"), ("Infinity", "write nan, inf or -inf"), ("NA", "write nan"),
    ("", "the cell is empty"), ("1_0", "is not a number"),
])
def test_load_csv_says_how_to_write_what_it_refuses(inside, cell, hint):
    write("h.csv", f"a,b\n1,2\n3,{cell}\n")
    with pytest.raises(ApsiError, match=r'load_csv\("h.csv"\): line 3, column b: .*' + hint):
        nn.load_csv("h.csv")


def test_ragged_lines_name_the_line(inside):
    write("r.csv", "a,b\n1,2\n3\n")
    with pytest.raises(ApsiError, match="line 3 has 1 cell but the header has 2"):
        read_csv("r.csv")
    with pytest.raises(ApsiError, match="line 3 has 1 cell but the header has 2"):
        nn.load_csv("r.csv")
    with pytest.raises(ApsiError, match="line 3 has 1 cell but the header has 2"):
        nn.load_csv("r.csv", columns=["a"])


def test_as_must_be_rows_or_columns(inside):
    write("a.csv", "a\n1\n")
    with pytest.raises(ApsiError, match='as= must be "rows" or "columns", got "cols"'):
        read_csv("a.csv", **{"as": "cols"})
    with pytest.raises(ApsiError, match="has no parameter named 'ass'"):
        nn.load_csv("a.csv", ass=1)
    with pytest.raises(ApsiError, match="has no parameter named 'if'"):
        read_csv("a.csv", _kw_if=1)


PROGRAM = """use nn
write_text("u.csv", "a,b\\n1,\\"unterminated\\n2,3\\n")
write_text("w.csv", "name,x,y\\nNan,1,2.5\\nINF,3,4\\nann,5,6e0\\n")
let rows = read_csv("w.csv")
print(rows[0].name, rows[1].name, rows[2].x + 1)
let cols = read_csv("w.csv", as="columns")
print(cols.name, cols.x, cols.y)
let t = load_csv("w.csv", as="columns")
print(t.name, t.x * 2, t.y.shape)
print(load_csv("w.csv", columns=["x", "y"]))
write_text("o.csv", "a,b\\n1,2\\n3,1e400\\n")
try:
    load_csv("o.csv")
catch e:
    print(e.message)
read_csv("u.csv")
"""


def test_an_apsi_program_meets_the_strict_rules(tmp_path):
    (tmp_path / "t.apsi").write_text(PROGRAM)
    r = subprocess.run([sys.executable, "-m", "apsi", "t.apsi"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.splitlines() == [
        "Nan INF 6",
        '["Nan", "INF", "ann"] [1, 3, 5] [2.5, 4, 6.0]',
        '["Nan", "INF", "ann"] tensor([ 2.,  6., 10.]) (3,)',
        "tensor([[1. , 2.5],", "        [3. , 4. ],", "        [5. , 6. ]])",
        'load_csv("o.csv"): line 3, column b: 1e400 is beyond the range of a float64 (about ±1.8e308); '
        "write inf if infinity is meant",
    ]
    assert r.returncode == 1
    assert 't.apsi:16' in r.stderr and 'read_csv("u.csv"): line 2: a quoted cell starts' in r.stderr
    assert "Traceback (most recent call last):\n  File" not in r.stderr


def test_a_column_turning_to_text_late_gets_its_first_cells_as_written(inside):
    write("late.csv", "a,b,c,d\n" + "1.50,, ,7\n" * 500 + "x,2,  ,8\n")
    cols = read_csv("late.csv", **COLUMNS)
    assert cols.a == ["1.50"] * 500 + ["x"]             # not "1.5": the text as written
    assert cols.b == [None] * 500 + [2]                 # a column of numbers, empty cells none
    assert cols.c == [" "] * 500 + ["  "]               # only blank cells: text, as written
    assert cols.d == [7] * 500 + [8]
    rows = read_csv("late.csv")
    assert (rows[0].a, rows[0].b, rows[0].c) == ("1.50", None, " ")


def reference(text, header):
    """What read_csv should give, computed plainly: all cells as strings, then each column typed."""
    import csv
    import io

    rows = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]
    names = rows.pop(0) if header else None
    columns = [list(c) for c in zip(*rows)]
    for j, col in enumerate(columns):
        values = [csv_read.number(c) for c in col]
        numeric = [v for v, c in zip(values, col) if v is not csv_read.NOT_A_NUMBER or c.strip()]
        if numeric and all(v is not csv_read.NOT_A_NUMBER for v in numeric):
            columns[j] = [None if v is csv_read.NOT_A_NUMBER else v for v in values]
    return names, columns


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(st.lists(st.sampled_from(["1", "2.5", "", " ", "x", "nan", "Nan", "-3", "1e2",
                                                 "a b", "07"]), min_size=3, max_size=3), max_size=12))
def test_read_csv_matches_a_plain_reference(inside, cells):
    text = "a,b,c\n" + "".join(",".join(r) + "\n" for r in cells)
    write("p.csv", text)
    names, columns = reference(text, True)
    got = read_csv("p.csv", **COLUMNS)
    assert repr(vars(got)) == repr(dict(zip(names, columns or [[], [], []])))


# The rule of apsi_lang/csv_read.py's docstring, written as a regular expression: number() (which lets
# float() parse, then turns away what float() accepts beyond the rule) must agree with it.
SPEC = re.compile(r"[ \t]*(?:(?P<int>[+-]?[0-9]+)|[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                  r"|(?P<word>[+-]?inf|nan))[ \t]*")


def by_the_spec(cell):
    m = SPEC.fullmatch(cell)
    if m is None or len(cell) > csv_read.MAX_NUMBER_CHARS:
        return "not"
    if m.group("int") is not None:
        return int(cell)
    value = float(cell)
    if value in (float("inf"), float("-inf")) and m.group("word") is None:
        return "overflow"
    return value


def by_number(cell):
    try:
        value = csv_read.number(cell)
    except csv_read.Overflow:
        return "overflow"
    return "not" if value is csv_read.NOT_A_NUMBER else value


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789.eE+-_ \t\n\x0c\xa0naifINFtyx١", max_size=12)
       | st.from_regex(SPEC, fullmatch=True))
def test_number_follows_the_documented_rule(cell):
    want, got = by_the_spec(cell), by_number(cell)
    assert repr(got) == repr(want) and type(got) is type(want)


def test_a_picked_column_of_text_says_it_was_picked(inside):
    write("p.csv", "x,label\n1,a\n")
    with pytest.raises(ApsiError, match=r'line 2, column label: "a" is not a number \(columns= picked it'):
        nn.load_csv("p.csv", columns=["label"], **COLUMNS)
