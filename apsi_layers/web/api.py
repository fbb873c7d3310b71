"""The functions `use web` binds: serve_model, serve, response."""

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from . import options as opt
from . import own_routes


def serve_model(model, params=None, host="127.0.0.1", port=8000, max_batch=64, max_wait_ms=5, backend="numpy",
                device=None, workers=1, path="/predict", max_body="1MB", timeout=30, log=True):
    """Serve `model` with `params` over HTTP until Ctrl-C or SIGTERM (docs/web.md)."""
    from apsi_layers.layers.training.model_checks import check_model

    fn = "serve_model"
    model, params, labels = _model_record(fn, model, params)
    check_model(fn, model)
    opts = opt.server_options(fn, host, port, max_body, timeout, log)
    max_batch = opt.count_arg(fn, "max_batch", max_batch, "the most rows one predict call takes")
    max_wait = opt.wait_arg(fn, max_wait_ms)
    path = opt.path_arg(fn, "path", path)
    if path in own_routes.paths("model"):
        raise ApsiError(f"{fn}: path {path!r} is one of the server's own routes; choose another, "
                        "such as \"/predict\"")
    from apsi_layers.backends import registry

    if not isinstance(backend, str) or backend not in registry.names():       # (the registry's names)
        raise ApsiError(f"{fn}: backend must be one of {', '.join(map(repr, registry.names()))}, not "
                        f"{show(backend, True)}")
    workers = _workers(fn, workers)
    from . import server

    server.require_net(fn, opts.host, opts.port)
    from .batching import Batcher
    from .board import Board
    from .model_app import ModelService, model_app
    from .observe import Observer

    service = ModelService(model, params, backend, device)
    service.labels = labels
    if workers > 1 and service.torch:
        raise ApsiError(f"{fn}: workers={workers} with backend=\"torch\": worker processes are forked from "
                        "this one, and PyTorch's thread pools and a GPU's context do not survive a fork; use "
                        "backend=\"numpy\" with workers, or run one program per worker behind a load "
                        "balancer (docs/web.md, Scaling out)")
    service.warm_up(fn)
    observer = Observer(opts.log, board=Board(workers) if workers > 1 else None)
    batcher = Batcher(service.run, max_batch, max_wait, observer.batch, service.failure)
    app = model_app(service, batcher, observer, opts, path,
                    {"path": path, "max_batch": max_batch, "max_wait_ms": max_wait_ms, "workers": workers})
    own = ", ".join(own_routes.paths("model"))
    server.run(fn, app, opts, f"{model.kind} (POST {path}, GET {own})", workers,
               observer.join)


def _model_record(fn, model, params):
    """serve_model(load_model("m.apsim")): a model record brings its net, params and labels."""
    from apsi_lang.values import Record

    if isinstance(model, Record) and hasattr(model, "net") and hasattr(model, "params"):
        return model.net, model.params if params is None else params, getattr(model, "labels", None)
    if params is None:
        raise ApsiError(f"{fn}: give the parameters: serve_model(net, params), or a model record from "
                        "load_model (serve_model(load_model(\"model.apsim\")))")
    return model, params, None


def serve(routes, host="127.0.0.1", port=8000, max_body="1MB", timeout=30, log=True):
    """Serve Apsi functions: `routes` maps "METHOD /path" (or "/path" for GET) to fn(request)."""
    fn = "serve"
    opts = opt.server_options(fn, host, port, max_body, timeout, log)
    from .routes_app import routes_app, table

    found = table(routes)
    from . import server

    server.require_net(fn, opts.host, opts.port)
    from .observe import Observer

    observer = Observer(opts.log)
    app = routes_app(found, observer, opts)
    server.run(fn, app, opts, f"{len(found)} route{'s' if len(found) != 1 else ''}")


def response(body=None, status=200, headers=None):
    """What a handler returns for a status or headers of its own; `body` is sent as JSON (text as
    text/plain)."""
    from .values import Response

    if type(status) is not int or not 200 <= status <= 599:
        # (1xx are not answers but notes before one: 101 would hand the connection over, 100 leave the
        # client waiting for the real answer)
        raise ApsiError(f"response: status must be an int from 200 to 599 (a handler's answer; 1xx are "
                        f"not final answers), not {show(status, True)}")
    if status in NO_BODY and body is not None:
        raise ApsiError(f"response: status {status} carries no body (HTTP sends none with it); write "
                        f"response(none, status={status}), or another status for a body")
    headers = {} if headers is None else headers
    if type(headers) is not dict or not all(type(k) is str and type(v) is str for k, v in headers.items()):
        raise ApsiError("response: headers must be a map of text to text, like {\"Cache-Control\": "
                        f"\"no-store\"}}, not {show(headers, True)}")
    for k, v in headers.items():
        if not k or any(c in k + v for c in "\r\n\0") or any(c in k for c in " :"):
            raise ApsiError(f"response: header {show(k, True)} cannot be sent (a name without spaces or "
                            "':', values without line breaks)")
        if k.lower() in SERVERS_HEADERS:
            # (a second Content-Length or a Transfer-Encoding beside it makes the answer's length
            # ambiguous: clients and proxies read it differently, and the server broke off the answer)
            raise ApsiError(f"response: header {show(k, True)} is the server's to set (it frames the "
                            "connection and the body); leave it out")
    return Response(body, status, dict(headers))


MAX_WORKERS = 256
NO_BODY = (204, 304)        # statuses HTTP sends without a body
SERVERS_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
                             "te", "trailer", "proxy-connection", "date", "server"})


def _workers(fn, workers):
    """The number of server processes: 1, or more where this system can fork (workers.py)."""
    import os

    if type(workers) is not int or not 1 <= workers <= MAX_WORKERS:
        raise ApsiError(f"{fn}: workers must be an int from 1 to {MAX_WORKERS} (server processes sharing the "
                        f"port; about one per core for a CPU-bound model), not {show(workers, True)}")
    if workers > 1 and not hasattr(os, "fork"):
        raise ApsiError(f"{fn}: workers={workers} needs a system that can fork processes (Linux, macOS); "
                        "here, run one program per worker on different ports behind a load balancer "
                        "(docs/web.md, Scaling out)")
    return workers
