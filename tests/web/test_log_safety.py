"""What a client sends cannot forge access-log lines or reach the operator's terminal as escape
sequences: the path arrives percent-decoded, and the access log writes it with its control
characters, quotes and backslashes escaped."""

import httpx

PROGRAM = """use web
fn key(r):
    return r.headers[r.query["k"]]
serve({"/ok": fn(r) => 1, "/key": key}, port=PORT)
"""


def test_a_path_with_line_breaks_and_escape_sequences_is_logged_on_one_escaped_line(start):
    server = start(PROGRAM)
    forged = '/x%0A127.0.0.1 - "GET /admin" 200 0.1ms%1B[2J%1B]0;owned%07\\'
    r = httpx.get(server.url + forged.replace(" ", "%20").replace('"', "%22"))
    assert r.status_code == 404
    # a client's text in an error of the handler (here a header's name), on the Apsi traceback
    assert httpx.get(f"{server.url}/key", params={"k": "\x1b[2J\nfake"}).status_code == 500
    assert httpx.get(f"{server.url}/ok").status_code == 200
    code, _, err = server.stop()
    assert code == 0
    assert "\x1b" not in err and "\x07" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("127.0.0.1 - ")]
    assert lines[0] == ('127.0.0.1 - "GET /x\\x0A127.0.0.1 - \\"GET /admin\\" 200 0.1ms\\x1B[2J\\x1B]0;owned'
                        '\\x07\\\\" 404 ' + lines[0].rsplit(" ", 1)[1])
    assert not any(line.startswith('127.0.0.1 - "GET /admin"') for line in err.splitlines())
    assert lines[-1].startswith('127.0.0.1 - "GET /ok" 200 ')


def test_quoted_strings_show_control_characters_as_apsi_escapes():
    from apsi_lang.values import show

    assert show(["a\x1b[2Jb", "\x07\r\x00", "line\nnext\t", "caf\u00e9 \u2028"]) == (
        '["a\\x1b[2Jb", "\\x07\\r\\x00", "line\\nnext\\t", "caf\u00e9 \\u2028"]')
    assert show("a\x1bb") == "a\x1bb"             # (print of a string itself writes it as it is)
