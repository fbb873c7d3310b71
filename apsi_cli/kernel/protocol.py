"""The pipe between the kernel and its worker: one JSON object per line, each way."""

import json
import threading


class Channel:
    """Writes messages to a binary file, one per line, from any thread."""

    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()

    def send(self, **message):
        data = (json.dumps(message, ensure_ascii=True) + "\n").encode("ascii")
        with self.lock:
            self.out.write(data)
            self.out.flush()


def receive(infile):
    """The next message, or None at the end of the input."""
    line = infile.readline()
    if not line:
        return None
    return json.loads(line)
