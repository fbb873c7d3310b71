"""The access log (one line per request on stderr) and the numbers GET /metrics shows (Prometheus text
format 0.0.4: counters, and histograms with cumulative `le` buckets)."""

import sys
import time

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Histogram:
    def __init__(self, buckets):
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, value):
        self.total += 1
        self.sum += value
        for i, edge in enumerate(self.buckets):
            if value <= edge:
                self.counts[i] += 1
                break

    def lines(self, name):
        out, running = [], 0
        for edge, n in zip(self.buckets, self.counts):
            running += n
            out.append(f'{name}_bucket{{le="{edge}"}} {running}')
        out += [f'{name}_bucket{{le="+Inf"}} {self.total}', f"{name}_sum {self.sum!r}",
                f"{name}_count {self.total}"]
        return out

    def state(self):
        return [self.counts, self.total, self.sum]

    def add(self, state):
        counts, total, value_sum = state
        self.counts = [a + b for a, b in zip(self.counts, counts)]
        self.total += total
        self.sum += value_sum


class Observer:
    """What the server counts; touched only on the event loop's thread (no locks needed). With several
    worker processes each counts its own requests and posts them on a shared board (board.py); a
    scrape shows the sum."""

    def __init__(self, log, board=None):
        self.log, self.board = log, board
        self.requests = {}              # (method, route, status) -> count
        self.latency = Histogram(LATENCY_BUCKETS)
        self.batch_rows = Histogram(BATCH_BUCKETS)
        self.batches = 0
        self.in_flight = 0
        self.started = time.time()

    def arrived(self):
        self.in_flight += 1

    def finished(self, client, method, path, route, status, seconds):
        self.in_flight -= 1
        key = (method, route, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        self.latency.observe(seconds)
        if self.log:
            print(f"{client} - \"{_loggable(method)} {_loggable(path)}\" {status} {seconds * 1000:.1f}ms",
                  file=sys.stderr, flush=True)

    def batch(self, rows):
        self.batches += 1
        self.batch_rows.observe(rows)

    def state(self):
        """The counters, as plain data (for the board)."""
        return {"requests": [[*key, n] for key, n in self.requests.items()], "latency": self.latency.state(),
                "batch_rows": self.batch_rows.state(), "batches": self.batches, "in_flight": self.in_flight}

    def add(self, state, in_flight=True):
        for method, route, status, n in state["requests"]:
            key = (method, route, status)
            self.requests[key] = self.requests.get(key, 0) + n
        self.latency.add(state["latency"])
        self.batch_rows.add(state["batch_rows"])
        self.batches += state["batches"]
        if in_flight:
            self.in_flight += state["in_flight"]

    def join(self, slot):
        """In a worker process: post on the board's `slot`, going on from the counts a worker that
        died there left."""
        left = self.board.join(slot)
        if left is not None:
            self.add(left, in_flight=False)
        self.post()

    def post(self):
        if self.board is not None and self.board.mine is not None:
            self.board.post(self.state())

    def text(self):
        """Prometheus text: this process's numbers, and with workers the sum of all of theirs."""
        if self.board is None or self.board.mine is None:
            return self._text()
        # this worker's numbers go on the board first: a later scrape that another worker answers
        # then counts at least what this one shows, so the server's counters never go backwards
        self.post()
        total = Observer(False)
        total.started = self.started
        for state in [self.state(), *self.board.others()]:
            total.add(state)
        return total._text()

    def _text(self):
        lines = ["# HELP apsi_requests_total Requests answered, by method, route and status.",
                 "# TYPE apsi_requests_total counter"]
        for (method, route, status), n in sorted(self.requests.items()):
            lines.append(f'apsi_requests_total{{method="{method}",route="{_label(route)}",'
                         f'status="{status}"}} {n}')
        errors = sum(n for (_, _, status), n in self.requests.items() if status >= 400)
        lines += ["# HELP apsi_request_errors_total Requests answered with a status of 400 or more.",
                  "# TYPE apsi_request_errors_total counter", f"apsi_request_errors_total {errors}",
                  "# HELP apsi_request_seconds Time from a request's arrival to its answer.",
                  "# TYPE apsi_request_seconds histogram", *self.latency.lines("apsi_request_seconds"),
                  "# HELP apsi_batch_rows Rows in each predict call (dynamic batching).",
                  "# TYPE apsi_batch_rows histogram", *self.batch_rows.lines("apsi_batch_rows"),
                  "# HELP apsi_requests_in_flight Requests being answered now (this one included).",
                  "# TYPE apsi_requests_in_flight gauge", f"apsi_requests_in_flight {self.in_flight}",
                  "# HELP apsi_uptime_seconds Seconds since the server started.",
                  "# TYPE apsi_uptime_seconds gauge", f"apsi_uptime_seconds {time.time() - self.started:.3f}"]
        return "\n".join(lines) + "\n"


def _loggable(text):
    """What a client sent, safe to print in the access log: the path arrives percent-decoded, so a
    line break would forge log lines and an escape sequence would drive the operator's terminal.
    Control characters, quotes and backslashes are written as escapes (as nginx does: \\x0A)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return text                     # (the usual case, at no cost)
    return "".join(c if c.isprintable() and c not in '"\\' else
                   "\\" + c if c in '"\\' else
                   f"\\x{ord(c):02X}" if ord(c) < 0x100 else f"\\u{ord(c):04X}" for c in text)


def _label(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
