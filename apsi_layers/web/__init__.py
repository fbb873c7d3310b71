"""`use web`: serve a model (serve_model) or Apsi functions (serve) over HTTP on uvicorn + starlette.

One job per module: options.py checks the arguments, jsonio.py turns request bodies into Apsi values
and Apsi values into JSON, batching.py gathers concurrent predictions into one predict call,
model_app.py and routes_app.py are the two starlette apps, observe.py the access log and /metrics,
server.py the permission check, the listening socket and uvicorn's lifecycle (Ctrl-C, SIGTERM),
heads.py the limits on a request's head, accepting.py how connections are accepted (out of file
descriptors; dealt out in turn between workers), and workers.py the forked worker processes.
uvicorn and starlette are imported only when a server starts.
"""


def web_exports():
    """{name: value} for `use web`."""
    from apsi_lang import sandbox

    from .api import response, serve, serve_model
    from .values import Request, Response

    sandbox.register(Request)
    sandbox.register(Response)
    return {"serve_model": serve_model, "serve": serve, "response": response}
