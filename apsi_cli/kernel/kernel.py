"""The Jupyter side: an ipykernel wrapper kernel that passes cells to the confined worker."""

import os
import queue
import signal
import subprocess
import sys
import threading

from ipykernel.kernelbase import Kernel

from . import NAME
from .bar import Display
from .protocol import receive

FLAGS_ENV = "APSI_KERNEL_FLAGS"       # the permission flags, from the kernelspec's argv (__main__.py)
# A cell inside one long call in C (sum(range(10**10)), a huge matrix product) holds Python's lock, so
# the worker cannot even take the interrupt: after this long, the kernel ends the worker and says so.
KILL_AFTER_S = 5.0
# What the worker's output may be, as an allow-list: a program that wrote other MIME types (HTML, JS)
# would run script in the notebook's page. (fit's bar is text/html too, but made here, in bar.py,
# from the numbers a "progress" message carries.)
SHOWN = ("text/plain", "image/png")
STREAMS = ("stdout", "stderr")


class WorkerProcess:
    """The worker and a thread reading its answers into a queue (so waiting for one can be interrupted)."""

    def __init__(self, flags):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "apsi_cli.kernel.worker", *flags], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, start_new_session=True)   # Jupyter's interrupt reaches it through us
        self.messages = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                message = receive(self.process.stdout)
            except ValueError:
                continue
            self.messages.put(message)
            if message is None:
                return

    def send(self, op, **fields):
        import json

        data = json.dumps({"op": op, **fields}).encode("ascii") + b"\n"
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.messages.put(None)

    def interrupt(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class Held:
    """Stream text passed on to the notebook in few messages. Each print() was one iopub message: a
    loop of 20,000 prints went past ZeroMQ's high-water mark (1,000 messages queued), the messages past
    it were dropped, the cell's end among them, and the notebook showed the cell running for ever.
    Text of one stream that comes while more is waiting goes out as one message. Past BURST messages
    in a second (stdout and stderr in turns, which cannot be joined in order) each stream's text is
    gathered for HOLD_S and sent as one message per stream, as ipykernel's own streams do; below it
    the order of the writes is kept exactly."""

    HOLD_S, HOLD_CHARS, BURST = 0.1, 1 << 20, 100

    def __init__(self, send, waiting):
        self.send, self.waiting = send, waiting
        self.parts, self.size, self.since = {}, 0, 0.0      # stream name -> texts, in order of arrival
        self.window, self.count = 0.0, 0                     # stream messages sent in this second

    def add(self, name, text):
        import time

        now = time.monotonic()
        flood = self.count >= self.BURST and now - self.window < 1.0
        if not flood and self.parts and name not in self.parts:
            self.flush()
        if not self.parts:
            self.since = now
        self.parts.setdefault(name, []).append(text)
        self.size += len(text)
        if (not flood and self.waiting.empty()) or self.size > self.HOLD_CHARS:
            self.flush()
        else:
            self.tick()

    def tick(self):
        """Send what was held HOLD_S ago or more (called while waiting for the worker, too)."""
        import time

        if self.parts and time.monotonic() - self.since >= self.HOLD_S:
            self.flush()

    def flush(self):
        import time

        now = time.monotonic()
        if now - self.window >= 1.0:
            self.window, self.count = now, 0
        for name, parts in self.parts.items():
            self.send(name, "".join(parts))
            self.count += 1
        self.parts, self.size = {}, 0


class ApsiKernel(Kernel):
    implementation = NAME
    implementation_version = "0.1"
    banner = "Apsi — cells share one program; permissions as for apsi run in this folder"
    language_info = {"name": "apsi", "mimetype": "text/x-apsi", "file_extension": ".apsi",
                     "pygments_lexer": "apsi", "codemirror_mode": "python"}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flags = [f for f in os.environ.get(FLAGS_ENV, "").split("\n") if f]
        self.notes = []
        self._start_worker()

    def _start_worker(self):
        self.worker = WorkerProcess(self.flags)
        for message in self._answers():        # its start-up warnings, said by the next cell
            if message["type"] == "stream":
                self.notes.append(message["text"])

    def _answers(self):
        """The worker's messages up to its answer (done, ready) or its end, on the main thread; an
        interrupt (Jupyter's SIGINT to this process) is passed on to the worker. It is taken by a
        signal handler for as long as the cell runs, not as a KeyboardInterrupt: one raised while this
        process is drawing the bar or sending output left the worker running and the cell unanswered."""
        import time

        interrupted = [None]

        def on_interrupt(signum, frame):
            self.worker.interrupt()
            interrupted[0] = interrupted[0] or time.monotonic()

        previous = _take_interrupts(on_interrupt)
        try:
            while True:
                try:
                    message = self.worker.messages.get(timeout=Held.HOLD_S)
                except queue.Empty:
                    yield {"type": "tick"}          # (held output goes out while the cell computes)
                    if interrupted[0] is not None and time.monotonic() - interrupted[0] > KILL_AFTER_S:
                        self.worker.stop()
                        interrupted[0] = -1.0          # said below, when the end of its output arrives
                    continue
                if message is None:
                    why = ([f"apsi: interrupted, but the cell did not stop within {KILL_AFTER_S:.0f} s (it "
                            "was inside one long operation)"] if interrupted[0] == -1.0 else [])
                    yield {"type": "done", "status": "error", "ename": "WorkerEnded",
                           "evalue": (why or ["the Apsi process ended"])[0], "traceback": why, "fatal": True}
                    return
                yield message
                if message["type"] in ("done", "ready"):
                    return
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _request(self, op, **fields):
        self.worker.send(op, **fields)
        for message in self._answers():
            if message["type"] == "done":
                return message
        return {"status": "error"}

    async def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False,
                         *, cell_meta=None, cell_id=None):
        if self.notes and not silent:
            self._stream("stderr", "".join(self.notes))
            self.notes = []
        self.worker.send("execute", code=code, count=self.execution_count)
        done = None
        bar = Display(lambda kind, content: self.send_response(self.iopub_socket, kind, content))
        held = Held(self._stream, self.worker.messages)
        for message in self._answers():
            kind = message["type"]
            if kind == "stream" and not silent and message.get("name") in STREAMS:
                held.add(message["name"], str(message.get("text", "")))
                continue
            if kind == "tick":
                held.tick()
                continue
            held.flush()
            if kind == "display" and not silent:
                self._display(message)
            elif kind == "progress" and not silent:
                bar.show(message)
            elif kind == "done":
                done = message
        held.flush()
        bar.end("fit: ended with the cell")
        if done.get("fatal"):
            self._restart_worker(done)
        if done["status"] == "ok":
            return {"status": "ok", "execution_count": self.execution_count, "payload": [],
                    "user_expressions": {}}
        error = {"ename": done["ename"], "evalue": done["evalue"], "traceback": done["traceback"]}
        if not silent:
            self.send_response(self.iopub_socket, "error", error)
        return {"status": "error", "execution_count": self.execution_count, **error}

    def _restart_worker(self, done):
        self.worker.stop()
        why = "ended" if done["ename"] == "WorkerEnded" else "was stopped inside C code"
        done["traceback"] = done["traceback"] + [
            f"The Apsi process {why}: its variables are lost. A new one has started; run the cells "
            "above again."]
        self._start_worker()

    def _display(self, message):
        """A value shown: the cell's (execute_result) or show(x)'s (display_data), allow-listed."""
        data = {k: v for k, v in message.get("data", {}).items() if k in SHOWN and isinstance(v, str)}
        content = {"data": data, "metadata": {}}
        if message.get("result"):
            self.send_response(self.iopub_socket, "execute_result",
                               {**content, "execution_count": self.execution_count})
        else:
            self.send_response(self.iopub_socket, "display_data", content)

    def _stream(self, name, text):
        self.send_response(self.iopub_socket, "stream", {"name": name, "text": text})

    async def do_complete(self, code, cursor_pos):
        answer = self._request("complete", code=code, pos=cursor_pos)
        matches = answer.get("matches", [])
        return {"status": "ok", "matches": matches, "cursor_start": answer.get("cursor_start", cursor_pos),
                "cursor_end": answer.get("cursor_end", cursor_pos),
                "metadata": {"_jupyter_types_experimental": [
                    {"text": m, "type": k, "start": answer["cursor_start"], "end": answer["cursor_end"]}
                    for m, k in zip(matches, answer.get("kinds", []))]}}

    async def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
        answer = self._request("inspect", code=code, pos=cursor_pos)
        found = bool(answer.get("found"))
        return {"status": "ok", "found": found, "metadata": {},
                "data": {"text/plain": answer["text"]} if found else {}}

    async def do_is_complete(self, code):
        from apsi_lang.errors import ApsiSyntaxError
        from apsi_lang.parser import Parser

        from ..repl import needs_more

        try:
            Parser(code, "<cell>").parse_program()
            more = needs_more(code)
        except ApsiSyntaxError as e:
            if not e.incomplete:
                return {"status": "invalid"}
            more = True
        except RecursionError:          # nested deeper than this thread parses: the run will say
            return {"status": "complete"}
        if more:
            last = code.rstrip("\n").split("\n")[-1]
            indent = last[:len(last) - len(last.lstrip())]
            deeper = "    " if last.rstrip().endswith(":") else ""
            return {"status": "incomplete", "indent": indent + deeper}
        return {"status": "complete"}

    async def do_shutdown(self, restart):
        self.worker.stop()
        return {"status": "ok", "restart": restart}


def _take_interrupts(handler):
    """SIGINT to `handler` (the previous handler returned), on the main thread; elsewhere None and
    nothing changes (only the main thread may set a handler, and only it receives the signal)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, handler)
