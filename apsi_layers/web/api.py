"""The functions `use web` binds: serve_model, serve, response."""

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from . import options as opt
from . import own_routes
from .responses import response  # noqa: F401  (use web's name)


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
    name, why = service.chosen.name, service.chosen.fork_problem
    if workers > 1 and why is not None:
        raise ApsiError(f"{fn}: workers={workers} with backend=\"{name}\": worker processes are forked from "
                        f"this one, and {why}; use backend=\"numpy\" with workers, or run one program per "
                        "worker behind a load balancer (docs/web.md, Scaling out)")
    service.warm_up(fn)
    observer = Observer(opts.log, board=Board(workers) if workers > 1 else None)
    batcher = Batcher(service.run, max_batch, max_wait, observer.batch, service.failure, service.on_loop)
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


MAX_WORKERS = 256
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
