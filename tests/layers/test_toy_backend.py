"""A third backend added by a test alone (tests/layers/toy_backend/: NumPy in float32, registered by name)
runs fit, predict and the option checks through the registry and the shared epoch loop, with no edit
to apsi_layers outside backends/registry.py. The numbers are checked against NumPy written here."""

import ast
from pathlib import Path

import numpy as np
import pytest

from apsi_lang import permissions
from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.backends import registry
from apsi_layers.layers import dense, fit, mlp, predict

from .toy_backend import BACKEND

TOY = Path(__file__).parent / "toy_backend"


@pytest.fixture
def toy():
    registry.register(BACKEND)
    yield "toy32"
    registry.unregister("toy32")


def linear_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    y = x @ np.array([[1.5], [-2.0], [0.5]]) + 0.25
    return x, y


def reference_sgd(w, b, x, y, lr, epochs):
    """Full-batch gradient descent on mean squared error, in float64 NumPy."""
    for _ in range(epochs):
        err = x @ w + b - y
        w, b = w - lr * 2 * x.T @ err / err.size, b - lr * 2 * err.sum(0) / err.size
    return w, b


def test_fit_on_the_toy_backend_follows_plain_gradient_descent(toy):
    x, y = linear_data()
    net = dense(1, inputs=3)
    p0 = net.init(seed=0)
    r = fit(net, p0, nn.Tensor(x), nn.Tensor(y), loss="mse", opt=nn.sgd(lr=0.1), epochs=20, batch_size=64,
            backend=toy, verbose=False)
    assert r.backend == "toy32" and r.device == "toy32" and r.steps == 20 and len(r.history) == 20
    w, b = reference_sgd(p0.w.data, p0.b.data, x, y, 0.1, 20)
    assert r.params.w.data.dtype == np.float32          # the session's own precision came back
    np.testing.assert_allclose(r.params.w.data, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r.params.b.data, b, rtol=1e-5, atol=1e-6)
    assert r.history[-1] < r.history[0] / 10


def test_predict_on_the_toy_backend(toy):
    x, _ = linear_data(n=10)
    net = dense(2, inputs=3)
    p = net.init(seed=1)
    y = predict(net, p, nn.Tensor(x), backend=toy)
    assert y.data.dtype == np.float32
    np.testing.assert_allclose(y.data, x @ p.w.data + p.b.data, rtol=1e-5, atol=1e-6)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder the run may write its checkpoint in."""
    monkeypatch.chdir(tmp_path)
    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset(), project_root=tmp_path))
    yield tmp_path
    permissions.set_current(before)


def test_the_shared_loop_checkpoints_and_resumes_the_toy_session(toy, project):
    """Checkpoints, resume, histories and the shuffling are the driver's: a run stopped after 2 epochs
    and resumed to 5 gives the numbers of 5 epochs straight."""
    x, y = linear_data(n=40)
    net = mlp(3, 1, hidden=[8])
    p0 = net.init(seed=0)
    common = dict(loss="mse", batch_size=16, backend=toy, verbose=False)
    straight = fit(net, p0, nn.Tensor(x), nn.Tensor(y), epochs=5, opt=nn.adam(lr=0.01), **common)
    ckpt = "run.ckpt"
    fit(net, p0, nn.Tensor(x), nn.Tensor(y), epochs=2, opt=nn.adam(lr=0.01), checkpoint=ckpt, **common)
    resumed = fit(net, p0, nn.Tensor(x), nn.Tensor(y), epochs=5, opt=nn.adam(lr=0.01), resume=ckpt, **common)
    assert resumed.history == straight.history and resumed.steps == straight.steps == 15
    for a, b in zip(nn.tree.leaves(resumed.params), nn.tree.leaves(straight.params), strict=True):
        np.testing.assert_array_equal(a.data, b.data)


def test_the_toy_backends_own_option_checks_run_before_training(toy):
    x, y = linear_data(n=8)
    net = dense(1, inputs=3)
    with pytest.raises(ApsiError, match=r'fit: device="cuda" is not available on backend="toy32"'):
        fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss="mse", backend=toy, device="cuda")
    with pytest.raises(ApsiError, match=r"fit: unknown backend 'toy3'; valid: numpy, auto, torch, toy32 "
                                        r"\(did you mean 'toy32'\?\)"):
        fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), loss="mse", backend="toy3")


def test_an_unregistered_backend_is_unknown_again():
    registry.register(BACKEND)
    registry.unregister("toy32")
    x, y = linear_data(n=8)
    with pytest.raises(ApsiError, match="unknown backend 'toy32'"):
        fit(dense(1, inputs=3), dense(1, inputs=3).init(seed=0), nn.Tensor(x), nn.Tensor(y), loss="mse",
            backend="toy32")


def test_the_toy_backend_touches_no_other_backends_files():
    """What makes adding a backend one folder: it reaches the others only through the registry."""
    for path in TOY.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith("apsi_layers.backends"):
                    assert node.module == "apsi_layers.backends.registry", (path.name, node.module)


def test_every_session_has_what_the_protocol_names():
    """layers/training/session.py's Session (what mypy checks) against the three sessions."""
    import importlib.util

    from apsi_layers.backends.numpy.loop import NumpySession
    from apsi_layers.layers.training.session import Session

    from .toy_backend.session import Toy32Session

    members = [n for n in vars(Session) if not n.startswith("_")]       # (backend, device: set in __init__)
    assert {"train_epoch", "leaves", "set_lr", "steps"} <= set(members)
    sessions = [NumpySession, Toy32Session]
    if importlib.util.find_spec("torch") is not None:
        from apsi_layers.backends.torch.loop import TorchSession

        sessions.append(TorchSession)
    for cls in sessions:
        assert [m for m in members if not hasattr(cls, m)] == [], cls.__name__


def test_a_backend_an_installed_package_names_is_found_by_its_entry_point(monkeypatch):
    """The entry-point group "apsi.backends": the object is loaded when a program first asks for it."""
    from apsi_lang import installed

    class EntryPoint:
        name = "toy32"
        loads = 0

        def load(self):
            EntryPoint.loads += 1
            return lambda: BACKEND

    monkeypatch.setitem(installed._cache, registry.GROUP, {"toy32": EntryPoint()})
    monkeypatch.setattr(registry, "_loaded", {})
    assert "toy32" in registry.names() and EntryPoint.loads == 0
    x, _ = linear_data(n=4)
    net = dense(1, inputs=3)
    y = predict(net, net.init(seed=0), nn.Tensor(x), backend="toy32")
    predict(net, net.init(seed=0), nn.Tensor(x), backend="toy32")
    assert y.data.dtype == np.float32 and EntryPoint.loads == 1


def test_a_broken_backend_plug_in_is_named(monkeypatch):
    from apsi_lang import installed

    class EntryPoint:
        name, value = "broken", "somepkg.backend:make"

        def load(self):
            raise ImportError("No module named 'somepkg'")

    monkeypatch.setitem(installed._cache, registry.GROUP, {"broken": EntryPoint()})
    monkeypatch.setattr(registry, "_loaded", {})
    x, _ = linear_data(n=4)
    with pytest.raises(ApsiError, match=r"backend=\"broken\": the plug-in's entry point "
                                        r"'somepkg.backend:make' failed to load: ImportError: No module"):
        predict(dense(1, inputs=3), dense(1, inputs=3).init(seed=0), nn.Tensor(x), backend="broken")
    with pytest.raises(ApsiError, match=r"unknown backend \[1\]; valid: numpy, auto, torch, broken"):
        predict(dense(1, inputs=3), dense(1, inputs=3).init(seed=0), nn.Tensor(x), backend=[1])


# --- what fit and serve_model ask a backend: its properties, never its name ----------------------------

def _variant(monkeypatch, **properties):
    """The toy backend registered with other answers to the registry's questions (a plug-in author's
    choice, made in the backend's own object: nothing outside its folder changes)."""
    backend = type("Variant", (type(BACKEND),), dict(properties, calls=0))()
    predict_toy = backend.predict

    def counted(plan, keep=None):
        type(backend).calls += 1
        return predict_toy(plan, keep)

    monkeypatch.setattr(backend, "predict", counted)
    registry.register(backend)
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))   # (undone after the test)
    return backend


@pytest.fixture
def not_launched(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)


def test_distributed_fit_asks_the_backend_whether_it_can(monkeypatch, not_launched):
    x, y = linear_data(n=16)
    net = dense(1, inputs=3)
    options = dict(loss="mse", opt=nn.sgd(lr=0.1), epochs=2, batch_size=16, backend="toy32", verbose=False,
                   distributed=True)
    _variant(monkeypatch)                       # (the default: no distributed training)
    with pytest.raises(ApsiError, match=r'^fit: distributed training runs on PyTorch: give fit '
                                        r'backend="torch" \(and run with --allow-python\), not '
                                        r'backend="toy32"$'):
        fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), **options)
    _variant(monkeypatch, supports_distributed=True)      # one process: world_size 1, the same numbers
    r = fit(net, net.init(seed=0), nn.Tensor(x), nn.Tensor(y), **options)
    w, b = reference_sgd(net.init(seed=0).w.data, net.init(seed=0).b.data, x, y, 0.1, 2)
    assert (r.backend, r.world_size, r.steps) == ("toy32", 1, 2)
    np.testing.assert_allclose(r.params.w.data, w, rtol=1e-5, atol=1e-6)


def test_serve_model_refuses_workers_on_a_backend_that_does_not_survive_a_fork(monkeypatch, tmp_path):
    from apsi_layers.web import server
    from apsi_layers.web.api import serve_model

    _variant(monkeypatch, fork_problem="the toy's pool does not survive a fork")
    net = dense(1, inputs=3)
    monkeypatch.setattr(permissions, "current", lambda: permissions.Grants(granted=frozenset({"net"}),
                                                                           project_root=tmp_path))
    monkeypatch.setattr(server, "run", lambda *a, **k: pytest.fail("the server started"))
    with pytest.raises(ApsiError, match=r'^serve_model: workers=2 with backend="toy32": worker processes '
                                        r"are forked from this one, and the toy's pool does not survive a "
                                        r'fork; use backend="numpy" with workers'):
        serve_model(net, net.init(seed=0), backend="toy32", workers=2)


def test_serve_models_checked_requests_run_on_the_backend_served(monkeypatch):
    """A request checked on arrival skips predict's checks: on the backend the server was started with
    (not on NumPy), so the answer is the toy's float32 numbers."""
    from apsi_layers.web.model_app import ModelService

    backend = _variant(monkeypatch)
    x, _ = linear_data(n=3)
    net = dense(2, inputs=3)
    p = net.init(seed=2)
    service = ModelService(net, p, "toy32", None)
    [rows] = service.run([service.prepare({"inputs": x.tolist()})])
    assert type(backend).calls == 1
    np.testing.assert_allclose(rows, x @ p.w.data + p.b.data, rtol=1e-5, atol=1e-6)
