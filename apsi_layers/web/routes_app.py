"""serve's app: each route calls an Apsi function with a request and sends back what it returns.

Handlers run one at a time on the program's thread (the event loop's, whose stack holds Apsi's
recursion limit), inside the program's sandbox. They receive plain data only (values.Request) and
return plain data or response(...). An error in a handler is a 500 naming the Apsi file:line; the full
Apsi traceback goes to the server's stderr, and the server goes on.
"""

import sys

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

from . import http, jsonio, own_routes
from .http import Problem
from .values import BodyNotJson, Request, Response

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
OWN = own_routes.paths("routes")


def table(routes):
    """[(method, path, fn)] from the routes map, checked."""
    if type(routes) is not dict or not routes:
        raise ApsiError("serve: routes must be a map from \"METHOD /path\" (or \"/path\" for GET) to a "
                        "function fn(request), like {\"/hello\": fn(r) => \"hi\"}, not "
                        f"{show(routes, True)}")
    found, seen = [], set()
    for key, fn in routes.items():
        method, path = _route_key(key)
        if not callable(fn):
            raise ApsiError(f"serve: the route {show(key, True)} needs a function fn(request), not "
                            f"{show(fn, True)}")
        if path in OWN:
            raise ApsiError(f"serve: {path} is the server's own route; choose another path")
        if (method, path) in seen:
            raise ApsiError(f"serve: the route {method} {path} is given twice")
        seen.add((method, path))
        found.append((method, path, fn))
    return found


def _route_key(key):
    if type(key) is not str:
        raise ApsiError("serve: a route is a text such as \"GET /items\" or \"/items\", not "
                        f"{show(key, True)}")
    parts = key.split()
    if len(parts) == 1:
        parts = ["GET", parts[0]]
    if len(parts) != 2 or parts[0].upper() not in METHODS or not parts[1].startswith("/"):
        raise ApsiError(f"serve: route {show(key, True)} is not \"METHOD /path\" (methods: "
                        f"{', '.join(METHODS)}; the path starts with '/')")
    return parts[0].upper(), parts[1]


async def request_of(request, opts):
    """The plain-data request a handler receives."""
    body = await http.within(opts.timeout, http.body_of(request, opts.max_body), "reading the request")
    text = body.decode("utf-8", errors="replace")
    parsed, problem = jsonio.parse(body)
    query = {k: v for k, v in request.query_params.multi_items()}
    joined = {}             # (a list per name, joined once: repeated headers cost linear time)
    for k, v in request.headers.items():
        joined.setdefault(k, []).append(v)
    headers = {k: ", ".join(v) for k, v in joined.items()}
    return Request(request.method, request.url.path, query, headers, text, parsed, problem)


def reply(value, where):
    """The starlette response for what a handler returned. A response() is checked again now, as it
    is sent: its headers map stays the program's to change after response() checked it."""
    if type(value) is Response:
        from .responses import response

        value = response(value.body, value.status, value.headers)
        headers = value.headers
        if value.status in (204, 304):         # (no body, no Content-Type: response() checked it)
            from starlette.responses import Response as Raw

            return Raw(None, status_code=value.status, headers=headers)
        kind = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
        if type(value.body) is str and kind is not None and "json" not in kind:
            from starlette.responses import Response as Raw

            return Raw(jsonio.utf8(value.body, "the response"), status_code=value.status, headers=headers)
        return http.answer(value.status, value.body, headers)
    return http.answer(200, value)


def failure(e, method, path):
    """The 500 for an error in a handler: the message and its Apsi file:line (the file's name only:
    the client need not learn where the program lives)."""
    from apsi_lang import report

    if isinstance(e, BodyNotJson):          # the client sent what the handler cannot read
        return http.error(400, e.message)
    who = f"the handler for {method} {path}"
    message = http.program_error(e, who)
    if message is None:                     # (raised by no Apsi line: a builtin called from Python)
        print(report.render_runtime_error(e), file=sys.stderr, flush=True)
        detail = e.message if isinstance(e, ApsiError) else report.describe_at(e)
        message = f"{who} failed: {detail}"
    return http.error(500, message)


def routes_app(found, observer, opts):
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    def endpoint(method, path, fn):
        async def handle(request):
            try:
                req = await request_of(request, opts)
            except Problem as p:
                return http.error(p.status, p.message)
            except http.client_gone():
                return http.GONE                    # (nothing to send: logged and counted as 499)
            try:
                value = fn(req)
            except (Exception, SystemExit) as e:    # noqa: BLE001 (reported; the server goes on)
                return failure(e, method, path)
            try:
                return reply(value, f"the handler for {method} {path}")
            except ApsiError as e:
                return http.error(500, f"the handler for {method} {path} returned what cannot be sent: "
                                       f"{e.message}")
        return handle

    async def metrics(request):
        return PlainTextResponse(observer.text(), media_type="text/plain; version=0.0.4")

    by_path = {}
    for method, path, fn in found:
        by_path.setdefault(path, []).append((method, fn))
    routes = []
    for path, handlers in by_path.items():
        for method, fn in handlers:
            routes.append(Route(path, endpoint(method, path, fn), methods=[method]))
    own = own_routes.bind("routes", {"/metrics": metrics})
    routes += [Route(path, handler) for path, handler in own]
    app = Starlette(routes=routes, exception_handlers=http.json_errors())
    return http.Observed(app, observer, {r.path for r in routes})
