"""Optimizers: update rules, schedules as lr, errors; torch.optim twins to 1e-12 when torch is present."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record
from apsi_layers import nn

CONFIGS = [
    ("sgd", {"lr": 0.1}, "SGD", {"lr": 0.1}),
    ("sgd", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}, "SGD",
     {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
    ("sgd", {"lr": 0.05, "momentum": 0.8, "nesterov": True}, "SGD",
     {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    ("sgd", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}, "SGD",
     {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    ("adam", {"lr": 0.01}, "Adam", {"lr": 0.01}),
    ("adam", {"lr": 0.01, "b1": 0.8, "b2": 0.99, "eps": 1e-6, "weight_decay": 0.1}, "Adam",
     {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    ("adam", {"lr": 0.01, "b1": 0.3, "amsgrad": True}, "Adam",
     {"lr": 0.01, "betas": (0.3, 0.999), "amsgrad": True}),
    ("adamw", {"lr": 0.01}, "AdamW", {"lr": 0.01}),
    ("adamw", {"lr": 0.02, "weight_decay": 0.3, "amsgrad": True}, "AdamW",
     {"lr": 0.02, "weight_decay": 0.3, "amsgrad": True}),
    ("rmsprop", {"lr": 0.01}, "RMSprop", {"lr": 0.01}),
    ("rmsprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.1},
     "RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
    ("adagrad", {"lr": 0.1}, "Adagrad", {"lr": 0.1}),
    ("adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.5},
     "Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.5}),
    ("nadam", {"lr": 0.01}, "NAdam", {"lr": 0.01}),
    ("nadam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}, "NAdam",
     {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("nadam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}, "NAdam",
     {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("radam", {"lr": 0.01}, "RAdam", {"lr": 0.01}),
    ("radam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}, "RAdam",
     {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
]


@pytest.fixture
def float64_torch():
    """torch with float64 as its default dtype, so its scalar optimizer state (NAdam's mu_product, the
    step counters) is float64 as well; with torch's float32 default NAdam drifts by ~1e-8."""
    torch = pytest.importorskip("torch")
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield torch
    torch.set_default_dtype(old)


def _grads(step, shapes):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.torch
@pytest.mark.parametrize("ours,kw,theirs,tkw", CONFIGS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONFIGS)])
def test_matches_torch_optim(ours, kw, theirs, tkw, float64_torch):
    torch = float64_torch
    shapes = [(3, 4), (4,)]
    init = [np.random.default_rng(7).standard_normal(s) for s in shapes]
    tparams = [torch.tensor(a.copy(), dtype=torch.float64, requires_grad=True) for a in init]
    topt = getattr(torch.optim, theirs)(tparams, **tkw)
    opt = getattr(nn, ours)(**kw)
    params = Record(w=nn.Tensor(init[0].copy()), b=nn.Tensor(init[1].copy()))
    for step in range(12):                      # radam switches branch after step 5
        gs = _grads(step, shapes)
        for p, g in zip(tparams, gs, strict=True):
            p.grad = torch.tensor(g)
        topt.step()
        params = opt.step(params, Record(w=nn.Tensor(gs[0]), b=nn.Tensor(gs[1])))
        for mine, theirs_p in zip((params.w, params.b), tparams, strict=True):
            np.testing.assert_allclose(mine.data, theirs_p.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_sgd_step_is_p_minus_lr_g_and_params_are_not_mutated():
    p = Record(w=nn.array([1.0, 2.0]))
    before = p.w.data.copy()
    new = nn.sgd(lr=0.5).step(p, Record(w=nn.array([2.0, -2.0])))
    assert new.w.data.tolist() == [0.0, 3.0]
    np.testing.assert_array_equal(p.w.data, before)


def test_schedule_as_lr_is_called_with_the_step_number():
    seen = []
    opt = nn.sgd(lr=lambda s: seen.append(s) or 0.1)
    p = [nn.array([1.0])]
    for _ in range(3):
        p = opt.step(p, [nn.array([1.0])])
    assert seen == [0, 1, 2] and opt.steps == 3
    assert nn.sgd(lr=1.0).step(p, [nn.array([1.0])], lr=0.25)[0].item() == pytest.approx(0.7 - 0.25)


def test_training_a_line_with_adam_converges():
    x = nn.linspace(-1, 1, 20)
    y = 3 * x - 1
    params = Record(a=nn.array(0.0), b=nn.array(0.0))
    opt = nn.adam(lr=0.1)
    loss = lambda p: nn.mse(p.a * x + p.b, y)
    for _ in range(300):
        params = opt.step(params, nn.grad(loss)(params))
    assert params.a.item() == pytest.approx(3, abs=1e-3) and params.b.item() == pytest.approx(-1, abs=1e-3)


def test_optimizer_errors():
    with pytest.raises(ApsiError, match="adam: lr must be"):
        nn.adam(lr="fast")
    with pytest.raises(ApsiError, match="b1 must be in"):
        nn.adam(b1=1.5)
    with pytest.raises(ApsiError, match="nesterov"):
        nn.sgd(lr=0.1, nesterov=True)
    opt = nn.adam()
    with pytest.raises(ApsiError, match="structure of params"):
        opt.step(Record(w=nn.zeros(2)), Record(v=nn.zeros(2)))
    with pytest.raises(ApsiError, match="has shape"):
        opt.step(Record(w=nn.zeros(2)), Record(w=nn.zeros(3)))
    with pytest.raises(ApsiError, match="holds NaN"):
        opt.step(Record(w=nn.zeros(2)), Record(w=nn.array([np.nan, 0.0])))
