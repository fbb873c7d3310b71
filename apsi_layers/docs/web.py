"""The documentation of `use web` (apsi_lang/doc_source.py): serve_model's options, as docs/web.md shows them."""

from apsi_lang.doc_table import Table

TABLES = (
    Table('docs/web.md', 'option', 'serve_model',
          ('option', 'default', 'meaning'),
          (
              ('`params`', 'none', 'the parameter tree for `model`; none when `model` is a record `load_model` gave (it brings its own params and labels)'),
              ('`host`', '`"127.0.0.1"`', 'the address to listen on: `"127.0.0.1"` this machine only, `"0.0.0.0"` every network'),
              ('`port`', '`8000`', 'the TCP port (1–65535)'),
              ('`max_batch`', '`64`', 'the most rows one `predict` call takes (dynamic batching, below)'),
              ('`max_wait_ms`', '`5`', 'how long an open batch waits for more requests (only while others are arriving)'),
              ('`backend`', '`"numpy"`', '`"numpy"`, `"torch"` (needs `python`, as `predict` does; in `predict`\'s default precision) or `"auto"`; each batch is one `predict` call; the parameters go to the device once, at the first call, and stay there'),
              ('`device`', 'none', 'passed to `predict` (torch backend: `"cuda"`, `"cpu"`, …)'),
              ('`workers`', '`1`', 'server processes sharing the port (1–256), for CPU-bound models: see *Several workers*; not with `backend="torch"`'),
              ('`path`', '`"/predict"`', 'the prediction route'),
              ('`max_body`', '`"1MB"`', 'the largest request body: bytes, or `"512KB"`, `"2MB"`, `"1MiB"`; beyond it 413'),
              ('`timeout`', '`30`', 'seconds a request may take to arrive (its headers, from the connection or the end of the previous answer; then its body), and again to be answered; beyond it 408 (the prediction route checks it four times a second; a connection that sent nothing is only closed), and how long a stop waits for requests in flight'),
              ('`log`', '`true`', 'one access-log line per request on stderr; `log=false` is quiet'),
          )),
    Table('docs/web.md', 'option', 'response',
          ('Option', 'Default', 'Meaning'),
          (
              ('`body`', '`none`', 'a map, record, list, text, number, bool, none or tensor (sent as JSON)'),
              ('`status`', '`200`', 'the HTTP status, 200–599'),
              ('`headers`', '`none`', 'a map of headers of its own (not the framing ones)'),
          )),
    Table('docs/web.md', 'option', 'serve',
          ('Option', 'Default', 'Meaning'),
          (
              ('`routes`', 'required', 'a map `{"/path": handler, "POST /path": handler}` of Apsi functions'),
              ('`host`', '`"127.0.0.1"`', "the address to listen on, as serve_model's"),
              ('`port`', '`8000`', 'the TCP port (1–65535)'),
              ('`max_body`', '`"1MB"`', 'the largest request body (`"512KB"`, `"2MB"`, bytes); beyond it 413'),
              ('`timeout`', '`30`', "seconds a request may take to arrive and to be answered, as serve_model's"),
              ('`log`', '`true`', '`false`: no access-log line per request'),
          )),
)

MODULE = 'serve a model (serve_model, with dynamic batching) or Apsi functions (serve) over HTTP (docs/web.md).'

EXAMPLES = {
    'serve': 'use web\ntry:\n    serve({"/hello": fn(req) => {hi: "there"}}, port=8000)   # --allow-net=127.0.0.1:8000; Ctrl-C stops\ncatch e:\n    print(e.message)',
    'serve_model': 'use layers\nuse web\ntry:\n    let net = mlp(2, 3, hidden=[8])\n    serve_model(net, net.init(seed=0), port=8000)   # --allow-net=127.0.0.1:8000\ncatch e:\n    print(e.message)',
    'response': 'use web\nprint(response({created: 1}, status=201, headers={"X-Run": "a"}))',
}

PARAGRAPHS = {
    'serve': 'Any Apsi functions as HTTP handlers:',
    'response': 'A handler returns a map, record, list, text, number, bool, none or tensor, sent as JSON with status 200, or `response(body, status=200, headers={})` for a status (200–599) or headers of its own; 204 and 304 go without a body (`response(none, status=204)`). Headers that frame the connection and the body (`Content-Length`, `Transfer-Encoding`, `Connection`, `Keep-Alive`, `Upgrade`, `TE`, `Trailer`, `Date`, `Server`) are the server\'s and refused. A text body with a `Content-Type` that is not JSON is sent as it is (`response("<b>hi</b>", headers={"Content-Type": "text/html"})`).',
}
