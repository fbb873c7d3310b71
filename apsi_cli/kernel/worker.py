"""The kernel's worker: one Apsi program state that cells run in, under the sandbox.

    python -m apsi_cli.kernel.worker [PERMISSION FLAGS]

Started by the kernel in the notebook's folder. Its permissions are those of `apsi run` there (the
flags, the nearest trusted apsi.toml), and the kernel wall goes up before any cell runs. Requests
come on standard input, answers go out on what was standard output (protocol.py); the program's
print() reaches the notebook as stream messages, and anything written below Python (C libraries) to
the process's own descriptors goes to the kernel's log.
"""

import base64
import io
import os
import sys
from pathlib import Path

from .protocol import Channel, receive

PERMISSION_KEYS = {"allow_python", "allow_all", "allow_read", "allow_write", "allow_net", "allow_env",
                   "allow_run", "deny_read", "deny_write", "deny_net", "deny_env", "deny_run"}


def parse_flags(argv):
    """`--allow-read=data --allow-python -A` -> the perms dict the runner takes."""
    perms = {}
    for arg in argv:
        if arg in ("-A", "--allow-all"):
            perms["allow_all"] = True
            continue
        key, eq, value = arg.lstrip("-").partition("=")
        key = key.replace("-", "_")
        if not arg.startswith("--") or key not in PERMISSION_KEYS:
            raise SystemExit(f"apsi kernel: unknown permission flag {arg!r}")
        perms[key] = value if eq else (True if key in ("allow_python", "allow_all") else "*")
    return perms


class Stream(io.TextIOBase):
    """sys.stdout / sys.stderr of the worker: each write is a stream message to the kernel. A person
    watches it, though it is no terminal: fit shows its progress by default (a line per epoch, and
    its live bar through `live`)."""

    watched = True

    def __init__(self, name, channel):
        import threading

        self.name_, self.channel = name, channel
        self.pending, self.lock = [], threading.Lock()

    def write(self, text):
        """Whole lines go out at once (print's text and its newline in one message); a part line
        waits for its end, a flush, or the cell's end."""
        text = str(text)
        with self.lock:
            self.pending.append(text)
            if "\n" in text or sum(map(len, self.pending)) > 65536:
                self._send()
        return len(text)

    def flush(self):
        with self.lock:
            self._send()

    def live(self, **numbers):
        """fit's progress (training/progress.py Live): numbers for the kernel to draw as a bar that
        updates in place; text printed before it goes out first."""
        with self.lock:
            self._send()
            self.channel.send(type="progress", **numbers)

    def _send(self):
        if self.pending:
            self.channel.send(type="stream", name=self.name_, text="".join(self.pending))
            self.pending = []

    def writable(self):
        return True

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"


class Worker:
    def __init__(self, channel, perms):
        from apsi_lang import interactive, program

        self.channel, self.perms = channel, perms
        self.folder = Path.cwd()
        interactive.set_active(True)          # fit returns what it has on an interrupt, as in the REPL
        self.ns = program.new_namespace(str(self.folder), echo_to=self.display)
        self.ns["show"] = self.show
        self.startup_error = None

    def prepare(self):
        """Grants and the wall, as `apsi run` takes them; an error here is said by every cell."""
        from apsi_lang.errors import ConfigError

        from .. import runner

        try:
            runner._prepare(self.perms, self.folder)
        except ConfigError as e:
            self.startup_error = f"apsi: error in apsi.toml: {e}"
        except runner.FlagError as e:
            self.startup_error = f"apsi: {e}"
        except Exception as e:                # confine's own error (an ApsiError) and the like
            self.startup_error = f"apsi: {getattr(e, 'message', e)}"

    # ---- what cells show ----
    def display(self, value):
        data = rich_data(value)
        _flush_output()                       # printed before it, shown before it
        self.channel.send(type="display", data=data, result=True)

    def show(self, value):
        """show(x): display x now (a figure as an image), in the middle of a cell."""
        data = rich_data(value)
        _flush_output()
        self.channel.send(type="display", data=data, result=False)

    # ---- requests ----
    def execute(self, code, count):
        failed = ("ConfigError", self.startup_error) if self.startup_error else self._run(code, count)
        _flush_output()                       # what the cell printed comes before its answer
        if failed is None:
            self.channel.send(type="done", status="ok")
        else:
            self.error(*failed)

    def _run(self, code, count):
        """Run one cell; None, or (name, Apsi's view of the error[, a hint]) when it failed."""
        from apsi_lang import bigstack, program, report
        from apsi_lang.errors import ApsiSyntaxError

        name = f"<cell {count}>"

        def run():
            program.compile_source(code, name, self.ns, echo=True).run()

        try:
            bigstack.call(run)
        except ApsiSyntaxError as e:
            return "SyntaxError", report.render_syntax_error(e)
        except SystemExit as e:
            return "Exit", (f"exit({'' if e.code is None else e.code}) ends the program: the kernel keeps "
                            "running; restart it for a fresh state")
        except KeyboardInterrupt as e:
            from apsi_lang import signals

            if bigstack.abandoned:           # stuck in C code: this process cannot go on
                _flush_output()
                self.channel.send(type="done", status="error", ename="Interrupted",
                                  evalue="", traceback=[f"apsi: {signals.describe(e)}"], fatal=True)
                os._exit(130)
            return "Interrupted", f"apsi: {signals.describe(e)}"
        except BaseException as e:
            return type(e).__name__, report.render_runtime_error(e), self.permission_hint(e)
        finally:
            bigstack.release_signals()
        return None

    def permission_hint(self, e):
        from apsi_lang.errors import PermissionDenied

        if not isinstance(e, PermissionDenied):
            return ""
        flag = f"--allow-{e.permission}"
        return (f"\nIn this notebook: reinstall the kernel with the permission (apsi kernel install "
                f"{flag} …) and restart it, or grant it in {self.folder / 'apsi.toml'} ([run] allow = "
                f"[\"{e.permission}\"]) and trust that file (apsi trust {self.folder}), then restart "
                "the kernel.")

    def error(self, ename, text, hint=""):
        """The cell's error: its Apsi view as the traceback; the message line (not indented) as the value."""
        evalue = ([line for line in text.split("\n") if line and not line[0].isspace()] or [text])[-1]
        self.channel.send(type="done", status="error", ename=ename, evalue=evalue, traceback=[text + hint])

    def complete(self, code, pos):
        from ..editor.complete import candidates
        from ..editor.outline import Outline

        lines, line, col = position(code, pos)
        found = candidates(lines, line, col, str(self.folder), self.ns, Outline(code, "<cell>"))
        start = pos - len(_prefix(lines[line][:col]))
        self.channel.send(type="done", status="ok", matches=[label for label, _ in found],
                          kinds=[kind for _, kind in found], cursor_start=start, cursor_end=pos)

    def inspect(self, code, pos):
        from ..editor.docs import help_text
        from ..editor.outline import word_at

        lines, line, col = position(code, pos)
        qualifier, word = word_at(lines, line, col)
        text = None
        if qualifier is None and word in self.ns and not word.startswith("_"):
            text = help_text(word, self.ns[word])
        elif qualifier is None:
            text = help_text(word)
        elif qualifier in self.ns:
            from ..editor.complete import attributes

            value = self.ns[qualifier]
            if word in attributes(value):
                from apsi_lang import sandbox

                text = help_text(f"{qualifier}.{word}", sandbox.get_attr(value, word))
        self.channel.send(type="done", status="ok", found=bool(text), text=text or "")


def _flush_output():
    sys.stdout.flush()
    sys.stderr.flush()


def _prefix(text):
    import re

    return re.search(r"\w*$", text).group(0)


def position(code, pos):
    """(lines, line, col), 0-based, of a character offset in `code`."""
    before = code[:pos]
    line = before.count("\n")
    col = len(before) - (before.rfind("\n") + 1)
    return code.split("\n"), line, col


def rich_data(value):
    """The MIME bundle for a value: its Apsi text, and a PNG for a figure of `use plot`."""
    from apsi_lang.values import show

    data = {"text/plain": show(value, quoted=True)}
    figure = sys.modules.get("apsi_layers.plot.figure")
    if figure is not None and type(value) is figure.Figure:
        from apsi_layers.plot import render

        data["image/png"] = base64.b64encode(render.draw(value, "png", "show(figure)")).decode("ascii")
    return data


def _die_with_parent():
    """The worker ends when the kernel does, even in the middle of a cell (PR_SET_PDEATHSIG)."""
    import signal

    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _next_request(requests):
    """(the next request or None at the end of the input, whether a Ctrl-C came for it).

    The kernel passes a Ctrl-C on only after it has written its request, and asks for nothing more
    before the answer; so a Ctrl-C that comes while nothing is waiting on the pipe was meant for a
    request already answered (nothing to stop), and one that comes once a request is waiting is for
    that request. While the request is awaited and read, Ctrl-C is only noted: raised as an exception
    there it lost the line being read (a loaded machine runs the worker after the kernel has written
    and interrupted), and the kernel waited for an answer that never came."""
    import select
    import signal

    ready, came = [False], []

    def note(signum, frame):
        came.append(ready[0] or bool(select.select([requests], [], [], 0)[0]))

    previous = signal.signal(signal.SIGINT, note)
    try:
        select.select([requests], [], [])     # (retried after `note`: PEP 475)
        ready[0] = True
        return receive(requests), any(came)
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    import signal

    from apsi_lang import signals

    # the kernel process ignores SIGINT outside its handlers (ipykernel), and an ignored signal stays
    # ignored across exec: Ctrl-C is what the kernel passes on here to stop a cell
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signals.install()
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                     # C libraries' writes to fd 1 go to the kernel's log
    channel = Channel(protocol_out)
    sys.stdout, sys.stderr = Stream("stdout", channel), Stream("stderr", channel)
    _die_with_parent()
    worker = Worker(channel, parse_flags(argv))
    worker.prepare()                  # its warnings (an untrusted apsi.toml) go out as stderr
    channel.send(type="ready")
    requests = sys.stdin.buffer
    sys.stdin = io.StringIO()         # input() meets the end of input: the pipe carries requests only
    while True:
        request, interrupted = _next_request(requests)
        if request is None:
            return 0
        try:
            if interrupted:           # Ctrl-C for this request came before it ran: it does not run
                raise KeyboardInterrupt
            getattr(worker, request.pop("op"))(**request)
        except KeyboardInterrupt:     # before the request ran, or after the cell ended, before its answer
            channel.send(type="done", status="error", ename="Interrupted", evalue="",
                         traceback=["apsi: interrupted (Ctrl-C)"])
        except Exception as e:        # a completion or inspection that failed: the program's state stays
            said = f"apsi kernel: internal error: {type(e).__name__}: {e} (a bug in Apsi: please report it)"
            channel.send(type="done", status="error", ename="InternalError", evalue=said, traceback=[said])


if __name__ == "__main__":
    sys.exit(main())
