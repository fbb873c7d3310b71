"""Request bodies to Apsi values, Apsi values to JSON bytes.

Decoding: objects become maps, arrays lists, null none; NaN and Infinity are not JSON and are refused
(as read_json does). orjson reads a body where its reading is Python json's, json the others (parse).
Encoding takes only Apsi's plain data (maps with text keys, records, lists, tuples, text, numbers,
bools, none) and tensors (as nested lists), so nothing else leaves the server.
Floats are written with Python's shortest round-trip repr: a client reading them gets the same bits.

A number of more than MAX_DIGITS digits is refused before parsing: converting one takes time that
grows with the square of its length, and a program's run lifts Python's own limit on it
process-wide (apsi_lang/program.py), so a single 600,000-digit integer would hold the event loop
for seconds. Text that UTF-8 cannot hold (a lone surrogate such as "\ud800") is refused by name.
"""

import json

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record, a_type


def parse(body):
    """(value, None) for a JSON body; (None, why) when it is not JSON.

    orjson reads a body about five times as fast as json (a 32-row request: 50 against 240 µs) and
    gives the same values, except that it reads an integer beyond 64 bits as a float where json gives
    the int. So a body that may hold one, or a number refused below, is read by json (_read), and so
    is every body orjson refuses: what is wrong is said in json's words."""
    import orjson

    if _orjson_reads_as_json(body):
        try:
            return orjson.loads(body), None
        except orjson.JSONDecodeError:
            pass
    return _read(body)


def _orjson_reads_as_json(body):
    """Whether orjson's reading of the body is json's: no run of 19 digits or more but in a fraction
    (an integer part that may pass 64 bits: 2**63 has 19 digits), and none of more than MAX_DIGITS
    digits. Digits in text or an exponent count too: such a body is only read the slower way."""
    if len(body) > MAX_DIGITS and _long_number(body):
        return False
    text = body.translate(_DIGITS_AND_DOTS)            # every digit as "0", "." as ".", the rest " "
    if _INT_RUN not in text:                            # (most bodies: a quick search, as no "0" repeats)
        return True
    return not (text.startswith(_INT_RUN) or b" " + _INT_RUN in text)


def _read(body):
    """parse with Python's json: the exact reading, and the words for what is wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"the body is not UTF-8 text (byte {e.start})"
    if not text or text.isspace():
        return None, "the body is empty; send JSON"
    if len(body) > MAX_DIGITS and _long_number(body):
        return None, (f"the body holds a number of more than {MAX_DIGITS} digits; send numbers as "
                      "floats or shorter ints")
    try:
        if text.startswith("\ufeff"):         # (as json.loads says it)
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return _DECODER.decode(text), None
    except json.JSONDecodeError as e:
        return None, f"the body is not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
    except RecursionError:
        return None, "the JSON is nested too deeply"
    except ValueError as e:                 # NaN/Infinity, a number too long to convert
        return None, f"the body is not valid JSON: {e}"


MAX_DIGITS = 4300          # Python's default limit on the digits of an int read from text
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * (MAX_DIGITS + 1)
_DIGITS_AND_DOTS = bytes(48 if 48 <= b <= 57 else 46 if b == 46 else 32 for b in range(256))
_INT_RUN = b"0" * 19
_BLOCK = MAX_DIGITS // 2            # a run of MAX_DIGITS + 1 digits covers a whole block this long


def _long_number(body):
    """Whether the body holds a run of more than MAX_DIGITS digits, in time linear in the body: such a
    run covers at least one whole aligned block of _BLOCK bytes, and most blocks show a non-digit in
    their first bytes (isdigit stops there); only a block of digits leads to the exact search (every
    digit as "0", every other byte as " ", one substring search). A regular expression took as long as
    parsing the JSON."""
    if not any(body[i:i + _BLOCK].isdigit() for i in range(0, len(body) - _BLOCK + 1, _BLOCK)):
        return False
    return _LONG_RUN in body.translate(_DIGITS)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON (write null, or a string)")


# one decoder for every body: json.loads with an option builds a new one per call, a third of the
# time a short body takes to parse
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def dumps(value, where):
    """JSON bytes for an Apsi value; ApsiError naming `where` for a value JSON cannot hold."""
    try:
        data = plain(value, where)
    except RecursionError:
        raise ApsiError(f"{where}: the value is nested too deeply for JSON (or holds itself)") from None
    return utf8(json.dumps(data, ensure_ascii=False, separators=(",", ":")), where)


def utf8(text, where):
    """Text as UTF-8 bytes; ApsiError naming `where` for text UTF-8 cannot hold (a lone surrogate)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = ascii(text[e.start])[1:-1]
        raise ApsiError(f"{where}: the text holds {bad}, half of a surrogate pair, which UTF-8 cannot "
                        "send; send whole characters") from None


def plain(value, where):
    t = type(value)
    if value is None or t in (str, int, float, bool):
        return value
    if t is list or t is tuple:
        return [plain(v, where) for v in value]
    if t is dict:
        bad = [k for k in value if type(k) is not str]
        if bad:
            raise ApsiError(f"{where}: a map sent as JSON needs text keys, not {a_type(bad[0])}")
        return {k: plain(v, where) for k, v in value.items()}
    if t is Record:
        return {k: plain(v, where) for k, v in vars(value).items()}
    array = _array_of(value)
    if array is not None:
        return array.tolist()
    raise ApsiError(f"{where}: {a_type(value)} cannot be sent as JSON (send maps, records, lists, text, "
                    "numbers, bools, none or tensors)")


def _array_of(value):
    """The NumPy array behind a tensor or an array; None for anything else (NumPy is not imported)."""
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        return None
    if isinstance(value, np.ndarray | np.generic):
        return np.asarray(value)
    tensor = sys.modules.get("apsi_layers.nn.autograd.tensor")
    if tensor is not None and type(value) is tensor.Tensor:
        return value.data
    return None
