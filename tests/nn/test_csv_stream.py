"""load_csv streams (issue 19, data files): blocks of plain numbers go through NumPy's parser, the
rest through the strict records, and the two must never disagree; the peak memory is about the final
array's; as="columns" gives one tensor per column."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apsi_lang.data_files import read_csv
from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.nn.io import csv_io

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = {"as": "columns"}


def outcome(path, **kw):
    try:
        got = nn.load_csv(path, **kw)
    except ApsiError as e:
        return "error", e.message
    if isinstance(got, nn.Tensor):
        return "tensor", got.data.tolist() and json.dumps(np.nan_to_num(got.data, nan=7e300).tolist())
    return "other", repr(got)


def strict_only(monkeypatch):
    monkeypatch.setattr(csv_io._Reader, "_fast", lambda self, block: None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet='0123456789.eE+-,\n\r\t "nafiINx_\x0c\x0b\x1f\x00é;', max_size=60),
       header=st.booleans(), block=st.sampled_from([4, 9, 1 << 20]),
       columns=st.sampled_from([None, [0], [1, 0]]), sep=st.sampled_from([",", ";", "\t"]))
def test_numpys_parser_never_disagrees_with_the_strict_reading(inside, text, header, block, columns, sep):
    if header:
        text = {",": "a,b\n", ";": "a;b\n", "\t": "a\tb\n"}[sep] + text
    Path("f.csv").write_bytes(text.encode())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(csv_io, "BLOCK_BYTES", block)
        fast = outcome("f.csv", header=header, columns=columns, sep=sep)
        strict_only(mp)
        strict = outcome("f.csv", header=header, columns=columns, sep=sep)
    if fast[0] == "error" and strict[0] == "error" and "no column" in fast[1]:
        return
    assert fast == strict


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_blocks_cut_anywhere_give_numpys_numbers(inside, monkeypatch, block):
    monkeypatch.setattr(csv_io, "BLOCK_BYTES", block)
    a = np.random.default_rng(0).standard_normal((200, 3)) * 10.0 ** np.arange(-3, 6, 3)
    np.savetxt("m.csv", a, delimiter=",", header="x,y,z", comments="", fmt="%.17g")
    np.testing.assert_array_equal(nn.load_csv("m.csv").data, a)
    np.testing.assert_array_equal(nn.load_csv("m.csv", columns=["z", "x"]).data, a[:, [2, 0]])
    cols = nn.load_csv("m.csv", **COLUMNS)
    assert list(vars(cols)) == ["x", "y", "z"]
    np.testing.assert_array_equal(cols.y.data, a[:, 1])
    Path("n.csv").write_text("\n".join(",".join(repr(float(v)) for v in row) for row in a))   # no final \n
    np.testing.assert_array_equal(nn.load_csv("n.csv", header=False).data, a)


def test_forms_other_tools_write(inside):
    Path("crlf.csv").write_bytes(b"\xef\xbb\xbfa,b\r\n1,2\r\n\r\n3,4\r\n")       # Excel: BOM and CRLF
    assert nn.load_csv("crlf.csv").tolist() == [[1.0, 2.0], [3.0, 4.0]]
    Path("r.csv").write_text('"","x","y"\n"1",0.5,2\n"2",1.5,4\n')             # R's write.csv
    with pytest.raises(ApsiError, match="the header \"\" is not a field name"):
        nn.load_csv("r.csv")
    Path("r2.csv").write_text('"id","x","y"\n"a",0.5,2\n"b",1.5,4\n')
    assert nn.load_csv("r2.csv", columns=["x", "y"]).tolist() == [[0.5, 2.0], [1.5, 4.0]]
    cols = nn.load_csv("r2.csv", **COLUMNS)
    assert cols.id == ["a", "b"] and cols.y.tolist() == [2.0, 4.0]
    Path("t.tsv").write_text("a\tb\n1\t2\n")
    assert nn.load_csv("t.tsv", sep="\t").tolist() == [[1.0, 2.0]]
    Path("old.csv").write_bytes(b"a,b\r1,2\r3,4\r")                             # classic Mac line ends
    assert nn.load_csv("old.csv").tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_text_column_picked_out_stays_on_the_fast_path(inside, monkeypatch):
    Path("l.csv").write_text("x,label,y\n" + "".join(f"{i},c{i % 3},{i / 2}\n" for i in range(1000)))
    calls = []
    real = csv_io._Reader._rows
    monkeypatch.setattr(csv_io._Reader, "_rows", lambda self, recs: calls.append(1) or real(self, recs))
    got = nn.load_csv("l.csv", columns=["x", "y"])
    assert calls == [] and got.shape == (1000, 2) and got.data[999].tolist() == [999.0, 499.5]


def test_columns_without_a_header_are_a_list(inside):
    Path("p.csv").write_text("1,a\n2,b\n")
    cols = nn.load_csv("p.csv", header=False, **COLUMNS)
    assert cols[0].tolist() == [1.0, 2.0] and cols[1] == ["a", "b"]
    assert read_csv("p.csv", header=False, **COLUMNS) == [[1, 2], ["a", "b"]]


def test_no_data_rows(inside):
    Path("h.csv").write_text("a,b\n\n")
    with pytest.raises(ApsiError, match="has no data rows"):
        nn.load_csv("h.csv")
    assert read_csv("h.csv") == [] and vars(read_csv("h.csv", **COLUMNS)) == {"a": [], "b": []}


def test_read_permission_outside_the_project(inside, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "x.csv"
    elsewhere.write_text("a\n1\n")
    for call in (lambda: nn.load_csv(str(elsewhere)), lambda: read_csv(str(elsewhere), **COLUMNS)):
        with pytest.raises(ApsiError, match="needs permission 'read'"):
            call()


MEASURE = """
import sys
from apsi_lang import permissions
from apsi_layers import nn
import numpy as np
permissions.set_current(permissions.Grants(project_root=sys.argv[1]))
np.empty(1) + 1

def peak_kb():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])

# the peak from here on: ru_maxrss would start at the parent's size (Linux keeps it across exec)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = peak_kb()
x = nn.load_csv(sys.argv[2], **({"as": "columns"} if sys.argv[3] == "columns" else {}))
print((peak_kb() - before) * 1024)
"""


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """A 300,000-row file, written once for both shapes (np.savetxt formats it in Python); only read."""
    a = np.random.default_rng(1).standard_normal((300000, 4))
    path = tmp_path_factory.mktemp("big") / "big.csv"
    np.savetxt(path, a, delimiter=",", header="a,b,c,d", comments="", fmt="%.6g")
    return path


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux's peak memory (/proc)")
@pytest.mark.parametrize("shape", ["rows", "columns"])
def test_peak_memory_is_about_the_final_array(big_csv, shape):
    """It was 886 MB for a 20 MB file: now the peak above the start is under 2x the file's size."""
    path = big_csv
    size = path.stat().st_size
    r = subprocess.run([sys.executable, "-c", MEASURE, str(path.parent), str(path), shape],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    grew = int(r.stdout)
    assert grew <= 2 * size, f"peak grew by {grew / 2**20:.1f} MB for a {size / 2**20:.1f} MB file"


def test_nan_and_inf_as_numpy_writes_them_stay_on_the_fast_path(inside, monkeypatch):
    a = np.random.default_rng(2).standard_normal((2000, 3))
    a[::7, 0], a[::11, 1], a[::13, 2] = np.nan, np.inf, -np.inf
    np.savetxt("n.csv", a, delimiter=",", header="x,y,z", comments="")
    calls = []
    real = csv_io._Reader._rows
    monkeypatch.setattr(csv_io._Reader, "_rows", lambda self, recs: calls.append(1) or real(self, recs))
    np.testing.assert_array_equal(nn.load_csv("n.csv").data, a)
    assert calls == []
    Path("m.csv").write_text("x,y\n" + "1,2\n" * 100 + "NaN,3\n")       # NumPy reads NaN; the rule does not
    with pytest.raises(ApsiError, match='line 102, column x: "NaN" is not a number here'):
        nn.load_csv("m.csv")
    Path("o.csv").write_text("x,y\n" + "1,inf\n" * 100 + "1e999,3\n")
    with pytest.raises(ApsiError, match="line 102, column x: 1e999 is beyond"):
        nn.load_csv("o.csv")


def test_many_blank_lines_give_a_compact_result(inside):
    Path("b.csv").write_text("a,b\n" + "\n\n\n".join(f"{i},{i * 2}" for i in range(100)) + "\n")
    c = nn.load_csv("b.csv", **COLUMNS)
    assert c.b.data.flags["C_CONTIGUOUS"] and c.b.tolist() == [2.0 * i for i in range(100)]
    m = nn.load_csv("b.csv")
    assert m.shape == (100, 2) and m.data.base is None or m.data.base.shape[0] == 100
