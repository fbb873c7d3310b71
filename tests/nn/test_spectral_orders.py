"""Functions of eigenvalues/singular values alone at every order (issue 35): third derivatives at
distinct values on NumPy (a real .apsi program), and on torch tensors (nn's functions as the torch
backend runs them) the hessian at repeated values, which torch.linalg's own ops give as NaN.
References: the analytic values, torch.autograd float64 at distinct values, finite differences."""

import json

import numpy as np
import pytest

from .test_numeric_edges import fd_hessian, printed, run_apsi

A3 = [[2.0, 0.3, -0.1], [0.3, 1.0, 0.4], [-0.1, 0.4, -1.0]]

THIRD = """\
use nn
let a = array({a})
let sym = fn(m) => (m + transpose(m)) / 2
print(jacobian(hessian(fn(m) => sum(eigvalsh(sym(m)) ** 3)))(a).tolist())
print(jacobian(hessian(fn(m) => sum(svdvals(m) ** 3)))(a[:, :2]).tolist())
print(jacobian(hessian(fn(m) => sum(eigvalsh(sym(m)) ** 2)))(a).tolist())
print(jacobian(hessian(fn(m) => sum(svd(m, compute_uv=false) ** 2)))(a).tolist())
"""


def _third(torch, f, x):
    """d3 f / dx3 by torch.autograd (jacobian of a hessian kept on the graph)."""
    hess = torch.autograd.functional.hessian
    return torch.autograd.functional.jacobian(lambda y: hess(f, y, create_graph=True), x).numpy()


def test_third_derivatives_at_distinct_values_match_torch_and_the_analytic_zero(tmp_path):
    torch = pytest.importorskip("torch")
    got = printed(run_apsi(tmp_path, THIRD.format(a=json.dumps(A3))))
    t = torch.tensor(A3, dtype=torch.float64)
    want0 = _third(torch, lambda m: (torch.linalg.eigvalsh((m + m.T) / 2) ** 3).sum(), t)
    want1 = _third(torch, lambda m: (torch.linalg.svdvals(m) ** 3).sum(), t[:, :2].contiguous())
    assert np.abs(want0).max() > 1 and np.abs(want1).max() > 1       # the check is not vacuous
    assert np.allclose(got[0], want0, rtol=1e-8, atol=1e-9)
    assert np.allclose(got[1], want1, rtol=1e-8, atol=1e-9)
    # |a|_F^2 (of sym(a)): its hessian is constant, so its third derivative is 0
    assert np.allclose(got[2], 0.0, atol=1e-9) and np.allclose(got[3], 0.0, atol=1e-9)


def test_a_third_derivative_at_a_repeat_is_refused_by_name_in_a_program(tmp_path):
    r = run_apsi(tmp_path, "use nn\n\nlet t = jacobian(hessian(fn(m) => sum(svdvals(m) ** 3)))(eye(2))\n")
    assert r.returncode != 0 and 'File "' not in r.stderr
    assert "edges.apsi:3" in r.stderr and "svdvals: a third derivative at repeated" in r.stderr


# --- on torch tensors ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tnn():
    """nn's functions with the torch backend's versions installed (what fit(backend="torch") runs)."""
    torch = pytest.importorskip("torch")
    from apsi_layers import nn
    from apsi_layers.backends.torch import nn_dispatch

    nn_dispatch.install()
    return torch, nn


def _hessian(torch, f, x):
    return torch.autograd.functional.hessian(f, torch.tensor(x, dtype=torch.float64)).numpy()


def test_torch_hessians_at_repeated_values_are_analytic_and_match_finite_differences(tnn):
    torch, nn = tnn
    d = np.diag([1.0, 1.0, 2.0])
    cases = [
        # |a|_F^2 for symmetric a: 2I in the symmetric directions (torch's gradient convention)
        (lambda a: (nn.eigvalsh(a) ** 2).sum(), lambda a: np.sum(np.linalg.eigvalsh((a + a.T) / 2) ** 2),
         2 * np.eye(2)),
        (lambda a: (nn.svdvals(a) ** 2).sum(), lambda a: np.sum(a * a), 2 * np.eye(2)),
        (lambda a: (nn.svd(a, compute_uv=False) ** 2).sum(), lambda a: np.sum(a * a), np.zeros((3, 2))),
        (lambda a: torch.exp(nn.eigvalsh(a)).sum(),
         lambda a: np.sum(np.exp(np.linalg.eigvalsh((a + a.T) / 2))), d),
        (lambda a: torch.exp(nn.svdvals(a)).sum(),
         lambda a: np.sum(np.exp(np.linalg.svd(a, compute_uv=False))), d),
        (lambda a: (nn.eigh(a)[0] ** 2).sum(), lambda a: np.sum(np.linalg.eigvalsh((a + a.T) / 2) ** 2),
         2 * np.eye(2)),
        (lambda a: (nn.svd(a)[1] ** 3).sum(), lambda a: np.sum(np.linalg.svd(a, compute_uv=False) ** 3),
         np.diag([3.0, 1.0, 1.0])),
    ]
    for i, (f, ref, x) in enumerate(cases):
        got = _hessian(torch, f, x)
        assert np.isfinite(got).all(), i
        assert np.allclose(got, fd_hessian(ref, x), rtol=1e-6, atol=1e-6), i
    assert np.allclose(_hessian(torch, cases[1][0], 2 * np.eye(2)).reshape(4, 4), 2 * np.eye(4))
    # what torch.linalg's own op gives there (the gap this closes)
    assert np.isnan(_hessian(torch, lambda a: (torch.linalg.svdvals(a) ** 2).sum(), 2 * np.eye(2))).all()


def test_torch_derivatives_at_distinct_values_match_torch_autograd_to_the_third_order(tnn):
    torch, nn = tnn
    t = torch.tensor(A3, dtype=torch.float64)
    pairs = [(lambda m: torch.sin(nn.eigvalsh(m)).sum(),
              lambda m: torch.sin(torch.linalg.eigvalsh(m)).sum(), t),
             (lambda m: (nn.svdvals(m) ** 3).sum(), lambda m: (torch.linalg.svdvals(m) ** 3).sum(),
              t[:, :2].contiguous())]
    for ours, theirs, x in pairs:
        assert np.allclose(_hessian(torch, ours, x.numpy()), _hessian(torch, theirs, x.numpy()),
                           rtol=1e-10, atol=1e-12)
        want = _third(torch, theirs, x)
        assert np.abs(want).max() > 0.1                              # not vacuous
        assert np.allclose(_third(torch, ours, x), want, rtol=1e-8, atol=1e-9)
    frob = _third(torch, lambda m: (nn.eigvalsh(m) ** 2).sum(), t)
    assert np.allclose(frob, 0.0, atol=1e-9)


def test_torch_refusals_name_the_function(tnn):
    from apsi_lang.errors import ApsiError

    torch, nn = tnn
    eye2 = torch.eye(2, dtype=torch.float64)
    with pytest.raises(ApsiError, match="eigvalsh: the second derivative is undefined here"):
        torch.autograd.functional.hessian(lambda a: nn.eigvalsh(a)[1], eye2)
    with pytest.raises(ApsiError, match="a third derivative at repeated"):
        _third(torch, lambda a: (nn.svdvals(a) ** 3).sum(), eye2)
    # a first derivative with create_graph at a repeat is not refused: only its derivative would be
    (g,) = torch.autograd.grad(nn.eigvalsh(eye2.requires_grad_())[1], eye2, create_graph=True)
    assert torch.isfinite(g).all()


def _frobenius_hessian():
    """d2 |sym(m)|_F^2 / dm2 for 3x3 m, flattened: 2 P^T P with P the map m -> sym(m)."""
    p = np.zeros((9, 9))
    for k in range(9):
        e = np.zeros(9)
        e[k] = 1.0
        e = e.reshape(3, 3)
        p[:, k] = ((e + e.T) / 2).ravel()
    return 2 * p.T @ p


NEAR = """\
use nn
let q = array({q})
for gap in [1e-6, 1e-8]:
    let a = q @ diag(array([1.0, 1.0 + gap, 2.0])) @ transpose(q)
    print(hessian(fn(m) => sum(eigvalsh((m + transpose(m)) / 2) ** 2))(a).tolist())
"""


def test_hessians_at_near_repeated_values_keep_full_precision(tmp_path):
    """The divided differences are taken as numbers, not through the eigenvectors' derivative
    (which loses digits as 1 / gap: torch's own eigvalsh is 3e-9 off at a gap of 1e-8)."""
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    want = _frobenius_hessian()
    for h in printed(run_apsi(tmp_path, NEAR.format(q=json.dumps(q.tolist())))):
        assert np.abs(np.reshape(h, (9, 9)) - want).max() < 1e-12
    torch = pytest.importorskip("torch")
    from apsi_layers import nn
    from apsi_layers.backends.torch import nn_dispatch

    nn_dispatch.install()
    for gap in (1e-6, 1e-8):
        a = torch.tensor(q @ np.diag([1.0, 1.0 + gap, 2.0]) @ q.T)
        h = torch.autograd.functional.hessian(lambda m: (nn.eigvalsh((m + m.T) / 2) ** 2).sum(), a)
        assert np.abs(h.reshape(9, 9).numpy() - want).max() < 1e-12
