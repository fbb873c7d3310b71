"""norm(x, p) at its non-differentiable points (issue 35): the gradient at the origin is torch's
subgradient 0 (it was an error: "the gradient holds NaN"), and the hessian has NaN exactly where
torch.autograd's float64 hessian has (0 * inf in its formula) and torch's values elsewhere, on a
real .apsi program; on torch tensors nn's norm is torch's own."""

import json

import numpy as np
import pytest

from .test_numeric_edges import printed, run_apsi

PS = [0.5, 1.5, 2.5, 3, 4, -1]
POINTS = [[0.0, 0.0, 0.0], [0.3, -1.2, 0.8], [0.0, 1.0, -2.0]]
COLUMNS = [[0.0, 1.0], [0.0, -2.0], [0.0, 0.5]]        # one zero column, one generic

PROGRAM = """\
use nn
let ps = {ps}
let points = {points}
let m = array({columns})
for p in ps:
    for x in points:
        print([grad(fn(v) => norm(v, p))(array(x)).tolist(), hessian(fn(v) => norm(v, p))(array(x)).tolist()])
    print(hessian(fn(v) => sum(norm(v, p, axis=0)))(m).tolist())
"""


def same(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want)
    return (np.array_equal(np.isnan(got), np.isnan(want))
            and np.allclose(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-9, atol=1e-12))


def test_p_norm_gradients_and_hessians_match_torch_at_zeros(tmp_path):
    torch = pytest.importorskip("torch")
    got = iter(printed(run_apsi(tmp_path, PROGRAM.format(ps=PS, points=POINTS, columns=json.dumps(COLUMNS)))))
    hess = torch.autograd.functional.hessian
    nans = 0
    for p in PS:
        for x in POINTS:
            t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
            (want_g,) = torch.autograd.grad(torch.linalg.vector_norm(t, p), t)
            want_h = hess(lambda v, p=p: torch.linalg.vector_norm(v, p), t.detach()).numpy()
            g, h = next(got)
            assert same(g, want_g.numpy()) and same(h, want_h), (p, x, g, h, want_h)
            nans += int(np.isnan(want_h).any())
        want_m = hess(lambda v, p=p: torch.linalg.vector_norm(v, p, dim=0).sum(),
                      torch.tensor(COLUMNS, dtype=torch.float64)).numpy()
        assert same(next(got), want_m), p
    assert 0 < nans < len(PS) * len(POINTS)            # both kinds of point are checked


def test_norm_hessians_at_zero_are_nan_on_torch_tensors_too():
    torch = pytest.importorskip("torch")
    from apsi_layers import nn
    from apsi_layers.backends.torch import nn_dispatch

    nn_dispatch.install()
    zeros = torch.zeros(3, dtype=torch.float64)
    assert torch.isnan(torch.autograd.functional.hessian(lambda v: nn.norm(v), zeros)).all()
    assert torch.isnan(torch.autograd.functional.hessian(lambda v: nn.norm(v, 1.5), zeros)).all()
    assert not torch.autograd.functional.hessian(lambda v: nn.norm(v, 3), zeros).any()
