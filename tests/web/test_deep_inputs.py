"""Inputs nested thousands of lists deep (a few KB of JSON) are the client's mistake, answered 422 in
words, not a RecursionError answered as an internal error."""

import httpx

from .test_serve_model import MODEL

DEEP = 5000


def test_lists_nested_too_deep_are_named_not_an_internal_error(start):
    server = start(MODEL.format(options=""))
    body = '{"inputs": ' + "[" * DEEP + "1" + "]" * DEEP + "}"
    r = httpx.post(f"{server.url}/predict", content=body, timeout=10)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == ("predict: inputs must be a tensor or a (nested) list of numbers of equal "
                                 "lengths; inputs is lists nested more than 64 deep (tensors have at most 64 "
                                 "axes)")
    assert httpx.post(f"{server.url}/predict", json={"inputs": [[1, 2, 3, 4]]}).status_code == 200
    code, _, err = server.stop()
    assert code == 0 and "internal error" not in err
