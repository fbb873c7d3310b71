"""How long `apsi lsp` takes from an edit to the diagnostics it publishes, on a generated program of
2,000 lines (or the length given): the first check after opening, then edits of one statement.

    python scripts/bench_lsp.py [LINES] [EDITS]

Prints times; asserts nothing (docs/editors.md quotes what it printed)."""

import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "editors"))
from programs import program  # noqa: E402


class Client:
    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-m", "apsi", "lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        os.set_blocking(self.process.stdout.fileno(), False)
        self.buffer = b""

    def send(self, message):
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def wait(self, accept):
        while True:
            while b"\r\n\r\n" in self.buffer:
                head, rest = self.buffer.split(b"\r\n\r\n", 1)
                length = int(head.split(b"\r\n")[0].split(b":")[1])
                if len(rest) < length:
                    break
                message, self.buffer = json.loads(rest[:length]), rest[length:]
                if accept(message):
                    return message
            select.select([self.process.stdout], [], [], 1)
            self.buffer += self.process.stdout.read() or b""


def main(lines=2000, edits=20):
    folder = Path(tempfile.mkdtemp(prefix="apsi-bench-lsp-"))
    uri = (folder / "big.apsi").as_uri()
    text = program(lines).split("\n")
    client = Client()
    client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    client.wait(lambda m: m.get("id") == 1)
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def published(version):
        return lambda m: (m.get("method") == "textDocument/publishDiagnostics"
                          and m["params"].get("version") == version)

    started = time.perf_counter()
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "apsi", "version": 1, "text": "\n".join(text)}}})
    client.wait(published(1))
    print(f"{len(text)} lines: first check {1000 * (time.perf_counter() - started):.0f} ms")
    times = []
    for i in range(edits):
        text[len(text) // 2 + i * 7] += f"  # edit {i}"
        started = time.perf_counter()
        client.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": i + 2},
            "contentChanges": [{"text": "\n".join(text)}]}})
        client.wait(published(i + 2))
        times.append(1000 * (time.perf_counter() - started))
    print(f"edit -> diagnostics: median {statistics.median(times):.0f} ms, max {max(times):.0f} ms "
          f"(of {edits}; {1000 * 0.015:.0f} ms of each is the debounce)")
    client.process.kill()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
