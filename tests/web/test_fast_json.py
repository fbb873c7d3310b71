"""serve_model's JSON through orjson (jsonio.parse, predict_route's answers): the same values and
bytes' meaning as Python's json, which reads and writes wherever orjson would differ."""

import json
import math

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from apsi_layers.web import jsonio
from apsi_layers.web.predict_route import _encode

# what a body may hold: every kind of JSON value, integers past 64 bits and floats of every size included
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**80, max_value=2**80) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=20)


def _as_json_reads_it(body):
    return repr(jsonio._read(body))         # (repr: 2**64 and 2.0**64 are equal, but not the same)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans())
def test_a_body_reads_as_pythons_json_reads_it(value, spaced):
    body = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":")).encode()
    assert repr(jsonio.parse(body)) == _as_json_reads_it(body)


@pytest.mark.parametrize("body", [
    b'{"inputs": [[18446744073709551616, 1]]}', b'[-9223372036854775809]', b"[1234567890123456789.5]",
    b"12345678901234567890123", b'{"id": "12345678901234567890"}', b"[1e-0000000000000000000000001]",
    b"[0.0012345678901234567, 0.00012345678901234567, 123456789012345678.5]", b"[0." + b"7" * 5000 + b"]",
    b"[" + b"7" * 4301 + b"]", b"[1e999]", b"[NaN]", b"\xef\xbb\xbf[1]", b'["\\ud800"]', b"\xff", b"", b"  ",
    b"[1,]", b"[" * 3000 + b"]" * 3000, b'{"a": 1, "a": 2}', b"[-0, -0.0, 1E5, 1e-400]"])
def test_bodies_where_orjson_differs_or_refuses_read_as_json_reads_them(body):
    assert repr(jsonio.parse(body)) == _as_json_reads_it(body)


def test_a_plain_body_is_read_by_orjson(monkeypatch):
    """(the point of it: json takes five times as long; it reads only where orjson would differ)"""
    def no_json(body):
        raise AssertionError("read by json")

    monkeypatch.setattr(jsonio, "_read", no_json)
    rows = [[0.5, -1.25e-7, 3.0, 0.0012345678901234567], [1, 2, 3, 922337203685477580]]
    assert jsonio.parse(json.dumps({"inputs": rows}).encode()) == ({"inputs": rows}, None)


def test_answers_are_the_same_numbers_and_nan_stays_nan():
    rows = [[0.1, 1 / 3, -2.5e-7, 1e22, 5e-324, -0.0, 1.7976931348623157e308, 12345.678]]
    out = _encode({"outputs": rows})
    assert json.loads(out) == {"outputs": rows} and b"null" not in out
    signs = [math.copysign(1, v) for v in rows[0]]
    assert [math.copysign(1, v) for v in json.loads(out)["outputs"][0]] == signs      # (-0.0 too)
    odd = {"outputs": [[math.nan, math.inf, -math.inf, 1.0]], "labels": ["null", None]}
    assert _encode(odd) == b'{"outputs":[[NaN,Infinity,-Infinity,1.0]],"labels":["null",null]}'
    with pytest.raises(UnicodeEncodeError):             # (the route's 500, as before)
        _encode({"outputs": [[1.0]], "labels": ["\ud800"]})
