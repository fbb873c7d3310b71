"""The server's own routes, one row each: the path, what it answers, and which app has it ("model":
serve_model's, model_app.py; "routes": serve's, routes_app.py). Each app binds every row of its own
to a handler, so a new built-in route is a row here and its handler in the app (and docs/web.md's
table); the refusal of a user's route on one of these paths and the start-up line read the rows."""

ROUTES = (
    ("/health", "readiness: 200 once serving, 503 before and while stopping", ("model",)),
    ("/info", "the model, its shapes, backend, device, parameter count, batching options", ("model",)),
    ("/metrics", "Prometheus text: requests, errors, latency, batch rows, in flight, uptime",
     ("model", "routes")),
)


def paths(app):
    """The own paths of `app` ("model" or "routes"), in the table's order."""
    return tuple(path for path, _, apps in ROUTES if app in apps)


def bind(app, handlers):
    """[(path, handler)] for `app`'s own routes; a row without a handler is a KeyError at start-up."""
    return [(path, handlers[path]) for path in paths(app)]
