"""What the language server does with bytes an editor should never send: a message that is not UTF-8
is refused in one line (no Python traceback) and the server goes on answering."""

import json
import os
import select
import subprocess
import sys
import time

import pytest

pytest.importorskip("pygls")


def frame(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_until(process, wanted_id, timeout=30):
    buffer, found = b"", []
    os.set_blocking(process.stdout.fileno(), False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not any(m.get("id") == wanted_id for m in found):
        if select.select([process.stdout], [], [], 0.1)[0]:
            buffer += process.stdout.read() or b""
        while b"\r\n\r\n" in buffer:
            head, rest = buffer.split(b"\r\n\r\n", 1)
            length = int(head.split(b"\r\n")[0].split(b":")[1])
            if len(rest) < length:
                break
            found.append(json.loads(rest[:length]))
            buffer = rest[length:]
    return found


def test_a_message_that_is_not_utf8_is_refused_and_the_server_goes_on(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    process = subprocess.Popen([sys.executable, "-m", "apsi", "lsp"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    uri = (tmp_path / "v.apsi").as_uri()
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "'
        + uri.encode() + b'", "languageId": "apsi", "version": 1, "text": "let caf\xe9 = 1\\n"}}}',
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "apsi", "version": 2, "text": "print(1, sep=\"\")\nprint(nope)\n"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}}},
    ]
    try:
        for m in messages:
            process.stdin.write(frame(m if isinstance(m, bytes) else json.dumps(m).encode()))
        process.stdin.flush()
        found = read_until(process, 2)
        hover = next(m for m in found if m.get("id") == 2)
        assert "print(*values" in hover["result"]["contents"]["value"]
        shown = [m["params"]["message"] for m in found if m.get("method") == "window/showMessage"]
        assert any("can't decode byte 0xe9" in s for s in shown)
    finally:
        process.kill()
        stderr = process.communicate()[1].decode()
    assert "Traceback" not in stderr
