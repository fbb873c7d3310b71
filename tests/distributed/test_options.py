"""distributed= is checked before anything starts, in one process: its values, what it needs (the torch
backend, a launch), what it refuses (graphs); rank()/world_size() and save_params' rank rule."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import distributed
from apsi_layers.layers import fit, mlp
from apsi_layers.nn import save_params

X = np.random.default_rng(0).normal(size=(12, 4))
Y = np.arange(12) % 3


@pytest.fixture
def not_launched(monkeypatch):
    for name in distributed.LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def rank_one_of_two(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")


def train(**options):
    net = mlp(4, 3, hidden=[4])
    return fit(net, net.init(seed=0), X, Y, loss="cross_entropy", verbose=False, **options)


@pytest.mark.parametrize("value, says", [
    ("yes", 'distributed must be true, false, "auto" .* or "fsdp"'),
    (2, 'distributed must be true, false, "auto"'),
    ("FSDP", 'distributed must be true, false, "auto"'),
])
def test_bad_values_are_named(value, says, not_launched):
    with pytest.raises(ApsiError, match=says):
        train(distributed=value)


def test_auto_without_a_launch_is_one_process(not_launched):
    r = train(distributed="auto")
    assert (r.world_size, r.rank, r.backend) == (1, 0, "numpy")


def test_the_numpy_backend_is_refused(not_launched):
    with pytest.raises(ApsiError, match='distributed training runs on PyTorch: give fit backend="torch"'):
        train(distributed=True)


def test_a_graph_model_is_refused(not_launched):
    from apsi_layers.layers import gcn_classifier

    net = gcn_classifier(4, 3, hidden=[4])
    edges = np.array([[0, 1, 2], [1, 2, 3]])
    with pytest.raises(ApsiError, match=r"cannot shard a graph model \(graph=\)"):
        fit(net, net.init(seed=0), X, Y, loss="cross_entropy", graph=edges, distributed=True,
            backend="torch", verbose=False)


@pytest.mark.parametrize("value, words", [
    (True, 'distributed=true needs a launch by `apsi launch --nproc N FILE` or torchrun (this process lacks '
           'RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); use distributed="auto" to train on one '
           'process'),
    # (named as written, with the way to run the same program on one process that docs/distributed.md gives)
    ("fsdp", 'distributed="fsdp" needs a launch by `apsi launch --nproc N FILE` or torchrun (this process '
             'lacks RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); use distributed="fsdp" if '
             'world_size() > 1 else false to train on one process'),
])
def test_true_without_a_launch_says_how_to_launch(value, words, not_launched, python_allowed):
    pytest.importorskip("torch")
    with pytest.raises(ApsiError) as e:
        train(distributed=value, backend="torch")
    assert words in e.value.message


def test_rank_and_world_size_come_from_the_launch(rank_one_of_two):
    assert (distributed.rank(), distributed.world_size(), distributed.writer()) == (1, 2, False)
    assert distributed.resolve("auto") is True


@pytest.fixture
def write_allowed():
    from apsi_lang import permissions

    before = permissions.current()
    permissions.set_current(permissions.Grants(granted=frozenset({"write"})))
    yield
    permissions.set_current(before)


def test_only_rank_zero_writes_unless_all_ranks(rank_one_of_two, write_allowed, tmp_path):
    params = mlp(4, 3, hidden=[4]).init(seed=0)
    assert save_params(str(tmp_path / "a.npz"), params) == str(tmp_path / "a.npz")
    assert not (tmp_path / "a.npz").exists()
    save_params(str(tmp_path / "b.npz"), params, all_ranks=True)
    assert (tmp_path / "b.npz").exists()
    with pytest.raises(ApsiError, match="all_ranks must be true or false"):
        save_params(str(tmp_path / "c.npz"), params, all_ranks="yes")


@pytest.fixture(scope="module")
def python_workers(tmp_path_factory):
    """The folder where python_worker.py's two processes wrote each case (auto, fsdp, scalar): one run
    of them for the three cases, in one group (each start-up imports PyTorch three times: suite time)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("python-workers")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in distributed.LAUNCH_ENV}     # not launched
    env.update(PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    worker = str(Path(__file__).with_name("python_worker.py"))
    done = subprocess.run([sys.executable, worker, str(out), "auto,fsdp,scalar"], capture_output=True,
                          text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow
@pytest.mark.parametrize("how", ["auto", "fsdp"])
def test_a_python_caller_in_its_own_group(python_workers, not_launched, how):
    """fit from Python in a group the caller joined (mp.spawn, no torchrun): "auto" (DDP) and "fsdp"
    train in it, and equal one process with twice the batch. With "fsdp" each rank's optimizer holds a
    slice of every weight and of its Adam moments (the two ranks' slices add up to the whole); with DDP
    each holds the whole."""
    folder = python_workers / how
    sizes = [np.load(folder / f"sizes{r}.npy") for r in (0, 1)]
    whole = np.stack([[4 * 8, 8, 8 * 3, 3]] * 2)      # mlp(4, 3, hidden=[8]): w, b, w, b; weight, moment
    if how == "fsdp":
        np.testing.assert_array_equal(sizes[0] + sizes[1], whole)
        assert (sizes[0] < whole).all() and (sizes[1] < whole).all()
    else:
        np.testing.assert_array_equal(sizes[0], whole)
        np.testing.assert_array_equal(sizes[1], whole)
    r0, r1 = np.load(folder / "rank0.npy"), np.load(folder / "rank1.npy")
    np.testing.assert_array_equal(r0, r1)
    net = mlp(4, 3, hidden=[8])
    x = np.random.default_rng(1).normal(size=(30, 4))
    one = fit(net, net.init(seed=0), x, np.arange(30) % 3, loss="cross_entropy", epochs=2, batch_size=8,
              verbose=False)                      # NumPy, float64: the exact reference
    np.testing.assert_allclose(r0[:2], one.history, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r0[2:], np.asarray(one.params.dense.w.data).ravel(), rtol=0, atol=1e-10)


@pytest.mark.slow
def test_fsdp_refuses_a_weight_that_is_a_single_number(python_workers):
    """FSDP cuts weights along their first axis; PyTorch refuses a 0-d one with its own ValueError."""
    said = (python_workers / "scalar" / "error0.txt").read_text()
    assert said.startswith('fit: distributed="fsdp" cannot shard the weight ') and "'" in said
    assert "give it the shape [1]" in said and "distributed=true" in said
