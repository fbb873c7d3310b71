"""The language server: diagnostics from the real parser and compiler, hover, completion, go-to-
definition and document symbols for .apsi files.

Each document is checked on its own thread (one for all documents, so checks never run at once), by
an incremental checker (apsi_cli/editor/incremental.py): an edit re-checks the top-level statements
it touched. Requests (hover, completion, …) are answered from the last finished check while the next
one runs, so a very large file never makes the editor wait. Nothing here runs the program."""

import asyncio
import gc
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ..editor.incremental import Checker
from . import convert

DEBOUNCE_S = 0.015          # edits closer together than this are checked once (typing)


class State:
    """What the server knows of one open document."""

    def __init__(self, uri):
        path = to_fs_path(uri) or uri
        self.path = path
        self.folder = str(Path(path).parent) if os.path.isabs(path) else os.getcwd()
        self.checker = Checker(path, self.folder, _grants(self.folder))
        self.outline = None           # the last finished check's DocumentOutline
        self.task = None


def _grants(folder):
    """The folder's grants as `apsi run` there would take them without flags (its trusted apsi.toml);
    the file's permission notes are given against them."""
    import contextlib
    import io

    from .. import runner

    try:
        with contextlib.redirect_stderr(io.StringIO()):     # stderr is the server's log
            return runner.build_grants({}, folder)
    except Exception:               # a broken apsi.toml is said when the program runs; here: none
        from apsi_lang import permissions

        return permissions.Grants(project_root=Path(folder))


class ApsiServer(LanguageServer):
    def __init__(self):
        super().__init__("apsi", "0.1")
        self.states = {}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="apsi-check")
        self.preempt = threading.Event()    # set: the running check stops for a more urgent one

    def state(self, uri):
        if uri not in self.states:
            self.states[uri] = State(uri)
        return self.states[uri]

    def schedule(self, uri, delay, urgent=True):
        state = self.state(uri)
        if state.task is not None:
            state.task.cancel()
        state.task = asyncio.ensure_future(self._check(uri, state, delay, urgent))

    async def _check(self, uri, state, delay, urgent):
        """Check the document's current text on the checking thread and publish what it finds. An
        edit (urgent) makes a running check of another document stop at its next statement; that one
        goes on afterwards from where it stopped (its checker keeps every statement it checked)."""
        await asyncio.sleep(delay)
        document = self.workspace.get_text_document(uri)
        version, text = document.version, document.source
        if urgent:
            self.preempt.set()
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self.pool, self._run_check, state, text, urgent)
        if result is None:                  # stopped for another document's check: resume after it
            self.schedule(uri, 0, urgent=False)
            return
        found, outline = result
        state.outline = outline
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[convert.diagnostic(d) for d in found]))

    def _run_check(self, state, text, urgent):
        """On the checking thread: (diagnostics, outline), or None when preempted."""
        from ..editor.incremental import Stopped

        if urgent:
            self.preempt.clear()            # this one runs now; the next edit may stop it in turn
        from apsi_lang import bigstack

        # a check keeps every statement's tokens and trees: millions of objects for a 100,000-line file,
        # which each of Python's full collections walked again as they grew (a sixth of the check)
        collecting = gc.isenabled()
        gc.disable()
        try:        # on a thread whose stack holds the parser's recursion (deeply nested brackets)
            return bigstack.call(lambda: state.checker.check(text, stop=self.preempt.is_set))
        except Stopped:
            return None
        except Exception as e:      # a bug: said on the file's first line; the server goes on
            from ..editor.check import WARNING, Diagnostic

            said = (f"apsi lsp could not check this file ({type(e).__name__}: {e}): this is a bug in Apsi, "
                    "please report it")
            return [Diagnostic(1, 1, 2, said, WARNING)], state.outline
        finally:
            if collecting:
                gc.enable()


server = ApsiServer()


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls, params):
    ls.schedule(params.text_document.uri, 0)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls, params):
    ls.schedule(params.text_document.uri, DEBOUNCE_S)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls, params):
    ls.schedule(params.text_document.uri, 0)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls, params):
    state = ls.states.pop(params.text_document.uri, None)
    if state is not None and state.task is not None:
        state.task.cancel()
    ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                    diagnostics=[]))


def _at(ls, uri, pos):
    """(the document's lines, line, column) for a client's position: within the text, and its UTF-16
    units as code points. An editor may ask at a place the text no longer has (a position from before
    an edit, past a line's end): that was an IndexError answered as an internal error."""
    lines = ls.workspace.get_text_document(uri).source.split("\n")
    line = min(max(pos.line, 0), len(lines) - 1)
    return lines, line, _code_points(lines[line], max(pos.character, 0))


def _code_points(text, units):
    """The column of `units` UTF-16 code units into `text` (a character outside the BMP is two)."""
    if text.isascii():
        return min(units, len(text))
    n = 0
    for i, ch in enumerate(text):
        if n >= units:
            return i
        n += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls, params):
    from .navigate import hover_text

    uri, pos = params.text_document.uri, params.position
    text = hover_text(ls.state(uri), *_at(ls, uri, pos))
    if not text:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text))


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=["."]))
def completion(ls, params):
    from ..editor.complete import candidates

    uri, pos = params.text_document.uri, params.position
    state = ls.state(uri)
    exports = lambda module: state.checker.exports.get(module, {})   # noqa: E731 (filled by the checks)
    found = candidates(*_at(ls, uri, pos), state.folder, None, state.outline, exports)
    return T.CompletionList(is_incomplete=False, items=[convert.completion(*f) for f in found])


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def definition(ls, params):
    from .navigate import find_definition

    uri, pos = params.text_document.uri, params.position
    found = find_definition(ls.state(uri), *_at(ls, uri, pos))
    if found is None:
        return None
    path, d = found
    target = uri if path is None else Path(path).as_uri()
    return T.Location(uri=target, range=convert.name_range(d))


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(ls, params):
    state = ls.state(params.text_document.uri)
    if state.outline is None:
        return []
    return [convert.symbol(d) for d in state.outline.definitions if d.top]


class _NoTraceback:
    """A log record's text without the Python traceback (shown only with APSI_DEBUG=1): a message a
    client sends that is not UTF-8 or not JSON is refused in one line, and the server goes on."""

    def filter(self, record):
        record.exc_info, record.exc_text = None, None
        return True


def main():
    import logging

    logging.basicConfig(level=logging.WARNING, format="apsi lsp: %(message)s")
    if os.environ.get("APSI_DEBUG", "") in ("", "0"):
        for handler in logging.getLogger().handlers:
            handler.addFilter(_NoTraceback())
    try:
        server.start_io()
    except SystemExit as e:         # the editor's `exit` (pygls ends the loop with sys.exit)
        code = e.code if isinstance(e.code, int) else 1
    else:
        code = 0
    # the process ends here: Python's own finalization would garbage-collect every check's trees
    # (seconds after a 100,000-line file) and wait for a check still running, while the editor waits
    logging.shutdown()
    os._exit(code)
