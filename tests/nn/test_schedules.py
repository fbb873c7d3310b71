"""Learning-rate schedules: formulas, torch's schedulers where they exist, errors."""

import math

import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn


def test_cosine_with_warmup():
    assert nn.cosine_lr(0, 100, base=1.0, warmup=10) == pytest.approx(0.1)
    assert nn.cosine_lr(9, 100, base=1.0, warmup=10) == pytest.approx(1.0)
    assert nn.cosine_lr(10, 100, base=1.0, warmup=10) == pytest.approx(1.0)
    assert nn.cosine_lr(55, 100, base=1.0, warmup=10) == pytest.approx(0.5)
    assert nn.cosine_lr(100, 100, base=1.0, warmup=10) == pytest.approx(0.0)
    assert nn.cosine_lr(500, 100, base=1.0, final=0.1) == pytest.approx(0.1)


def test_warmup_step_and_exponential():
    assert [nn.warmup_lr(s, 4, base=0.4) for s in range(6)] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    assert [nn.step_lr(s, base=1.0, every=2, factor=0.5) for s in range(5)] == [1, 1, 0.5, 0.5, 0.25]
    assert nn.exp_lr(3, base=2.0, gamma=0.5) == 0.25


@pytest.mark.torch
def test_match_torch_schedulers():
    torch = pytest.importorskip("torch")
    p = [torch.zeros(1, requires_grad=True)]

    def lrs(make, n):
        opt = torch.optim.SGD(p, lr=0.3)
        sched = make(opt)
        out = []
        for _ in range(n):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        return out

    total = 20
    cos = lrs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=total, eta_min=0.01), total)
    assert cos == pytest.approx([nn.cosine_lr(s, total, base=0.3, final=0.01) for s in range(total)],
                                rel=1e-12)
    st = lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 10)
    assert st == pytest.approx([nn.step_lr(s, base=0.3, every=3, factor=0.5) for s in range(10)], rel=1e-12)
    ex = lrs(lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.9), 10)
    assert ex == pytest.approx([nn.exp_lr(s, base=0.3, gamma=0.9) for s in range(10)], rel=1e-12)


def test_schedule_errors():
    with pytest.raises(ApsiError, match="cosine_lr: total must be a positive number"):
        nn.cosine_lr(1, 0, base=0.1)
    with pytest.raises(ApsiError, match="step must be"):
        nn.exp_lr(-1, base=0.1, gamma=0.5)
    assert math.isclose(nn.cosine_lr(0, 10, base=0.5), 0.5)
