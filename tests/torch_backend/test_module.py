"""torch_module: a real torch.nn.Module (plain torch.optim loop, DDP with two CPU processes, export),
and params_from_torch back to a parameter tree."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from apsi_lang.errors import ApsiError  # noqa: E402
from apsi_layers import nn  # noqa: E402
from apsi_layers.backends.torch.module import ApsiModule, params_from_torch, torch_module  # noqa: E402
from apsi_layers.layers import gcn_classifier, lstm_classifier, mlp, predict, resnet_mlp  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NET = resnet_mlp(16, 4, width=32, blocks=2)
P = NET.init(seed=0)


def test_it_is_a_module_with_the_tree_order():
    m = torch_module(NET, P)
    assert isinstance(m, torch.nn.Module) and isinstance(m, ApsiModule)
    names = [n for n, _ in nn.flatten(P)]
    assert m.names == names
    params = list(m.parameters())
    assert len(params) == len(names) and all(isinstance(p, torch.nn.Parameter) for p in params)
    assert [tuple(p.shape) for p in params] == [v.shape for _, v in nn.flatten(P)]
    assert params[0].dtype == torch.float32
    assert len(m.state_dict()) == len(names)
    text = repr(m)
    assert text.startswith("ApsiModule(resnet_mlp(16, 4, width=32, blocks=2), ")
    assert all(n in text for n in names)


def test_forward_matches_predict_in_float64():
    m = torch_module(NET, P, dtype="float64").eval()
    x = np.random.default_rng(0).standard_normal((5, 16))
    y = m(torch.as_tensor(x))
    assert np.max(np.abs(y.detach().numpy() - predict(NET, P, x).data)) < 1e-12
    assert m(torch.as_tensor(x, dtype=torch.float32)).dtype == torch.float64   # inputs are cast


def test_a_plain_torch_optim_loop_trains_it_and_maps_back():
    m = torch_module(NET, P)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    x = torch.randn(64, 16, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    back = params_from_torch(NET, m)
    assert [n for n, _ in nn.flatten(back)] == [n for n, _ in nn.flatten(P)]
    leaf = nn.flatten(back)[0][1]
    assert type(leaf) is nn.Tensor and leaf.data.dtype == np.float64
    assert np.allclose(leaf.data, m.weights[0].detach().double().numpy())
    out = predict(NET, back, x.double().numpy())
    assert np.allclose(out.data, m.eval()(x).detach().numpy(), atol=1e-4)


def test_running_statistics_are_buffers_updated_in_training_mode():
    net = mlp(4, 2, hidden=[6], batch_norm=True)
    m = torch_module(net, net.init(seed=0))
    assert len(list(m.buffers())) == 2 and len(list(m.parameters())) == len(m.names) - 2
    before = [b.clone() for b in m.buffers()]
    m.eval()(torch.randn(8, 4))
    assert all(torch.equal(a, b) for a, b in zip(before, m.buffers()))
    m.train()(torch.randn(8, 4))
    assert not torch.equal(before[0], next(m.buffers()))
    back = params_from_torch(net, m)
    assert np.allclose(back.dense.w.data if hasattr(back, "dense") else nn.flatten(back)[0][1].data,
                       m.weights[0].detach().double().numpy())


def test_graph_models_take_the_graph_in_forward():
    g = gcn_classifier(3, 2, hidden=[4], dropout=0.0)
    p = g.init(seed=0)
    edges = np.array([[0, 1, 2], [1, 2, 0]])
    x = np.random.default_rng(1).standard_normal((3, 3))
    m = torch_module(g, p, dtype="float64").eval()
    y = m(torch.as_tensor(x), graph=torch.as_tensor(edges))
    assert np.max(np.abs(y.detach().numpy() - predict(g, p, x, graph=edges).data)) < 1e-12


def test_errors():
    with pytest.raises(ApsiError, match="the first argument must be a model"):
        torch_module("mlp", P)
    with pytest.raises(ApsiError, match="parameter"):
        torch_module(NET, mlp(16, 4).init(seed=0))
    with pytest.raises(ApsiError, match="must be a module made by torch_module"):
        params_from_torch(NET, torch.nn.Linear(2, 2))
    with pytest.raises(ApsiError, match="the module runs"):
        params_from_torch(mlp(2, 1), torch_module(NET, P))
    with pytest.raises(ApsiError, match='device="cuda"'):
        torch_module(NET, P, device="cuda")


def test_torch_export_captures_it():
    m = torch_module(NET, P).eval()
    x = torch.randn(3, 16)
    program = torch.export.export(m, (x,))
    assert torch.allclose(program.module()(x), m(x), atol=1e-6)


def installed(*names):
    return all(importlib.util.find_spec(n) is not None for n in names)


# torch.onnx.export itself needs the onnx packages (the default exporter also onnxscript)
@pytest.mark.skipif(not installed("onnx", "onnxscript"), reason="torch.onnx.export needs onnx and onnxscript "
                    "(pip install onnx onnxscript onnxruntime); torch.export is tested above")
def test_onnx_export_and_onnxruntime(tmp_path):
    import onnx

    m = torch_module(NET, P).eval()
    x = torch.randn(3, 16)
    path = tmp_path / "m.onnx"
    torch.onnx.export(m, (x,), str(path))
    onnx.checker.check_model(onnx.load(str(path)))
    if not installed("onnxruntime"):
        pytest.skip("exported and checked; ONNX Runtime is not installed to run the export")
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path))
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    assert np.allclose(got, m(x).detach().numpy(), atol=1e-5)


def test_to_moves_and_casts_like_any_module():
    m = torch_module(NET, P)
    assert m.to(torch.float64) is m and all(t.dtype == torch.float64 for t in m.parameters())
    x = torch.randn(3, 16, dtype=torch.float64)
    assert m.eval()(x).dtype == torch.float64                 # forward follows the module's dtype
    assert m.float()(x).dtype == torch.float32 and m.to("cpu").weights[0].device.type == "cpu"
    twin = torch_module(NET, resnet_mlp(16, 4, width=32, blocks=2).init(seed=1))
    twin.load_state_dict(m.state_dict())
    assert torch.equal(twin.eval()(x), m(x))


def test_forward_takes_a_step_mask():
    net = lstm_classifier(3, 2, units=4)
    p = net.init(seed=0)
    m = torch_module(net, p, dtype="float64").eval()
    x = np.random.default_rng(2).standard_normal((4, 5, 3))
    mask = np.ones((4, 5), dtype=bool)
    mask[1, 3:] = False
    y = m(torch.as_tensor(x), mask=torch.as_tensor(mask)).detach().numpy()
    assert np.max(np.abs(y - predict(net, p, x, mask=mask).data)) < 1e-12
    assert np.max(np.abs(y - m(torch.as_tensor(x)).detach().numpy())) > 1e-6   # the mask mattered


@pytest.mark.slow
def test_distributed_data_parallel_with_two_cpu_processes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("ddp_worker.py")), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    w0, w1 = (np.load(tmp_path / f"rank{i}.npy") for i in (0, 1))
    assert np.array_equal(w0, w1)                  # gradients were averaged: both ranks agree
    start = np.load(tmp_path / "start.npy")
    assert not np.allclose(w0, start)              # and they trained


def test_state_dict_keys_are_the_trees_dotted_names():
    """Issue 16: keys were `weights.0`, `state_4`; a checkpoint should read and load by name."""
    from apsi_layers.layers import dense, mlp, sequential

    net = mlp(3, 2, hidden=[4], batch_norm=True)
    m = torch_module(net, net.init(seed=0), dtype="float64")
    names = [n for n, _ in nn.flatten(net.init(seed=0))]
    assert list(m.state_dict()) == names
    assert "batch_norm.state.mean" in m.state_dict() and "dense.w" in dict(m.named_parameters())
    assert "batch_norm.state.var" in dict(m.named_buffers())
    other = torch_module(net, net.init(seed=5), dtype="float64")
    other.load_state_dict({k: v.clone() for k, v in reversed(m.state_dict().items())})   # by name
    assert all(torch.equal(a, b) for a, b in zip(other.leaves(), m.leaves(), strict=True))
    back = params_from_torch(net, other)
    assert all(np.array_equal(a.data, b.data) for (_, a), (_, b) in
               zip(nn.flatten(back), nn.flatten(net.init(seed=0)), strict=True))
    odd = sequential(dense(2, inputs=3, name="eval"), dense(1, name="weights"))
    keys = list(torch_module(odd, odd.init(seed=0)).state_dict())
    assert keys == ["eval_.w", "eval_.b", "weights_.w", "weights_.b"]
