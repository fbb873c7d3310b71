"""The in-place optimizers fit uses (nn/train/optim_inplace.py) give bit-for-bit what nn's public
`opt.step` gives, over many steps, for every optimizer and option; fit uses them, updates only its own
copy of the parameters, and trains to exactly the numbers the allocation-based update gives."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.backends.numpy import loop as numpy_loop
from apsi_layers.layers import fit, mlp
from apsi_layers.nn.train import blockwise, optim_inplace
from apsi_layers.nn.train.optim_inplace import InPlace

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    ("sgd", {}), ("sgd", {"momentum": 0.9}),
    ("sgd", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("sgd", {"momentum": 0.5, "dampening": 0.3, "weight_decay": 0.01}),
    ("adam", {}), ("adam", {"weight_decay": 0.1, "amsgrad": True}), ("adam", {"b1": 0.3, "b2": 0.9}),
    ("adamw", {}), ("adamw", {"amsgrad": True, "weight_decay": 0.3}),
    ("rmsprop", {}), ("rmsprop", {"centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("rmsprop", {"alpha": 0.3, "momentum": 0.5}),
    ("adagrad", {}), ("adagrad", {"lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    ("nadam", {}), ("nadam", {"weight_decay": 0.1}),
    ("nadam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("radam", {}), ("radam", {"weight_decay": 0.1}),
    ("radam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
]


def test_every_optimizer_has_an_in_place_rule():
    names = ("sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam")
    assert set(optim_inplace.KERNELS) == set(names)
    assert all(optim_inplace.kernel(getattr(nn, name)()) is optim_inplace.KERNELS[name] for name in names)


def test_a_subclass_runs_its_own_rule_not_the_kernel():
    """A subclass may have changed the update: only optim.py's own classes get an in-place rule."""
    from apsi_layers.nn.train import optim

    class Mine(optim.Adam):
        name = "adam"

    class Quiet(optim.SGD):
        pass

    assert optim_inplace.kernel(Mine(lr=0.1)) is None and optim_inplace.kernel(Quiet(lr=0.1)) is None
    assert not optim_inplace.InPlace.supports(Mine(lr=0.1), [nn.Tensor(np.zeros(3))])


@pytest.mark.parametrize("name,hyper", CASES)
def test_in_place_matches_opt_step_bit_for_bit(name, hyper):
    rng = np.random.default_rng(0)
    shapes = [(7, 5), (5,), (), (3, 2, 4)]
    start = [np.array(rng.standard_normal(s)) for s in shapes]
    reference = getattr(nn, name)(lr=0.01, **hyper)
    ours = getattr(nn, name)(lr=0.01, **hyper)
    engine = InPlace(ours)
    ref_params = [nn.Tensor(a.copy()) for a in start]
    work = [nn.Tensor(a.copy()) for a in start]
    for step in range(60):        # RAdam switches to its rectified step after a few steps
        grads = [rng.standard_normal(s) * (step % 7 + 0.1) for s in shapes]
        grads[1] = grads[1] if step % 3 else np.zeros(5)
        shared = [nn.Tensor(g) for g in grads]
        ref_params = reference.step(ref_params, [nn.Tensor(g.copy()) for g in grads],
                                    lr=0.02 if step % 5 == 0 else None)
        before = [g.copy() for g in grads]
        arrays = [p.data for p in work]
        engine.step(work, shared, lr=0.02 if step % 5 == 0 else None)
        assert all(p.data is a for p, a in zip(work, arrays, strict=True))      # updated in place
        assert all(np.array_equal(g, b) for g, b in zip(grads, before, strict=True))   # grads only read
        for r, w in zip(ref_params, work, strict=True):
            assert np.array_equal(r.data, w.data), (name, hyper, step)
    assert ours.steps == reference.steps == 60
    for rs, ws in zip(reference._state, ours._state, strict=True):
        assert rs.keys() == ws.keys()
        for k in rs:
            assert np.array_equal(rs[k], ws[k]), k


def test_a_gradient_shared_by_two_parameters_is_not_overwritten():
    g = np.ones(3)
    work = [nn.Tensor(np.zeros(3)), nn.Tensor(np.zeros(3))]
    InPlace(nn.adam(lr=0.1, weight_decay=0.5)).step(work, [nn.Tensor(g), nn.Tensor(g)])
    assert np.array_equal(g, np.ones(3))
    assert np.array_equal(work[0].data, work[1].data)


def test_a_non_finite_gradient_is_reported_before_anything_changes():
    work = [nn.Tensor(np.zeros(2)), nn.Tensor(np.zeros(2))]
    with pytest.raises(ApsiError, match=r"adam.step: the gradient of '1' holds NaN; lower the learning rate"):
        InPlace(nn.adam()).step(work, [nn.Tensor(np.ones(2)), nn.Tensor(np.array([0.0, np.nan]))])
    assert np.array_equal(work[0].data, np.zeros(2))


def _blobs(n=96):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 4))
    return nn.Tensor(x), nn.Tensor((x[:, 0] > x[:, 1]).astype(float))


@pytest.mark.parametrize("opt", ["adam", "sgd", "nadam", "radam", "rmsprop", "adagrad", "adamw"])
def test_fit_trains_in_place_to_the_same_numbers(opt, monkeypatch):
    x, y = _blobs()
    net = mlp(4, 2, hidden=[16, 8])
    p = net.init(seed=0)
    before = [v.data.copy() for _, v in nn.flatten(p)]
    calls = []
    real = InPlace.step
    monkeypatch.setattr(InPlace, "step", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    fast = fit(net, p, x, y, loss="cross_entropy", opt=opt, epochs=3, batch_size=16, clip=1.0)
    assert len(calls) == 3 * 6                      # every step went through the in-place rule
    monkeypatch.setattr(numpy_loop.InPlace, "supports", staticmethod(lambda opt, params: False))
    slow = fit(net, p, x, y, loss="cross_entropy", opt=opt, epochs=3, batch_size=16, clip=1.0)
    assert fast.history == slow.history
    for (_, a), (_, b) in zip(nn.flatten(fast.params), nn.flatten(slow.params), strict=True):
        assert np.array_equal(a.data, b.data)
    # the caller's tree is untouched
    assert all(np.array_equal(a, v.data) for a, (_, v) in zip(before, nn.flatten(p), strict=True))


def _plain_rule(opt, start, steps):
    """The reference: optim.py's readable `update` rule, one new array per operation."""
    params, states = [a.copy() for a in start], [opt.init_state(a) for a in start]
    for t, (grads, lr) in enumerate(steps, 1):
        params = [opt.update(p, g, s, opt.lr if lr is None else lr, t)
                  for p, g, s in zip(params, grads, states, strict=True)]
    return params, states


@pytest.mark.parametrize("name,hyper", CASES)
def test_opt_step_and_fit_rule_match_the_plain_rule_across_blocks(name, hyper, monkeypatch):
    # small blocks, so block edges fall inside every array; an F-ordered parameter takes the
    # whole-array path, and the 0-d one the rule on the arrays themselves
    monkeypatch.setattr(blockwise, "BLOCK", 4)
    rng = np.random.default_rng(3)
    shapes = [(7, 5), (5,), (), (3, 2, 4), (9, 11)]
    start = [rng.standard_normal(s) for s in shapes]
    start[4] = np.asfortranarray(start[4])
    steps = [([rng.standard_normal(s) * (k % 7 + 0.1) for s in shapes], 0.02 if k % 5 == 0 else None)
             for k in range(40)]
    expected, expected_state = _plain_rule(getattr(nn, name)(lr=0.01, **hyper), start, steps)
    functional, engine = getattr(nn, name)(lr=0.01, **hyper), None
    params = [nn.Tensor(a.copy()) for a in start]
    work = [nn.Tensor(a.copy(order="K")) for a in start]
    engine = InPlace(getattr(nn, name)(lr=0.01, **hyper))
    for grads, lr in steps:
        params = functional.step(params, [nn.Tensor(g) for g in grads], lr=lr)
        engine.step(work, [nn.Tensor(g) for g in grads], lr=lr)
    for want, a, b in zip(expected, params, work, strict=True):
        assert np.array_equal(want, a.data) and np.array_equal(want, b.data), (name, hyper)
    for opt in (functional, engine.opt):
        for want, got in zip(expected_state, opt._state, strict=True):
            assert want.keys() == got.keys()
            assert all(np.array_equal(want[k], got[k]) for k in want), (name, hyper)


@pytest.mark.parametrize("block", [4, 1 << 16])
@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam"])
def test_opt_step_leaves_the_given_parameters_and_gradients_alone(name, block, monkeypatch):
    monkeypatch.setattr(blockwise, "BLOCK", block)          # in blocks and on the whole arrays
    p, g = np.arange(15.0).reshape(3, 5), np.ones((3, 5))
    opt = getattr(nn, name)(lr=0.1, weight_decay=0.1)
    for _ in range(2):
        new = opt.step([nn.Tensor(p)], [nn.Tensor(g)])[0]
    assert np.array_equal(p, np.arange(15.0).reshape(3, 5)) and np.array_equal(g, np.ones((3, 5)))
    assert not np.shares_memory(new.data, p) and not np.array_equal(new.data, p)


def test_a_scalar_moment_restored_from_a_checkpoint_keeps_moving():
    # fit's checkpoints give a 0-d parameter's moments back as plain floats (numpy loop's restore_opt)
    opt = nn.adam(lr=0.1)
    work = [nn.Tensor(np.array(1.0))]
    InPlace(opt).step(work, [nn.Tensor(np.array(0.5))])
    opt._state = [{k: float(v) for k, v in s.items()} for s in opt._state]
    reference = nn.adam(lr=0.1)
    ref = reference.step([nn.Tensor(np.array(1.0))], [nn.Tensor(np.array(0.5))])
    engine = InPlace(opt)
    for _ in range(3):
        engine.step(work, [nn.Tensor(np.array(0.5))])
        ref = reference.step(ref, [nn.Tensor(np.array(0.5))])
    assert np.array_equal(work[0].data, ref[0].data)
    assert float(opt._state[0]["m"]) == float(reference._state[0]["m"]) != 0.05


STEPS_PROGRAM = """use nn
let t = randn(400, 400, seed=1)
let p = randn(400, 400, seed=0)
let opt = adam(lr=0.1)
let g = grad(fn(q) => sum((q - t) ** 2))
for i in range(5):
    p = opt.step(p, g(p))
save_params({p: p}, "out.npz")
"""


def test_opt_step_in_an_apsi_program_gives_the_plain_rule(tmp_path):
    # the program as users run it (confined: Landlock and seccomp where the kernel has them), with
    # 160,000 numbers per parameter: three blocks
    (tmp_path / "p.apsi").write_text(STEPS_PROGRAM)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "apsi", "p.apsi"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    t, p = nn.randn(400, 400, seed=1), nn.randn(400, 400, seed=0)
    g = nn.grad(lambda q: nn.sum((q - t) ** 2))
    opt, state, q = nn.adam(lr=0.1), None, p.data
    for step in range(1, 6):
        state = state or opt.init_state(q)
        q = opt.update(q, g(nn.Tensor(q)).data, state, 0.1, step)
    assert np.array_equal(np.load(tmp_path / "out.npz")["p"], q)
