"""serve_model's app: POST {path} answers {"inputs": …} with {"outputs": …}, the same numbers predict
gives (predict_route.py, a plain ASGI route ahead of starlette); GET /health, /info and /metrics
describe the server.

Each request is checked on arrival with predict's own checks (make_data: shapes, types, NaN/inf,
token ids; check_params: the model's shapes against the parameters, once per input shape), so a bad
request gets predict's words with status 422 and never reaches a batch. Checked requests are batched
(batching.py) into one `predict` call and its rows split back. A request alone in its batch gets
exactly predict's bits; rows computed together with other requests' rows can differ from a one-request
predict in the last bits, as BLAS sums a matrix product differently for different numbers of rows
(max_batch=1 makes every answer exact).
"""

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass

from apsi_lang.errors import ApsiError, PermissionDenied
from apsi_lang.values import show

from . import http, jsonio, own_routes
from .builtin_code import only_builtin_code
from .deadlines import Deadlines
from .http import Problem
from .predict_route import predict_route

BODY_FIELDS = ("inputs", "mask", "graph")


@dataclass
class Pending:
    inputs: list            # one array per model input
    mask: object            # an array or None
    graph: object           # predict's graph= argument, or None
    n: int                  # rows
    key: tuple              # requests batch together only when their keys are equal
    alone: bool


class ModelService:
    def __init__(self, model, params, backend, device):
        from apsi_layers.backends import registry
        from apsi_layers.layers.training.model_checks import arity

        self.model, self.params, self.backend, self.device = model, params, backend, device
        self.several_in, self.several_out = arity(model)
        # the permission is checked now; the backend may keep the parameters on its device (keep)
        self.chosen = registry.choose("serve_model", backend)
        # a cheap batch may run on the event loop (batching.py): only NumPy's predict (all of it on the
        # calling thread; torch runs thread pools and devices of its own) on Apsi's own layers (a
        # program's function in the model may take any time)
        self.on_loop = self.chosen.name == "numpy" and only_builtin_code(model)
        self.keep = {}
        self.checked = set()            # per-sample input shapes check_params accepted
        self.output_shape = None
        self.graph_model = _has_graph_layer(model)
        # JSON has no NaN: for a model that takes missing values (impute or category_lookup first), null
        self.missing = _takes_missing(model)      # is one

    # --- on the event loop: one request ---------------------------------------------------------
    def prepare(self, body):
        from apsi_layers.layers.training.data_checks import make_data
        from apsi_layers.layers.training.model_checks import check_params

        x = self._inputs(_fields(body))
        if self.several_in and type(x) is list:
            x = [_array(v, self.missing) for v in x]
        else:
            x = _array(x, self.missing)
        try:
            data = make_data("predict", self.model, x, None, body.get("mask"), self.several_in,
                             self.several_out, None, need_targets=False)
            shapes = tuple((a.shape[1:], a.dtype.str) for a in data.inputs)
            if shapes not in self.checked:
                check_params("predict", self.model, self.params, data)
                if len(self.checked) >= 1024:       # (clients choosing ever new lengths: stay small)
                    self.checked.clear()
                self.checked.add(shapes)
        except ApsiError as e:
            raise Problem(422, e.message) from None
        graph = self._graph(body.get("graph"), data.n)
        mask = None if data.mask is None else data.mask.shape[1:]
        return Pending(inputs=data.inputs, mask=data.mask, graph=graph, n=data.n, key=(shapes, mask),
                       alone=graph is not None)

    def _graph(self, graph, rows):
        """predict's graph= for a request, checked before anything is allocated for it: only a model
        with graph layers takes one, and its node count is the number of rows sent (a client must not
        choose a size the server then allocates)."""
        if graph is None:
            return None
        if not self.graph_model:
            raise Problem(422, "predict: this model has no graph layers: send no \"graph\" field")
        from apsi_layers.layers.context import graph_arg

        try:
            edges, nodes = graph_arg("predict", graph, rows)
        except ApsiError as e:
            raise Problem(422, e.message) from None
        if nodes != rows:
            raise Problem(422, f"predict: the graph has {nodes} nodes but {rows} input rows were sent; "
                               "a graph has one node per input row")
        return [edges, nodes]

    def _inputs(self, value):
        """A map of named inputs becomes the list predict takes, in the model's order."""
        if type(value) is not dict:
            return value
        names = list(getattr(self.model, "input_names", ()) or ())
        if not names:
            raise Problem(422, "predict: this model takes one input: send \"inputs\" as a list of rows, "
                               "not a map")
        missing = [n for n in names if n not in value]
        extra = [n for n in value if n not in names]
        if missing or extra:
            raise Problem(422, f"predict: the model's inputs are {', '.join(names)}; "
                               + "; ".join(p for p in (missing and f"missing {', '.join(missing)}",
                                                       extra and f"unknown {', '.join(map(str, extra))}")
                                           if p))
        return [value[n] for n in names]

    # --- on the worker thread: one batch ----------------------------------------------------------
    def run(self, items, checked=True):
        """One predict call on the rows of `items`, split back per item. The items were checked on
        arrival (prepare: predict's own checks of the data, and of the parameters once per input shape),
        so the call skips those checks (a third of a small call's time on NumPy); `checked=False` (the
        warm-up, on rows that were not) runs the whole of predict."""
        import numpy as np

        if len(items) == 1:
            xs, mask = items[0].inputs, items[0].mask
        else:
            xs = [np.concatenate([it.inputs[k] for it in items]) for k in range(len(items[0].inputs))]
            mask = None if items[0].mask is None else np.concatenate([it.mask for it in items])
        if checked:
            y = self._predict_checked(xs, mask, items[0].graph)
        else:
            y = self._predict(xs, mask, items[0].graph)
        outs = [np.asarray(t.data) for t in y] if self.several_out else [np.asarray(y.data)]
        results, start = [], 0
        for it in items:
            rows = [o[start:start + it.n].tolist() for o in outs]
            results.append(rows if self.several_out else rows[0])
            start += it.n
        return results

    def _predict(self, xs, mask, graph):
        from apsi_layers.layers.training.api import predict_kept

        options = {"backend": self.backend}
        if self.device is not None:
            options["device"] = self.device
        if mask is not None:
            options["mask"] = mask
        if graph is not None:
            options["graph"] = graph
        x = xs if self.several_in else xs[0]
        return predict_kept(self.model, self.params, x, self.keep, **options)

    def _predict_checked(self, xs, mask, graph):
        """predict's run of data predict's checks have passed (prepare), without checking again; the
        backend is chosen as for any predict (backend="auto" sets aside what NumPy cannot honour)."""
        from apsi_layers.layers.training.api import _run
        from apsi_layers.layers.training.data_checks import Data
        from apsi_layers.layers.training.plan import PredictPlan

        plan = PredictPlan(model=self.model, params=self.params, data=Data(xs, None, len(xs[0]), mask),
                           graph=None if graph is None else tuple(graph), batch_size=None,
                           backend=self.backend, device=self.device, several_inputs=self.several_in,
                           several_outputs=self.several_out)
        return _run("predict", plan, self.keep)

    def failure(self, e):
        """What the client is told when a predict call failed on its request alone: the program's own
        code in the model (a lambda_layer's function) failing, exit() there included, is the server's
        500 naming its file and line (its Apsi traceback goes to stderr); predict's own checks are the
        client's 422; anything else is a bug (500, its kind)."""
        if isinstance(e, Problem):
            return e
        message = http.program_error(e, "the model")
        if message is not None:
            return Problem(500, message)
        if isinstance(e, ApsiError):
            return e                        # (predict's checks: 422)
        if isinstance(e, SystemExit):
            return Problem(500, "the model called exit(); a request cannot stop the server")
        return e

    labels = None           # a model file's class labels (serve_model of load_model's record)

    def extras(self, outputs):
        """With labels: each row's label and class probabilities beside its outputs (models/api.py)."""
        if self.labels is None:
            return {}
        from apsi_layers.models.api import labelled

        return labelled(self.model, self.labels, outputs)

    # --- before listening ---------------------------------------------------------------------
    def warm_up(self, fn):
        """One predict on zeros of the model's input shape: checks the parameters before the server
        listens, loads the backend, and learns the output shape (for /info)."""
        import numpy as np

        shape = self.model.known_input()
        shapes = shape if isinstance(shape, list) else [shape]
        if not shapes or not all(isinstance(s, tuple) for s in shapes):
            return                          # the model learns its input shape from data: no warm-up
        # a graph model predicts on one node with no edges
        graph = [np.zeros((2, 0), dtype=np.int64), 1] if self.graph_model else None
        # a length the model leaves open (a sequence's steps, none) is tried as 1 and 2 steps: the output
        # lengths that follow it are open too
        tries = (1, 2) if any(d is None for s in shapes for d in s) else (1,)
        found = []
        for steps in tries:
            xs = [np.zeros((1, *(steps if d is None else d for d in s))) for s in shapes]
            item = Pending(inputs=xs, mask=None, graph=graph, n=1, key=(), alone=True)
            try:
                try:
                    out = self.run([item], checked=False)[0]
                except (Exception, SystemExit) as e:
                    raise self.failure(e) from None
            except PermissionDenied:
                raise
            except Problem as e:
                raise ApsiError(f"{fn}: a first predict, on zeros of the model's input shape, failed: "
                                f"{e.message}") from None
            except ApsiError as e:
                raise ApsiError(f"{fn}: a first predict, on zeros of the model's input shape, failed: "
                                f"{e.message}") from None
            outs = out if self.several_out else [out]
            found.append([list(np.shape(o))[1:] for o in outs])
        shapes_out = [[a if a == b else None for a, b in zip(*dims)] for dims in zip(*found)] \
            if len(found) > 1 else found[0]
        self.output_shape = shapes_out if self.several_out else shapes_out[0]

    def info(self, extra):
        from apsi_layers.nn import param_count

        names = list(getattr(self.model, "input_names", ()) or ())
        named = {"input_names": names} if len(names) > 1 else {}
        return {"model": show(self.model), "inputs": jsonio.plain(self.model.input_shape, "info"), **named,
                "outputs": self.output_shape, "backend": self.backend, "device": self.device or "cpu",
                "parameters": int(param_count(self.params)), **extra,
                "worker": os.getpid()}


# While serving, a thread that wants the GIL gets it after this long at most (Python's default is 5 ms).
# The predict thread gives the GIL up at every BLAS call and must take it back after each, while the
# event loop parses JSON without a pause: at 5 ms a turn, a batch of a 3-layer mlp waited ~15 ms for the
# GIL and the server idled half of the time (32-row requests, 64 clients: ~450 against ~1,000 requests/s
# at 0.2 ms, measured in turn on a shared 2-core machine)
SWITCH_SECONDS = 0.0002
POST_SECONDS = 1.0         # how often a worker posts its counters for the others' scrapes (board.py)


async def _post_every(observer, seconds):
    while True:
        await asyncio.sleep(seconds)
        observer.post()


def _has_graph_layer(model):
    from apsi_layers.layers.graph import GraphLayer

    return isinstance(model, GraphLayer) or any(_has_graph_layer(child) for child in model.layers)


def _array(v, missing=False):
    """JSON rows as a NumPy array at C speed (a parsed body holds only lists, maps, text, numbers, bools
    and none, so NumPy reads no object's protocols); what is not an array of numbers stays as it is,
    for make_data to refuse in predict's words. missing: null is a missing value (NaN)."""
    if type(v) is not list:
        return v
    import numpy as np

    try:
        a = np.asarray(v)
        if missing and a.dtype.kind == "O":
            a = np.asarray(v, dtype=np.float64)         # (None becomes NaN; text still fails)
    except (ValueError, TypeError, OverflowError):
        return v
    return a if a.dtype.kind in "biuf" else v


def _takes_missing(model):
    from apsi_layers.layers.preprocessing import takes_missing

    return takes_missing(model)


def _fields(body):
    if type(body) is not dict:
        raise Problem(400, "the body must be a JSON object such as {\"inputs\": [[1.0, 2.0]]} "
                           "(one row per sample)")
    unknown = [k for k in body if k not in BODY_FIELDS]
    if unknown:
        raise Problem(400, f"unknown field {show(unknown[0], True)} in the body; it takes \"inputs\" (and "
                           "\"mask\" or \"graph\" where the model uses them)")
    if "inputs" not in body:
        raise Problem(400, "the body has no \"inputs\" field: send {\"inputs\": [[…], …]} with one row "
                           "per sample")
    return body["inputs"]


def model_app(service, batcher, observer, opts, path, extra_info):
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    state = {"ready": False}
    deadlines = Deadlines(opts.timeout)

    async def health(request):
        if state["ready"]:
            return http.answer(200, {"status": "ready"})
        return http.answer(503, {"status": "not ready"})

    async def info(request):
        return http.answer(200, service.info(extra_info))

    async def metrics(request):
        return PlainTextResponse(observer.text(), media_type="text/plain; version=0.0.4")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_SECONDS)
        batcher.start()
        deadlines.start()
        posting = asyncio.get_running_loop().create_task(_post_every(observer, POST_SECONDS)) \
            if observer.board is not None else None
        state["ready"] = True
        try:
            yield
        finally:
            state["ready"] = False
            await deadlines.stop()
            await batcher.stop()
            if posting is not None:
                posting.cancel()
                observer.post()
            sys.setswitchinterval(switch)

    async def not_here(request):            # (POST {path} is answered before starlette: predict_route.py)
        return http.error(500, "internal error (routing) while answering; the server goes on")

    own = own_routes.bind("model", {"/health": health, "/info": info, "/metrics": metrics})
    routes = [Route(path, not_here, methods=["POST"])] + [Route(p, handler) for p, handler in own]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=http.json_errors())
    direct = {("POST", path): predict_route(service, batcher, deadlines, opts)}
    return http.Observed(app, observer, {r.path for r in routes}, direct)
