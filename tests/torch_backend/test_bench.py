"""scripts/bench_torch.py compares like with like: the same architecture (parameter counts) on both
sides, and both sides run (tiny sizes here; the script itself is a measurement, run by hand)."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from apsi_lang import permissions  # noqa: E402
from apsi_layers import nn  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_torch.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_torch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "transformer_lm", "gcn"])
def test_both_sides_train_the_same_architecture(bench, name):
    params = bench.apsi_model(name).init(seed=0)
    apsi_count = sum(v.data.size for v in nn.tree.leaves(params))
    torch_count = sum(p.numel() for p in bench.torch_model(name, torch).parameters())
    assert apsi_count == torch_count


@pytest.fixture(autouse=True)
def grants_restored():
    before = permissions.current()          # run_apsi grants `python`, as the script's worker does
    yield
    permissions.set_current(before)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("name", ["mlp", "lstm", "gcn"])
def test_both_sides_run(bench, monkeypatch, name, precision):
    small = dict(bench.SIZES[name], n=64 if name != "gcn" else 40, epochs=1)
    monkeypatch.setitem(bench.SIZES, name, small)
    for run in (bench.run_apsi, bench.run_torch):
        wall, cpu = run(name, precision, "cpu")
        assert wall > 0 and cpu > 0
