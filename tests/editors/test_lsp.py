"""`apsi lsp` as an editor runs it: a real server process over stdio, driven by pytest-lsp's client."""

import asyncio
import sys
import time

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
pytest.importorskip("pytest_asyncio")

from lsprotocol import types as T  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from .programs import program  # noqa: E402

HELPERS = "fn double(x):\n    return x * 2\n\nlet scale = 3\n"


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=[sys.executable, "-m", "apsi", "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(T.InitializeParams(capabilities=T.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lsp")
    (folder / "helpers.apsi").write_text(HELPERS)
    return folder


_versions = {}


def open_doc(client, path, text):
    uri = path.as_uri()
    _versions[uri] = 1
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=uri, language_id="apsi", version=1, text=text)))
    return uri


def change_doc(client, uri, text):
    _versions[uri] += 1
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        T.VersionedTextDocumentIdentifier(uri=uri, version=_versions[uri]),
        [T.TextDocumentContentChangeWholeDocument(text=text)]))


async def diagnostics(client, uri, until, timeout=30):
    """The document's diagnostics once `until(them)` holds (the server publishes after each check)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.diagnostics.get(uri)
        if found is not None and until(found):
            return found
        await asyncio.sleep(0.005)
    raise AssertionError(f"no diagnostics as expected for {uri}: {client.diagnostics.get(uri)}")


def messages(found):
    return [(d.range.start.line, d.message, d.severity) for d in found]


@pytest.mark.asyncio(loop_scope="module")
async def test_diagnostics_on_open_and_on_change(client, project):
    text = ("use helpers\nlet n = double(2)\nprint(len(n, 2))\nprint(nope)\n"
            "let secret = getenv(\"HOME\")\n")
    uri = open_doc(client, project / "main.apsi", text)
    found = messages(await diagnostics(client, uri, lambda d: len(d) >= 3))
    assert (2, "len() takes 1 positional argument but is given 2", T.DiagnosticSeverity.Error) in found
    assert any(line == 3 and "undefined name 'nope'" in m for line, m, _ in found)
    assert any(line == 4 and "needs permission 'env'" in m and s == T.DiagnosticSeverity.Information
               for line, m, s in found)
    change_doc(client, uri, "use helpers\nlet n = double(2)\nprint(n)\n")
    await diagnostics(client, uri, lambda d: len(d) == 0)
    change_doc(client, uri, "use helpers\nlet n = double(2\n")
    found = await diagnostics(client, uri, lambda d: len(d) == 1)
    assert "never closed" in found[0].message and found[0].range.start.line == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_an_error_in_a_used_file_is_shown_on_the_use_line(client, project):
    (project / "broken.apsi").write_text("let = 1\n")
    (project / "latin1.apsi").write_bytes(b"let caf\xe9 = 1\n")        # not UTF-8
    uri = open_doc(client, project / "user.apsi", "print(1)\nuse broken\nuse latin1\n")
    found = await diagnostics(client, uri, lambda d: len(d) == 2)
    assert found[0].range.start.line == 1 and "in module 'broken'" in found[0].message
    assert found[1].range.start.line == 2 and "latin1.apsi is not UTF-8 text" in found[1].message


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_completion_definition_and_symbols(client, project):
    text = ("use helpers as h\nuse helpers\nlet count = 41\nfn area(w, h2=1):\n    return w * h2\n"
            "print(area(count))\nh.double(scale)\n")
    uri = open_doc(client, project / "nav.apsi", text)
    await diagnostics(client, uri, lambda d: True)
    doc = T.TextDocumentIdentifier(uri=uri)

    async def hover(line, col):
        result = await client.text_document_hover_async(T.HoverParams(doc, T.Position(line, col)))
        return result.contents.value if result else None

    assert "print(*values" in await hover(5, 2)
    assert "fn area(w, h2=…)" in await hover(5, 8)
    assert "int" in await hover(5, 12)                    # count: let count = 41

    async def complete(line, col):
        result = await client.text_document_completion_async(T.CompletionParams(doc, T.Position(line, col)))
        return {item.label for item in result.items}

    change_doc(client, uri, text + "pri\nh.\nuse \n")
    await asyncio.sleep(0.2)
    assert "print" in await complete(7, 3)
    assert {"double", "scale"} <= await complete(8, 2)
    assert {"helpers", "nn", "layers"} <= await complete(9, 4)

    async def definition(line, col):
        return await client.text_document_definition_async(T.DefinitionParams(doc, T.Position(line, col)))

    here = await definition(5, 8)                          # area( -> fn area
    assert here.uri == uri and here.range.start == T.Position(3, 3)
    there = await definition(6, 3)                         # h.double -> helpers.apsi
    assert there.uri == (project / "helpers.apsi").as_uri() and there.range.start == T.Position(0, 3)
    plain = await definition(6, 10)                        # scale, from `use helpers`
    assert plain.uri.endswith("helpers.apsi") and plain.range.start.line == 3

    symbols = await client.text_document_document_symbol_async(T.DocumentSymbolParams(doc))
    names = {s.name: s for s in symbols}
    assert {"h", "helpers", "count", "area"} <= set(names)
    assert names["area"].kind == T.SymbolKind.Function


@pytest.mark.asyncio(loop_scope="module")
async def test_positions_the_text_no_longer_has_and_utf16_columns(client, project):
    """An editor asks at positions from before an edit (past a line's end, past the last line): each
    was an IndexError answered as an internal error. Columns are UTF-16 units (LSP's default): after
    an emoji (two units) the name hovered is the one the editor points at."""
    uri = open_doc(client, project / "stale.apsi", 'let count = 3\nlet s = ["😀😀😀😀", count]\n')
    await diagnostics(client, uri, lambda d: True)
    doc = T.TextDocumentIdentifier(uri=uri)
    for line, col in [(1, 500), (40, 3), (0, 10**6)]:
        where = T.Position(line, col)
        await client.text_document_hover_async(T.HoverParams(doc, where))
        await client.text_document_completion_async(T.CompletionParams(doc, where))
        await client.text_document_definition_async(T.DefinitionParams(doc, where))
    # `count` is at code points 17-21 of line 1, UTF-16 units 21-25: the editor's 24 is inside it
    hovered = await client.text_document_hover_async(T.HoverParams(doc, T.Position(1, 24)))
    assert hovered is not None and "let count  # int" in hovered.contents.value, hovered


@pytest.mark.asyncio(loop_scope="module")
async def test_fit_options_are_completed(client, project):
    uri = open_doc(client, project / "fit.apsi", "use layers\nlet r = fit(m, p, x, y, ep")
    await diagnostics(client, uri, lambda d: True)
    result = await client.text_document_completion_async(
        T.CompletionParams(T.TextDocumentIdentifier(uri=uri), T.Position(1, 25)))
    assert "epochs=" in {item.label for item in result.items}


@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="module")
async def test_a_100000_line_file_leaves_the_server_responsive(client, project):
    small = open_doc(client, project / "small.apsi", "let a = 1\n")
    await diagnostics(client, small, lambda d: len(d) == 0)
    huge = open_doc(client, project / "huge.apsi", program(100_000) + "print(missing_name)\n")
    await asyncio.sleep(1.0)                                # its first check is running now
    started = time.monotonic()
    result = await client.text_document_hover_async(
        T.HoverParams(T.TextDocumentIdentifier(uri=small), T.Position(0, 4)))
    assert time.monotonic() - started < 5 and "let a" in result.contents.value
    change_doc(client, small, "let a = 1\nprint(b)\n")    # checked before the huge file's check ends
    started = time.monotonic()
    found = await diagnostics(client, small, lambda d: len(d) == 1, timeout=20)
    assert "undefined name 'b'" in found[0].message and time.monotonic() - started < 10
    assert huge not in client.diagnostics                   # (its check is still going on)
    found = await diagnostics(client, huge, lambda d: len(d) == 1, timeout=300)
    assert "undefined name 'missing_name'" in found[0].message
    assert found[0].range.start.line == len(program(100_000).split("\n")) - 1


def test_a_check_that_fails_is_said_on_the_file_and_the_server_goes_on(tmp_path):
    from apsi_cli.lsp.server import ApsiServer, State

    state = State((tmp_path / "x.apsi").as_uri())

    def broken(text, stop=None):
        raise KeyError("oops")

    state.checker.check = broken
    found, outline = ApsiServer()._run_check(state, "let a = 1\n", urgent=True)
    assert "could not check this file (KeyError: 'oops')" in found[0].message and outline is None
