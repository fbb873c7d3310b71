"""NumPy's and SciPy's other linear algebra (issue 35, nn/numlib/linalg_more.py): values against NumPy/SciPy,
gradients and hessians against torch.autograd in float64 where torch has the op (finite differences
for logm and sqrtm, which torch lacks), the same on torch tensors (the torch backend's versions), and
the refusals."""

import numpy as np
import pytest
import scipy.linalg as sl

from apsi_lang.errors import ApsiError
from apsi_layers import nn

from .gradcheck import check_first_order, check_second_order, scalarize
from .linalg_compare import as_list, assert_grads_match, rel, weights
from .linalg_compare import scalar_nn as _scalar_nn
from .linalg_compare import scalar_t as _scalar_t
from .linalg_compare import tol_for as _tol

try:
    import torch
    TL = torch.linalg
except ImportError:          # the NumPy/SciPy checks still run; the torch ones skip
    torch = TL = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
RNG = np.random.default_rng(35)


def normal(*shape):
    return RNG.standard_normal(shape)


SPD = (lambda x: x @ x.T + 3 * np.eye(3))(normal(3, 3))
CHOL = np.linalg.cholesky(SPD)
NEAR_I = np.eye(3) + 0.3 * normal(3, 3)
REAL_EIG = np.array([[2.0, 0.5, 0.1], [0.3, -1.0, 0.4], [0.0, 0.2, 0.5]])


def _lu_lu(a):
    return nn.lu(a)[1:]


# (name, nn function, NumPy/SciPy reference, torch function or None, inputs, tolerance scale)
CASES = [
    ("diagonal", lambda a: nn.diagonal(a, 1, 2, 0), lambda a: np.diagonal(a, 1, 2, 0),
     lambda a: torch.diagonal(a, 1, 2, 0), [normal(3, 2, 4)], 1),
    ("swapaxes", lambda a: nn.swapaxes(a, 0, -1), lambda a: np.swapaxes(a, 0, -1),
     lambda a: torch.swapaxes(a, 0, -1), [normal(2, 3, 4)], 1),
    ("cross", nn.cross, np.cross, lambda a, b: TL.cross(*torch.broadcast_tensors(a, b)),
     [normal(2, 3), normal(3)], 1),
    ("cross_axes", lambda a, b: nn.cross(a, b, axisa=0, axisb=1, axisc=0),
     lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0),
     lambda a, b: TL.cross(a.T, b, dim=-1).T, [normal(3, 4), normal(4, 3)], 1),
    ("multi_dot", lambda a, b, c: nn.multi_dot([a, b, c]), lambda a, b, c: np.linalg.multi_dot([a, b, c]),
     lambda a, b, c: TL.multi_dot([a, b, c]), [normal(4), normal(4, 6), normal(6, 2)], 1),
    ("multi_dot_four", lambda a, b, c, d: nn.multi_dot([a, b, c, d]),
     lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), lambda a, b, c, d: TL.multi_dot([a, b, c, d]),
     [normal(5, 2), normal(2, 6), normal(6, 3), normal(3)], 1),
    ("svdvals", nn.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), lambda a: TL.svdvals(a),
     [normal(2, 3, 4)], 10),
    ("solve_triangular_upper", nn.solve_triangular, sl.solve_triangular,
     lambda a, b: TL.solve_triangular(torch.triu(a), b, upper=True), [NEAR_I, normal(3, 2)], 30),
    ("solve_triangular_lower_trans_vec", lambda a, b: nn.solve_triangular(a, b, trans="T", lower=True),
     lambda a, b: sl.solve_triangular(a, b, trans="T", lower=True),
     lambda a, b: TL.solve_triangular(torch.tril(a).T, b[:, None], upper=True)[:, 0],
     [NEAR_I, normal(3)], 30),
    ("solve_triangular_unit", lambda a, b: nn.solve_triangular(a, b, lower=True, unit_diagonal=True),
     lambda a, b: sl.solve_triangular(a, b, lower=True, unit_diagonal=True),
     lambda a, b: TL.solve_triangular(torch.tril(a), b, upper=False, unitriangular=True),
     [NEAR_I, normal(3, 2)], 30),
    ("cho_solve_lower", lambda c, b: nn.cho_solve([c, True], b), lambda c, b: sl.cho_solve((c, True), b),
     lambda c, b: torch.cholesky_solve(b, torch.tril(c)), [CHOL, normal(3, 2)], 30),
    ("cho_solve_upper", lambda c, b: nn.cho_solve([c, False], b), lambda c, b: sl.cho_solve((c, False), b),
     lambda c, b: torch.cholesky_solve(b[:, None], torch.triu(c), upper=True)[:, 0], [CHOL.T, normal(3)], 30),
    ("lu", _lu_lu, lambda a: sl.lu(a)[1:], lambda a: TL.lu(a)[1:], [normal(4, 4)], 100),
    ("expm", nn.expm, sl.expm, lambda a: TL.matrix_exp(a), [0.5 * normal(3, 3)], 10),
    ("expm_batched", nn.expm, sl.expm, lambda a: TL.matrix_exp(a), [0.5 * normal(2, 3, 3)], 10),
    ("logm", nn.logm, sl.logm, None, [SPD], 30),
    ("logm_nonsymmetric", nn.logm, sl.logm, None, [NEAR_I], 30),
    ("sqrtm", nn.sqrtm, sl.sqrtm, None, [SPD], 30),
    ("sqrtm_nonsymmetric", nn.sqrtm, sl.sqrtm, None, [NEAR_I], 30),
]


@pytest.mark.parametrize("name,f,ref,tf,xs,scale", CASES, ids=[c[0] for c in CASES])
def test_values_match_numpy_and_scipy(name, f, ref, tf, xs, scale):
    outs, refs = as_list(f(*[nn.array(x) for x in xs])), as_list(ref(*xs))
    for o, r in zip(outs, refs, strict=True):
        assert o.shape == np.shape(r), name
        assert rel(o.data, r) < _tol(xs, scale), name


WITH_TORCH = [c for c in CASES if c[3] is not None]


@needs_torch
@pytest.mark.parametrize("name,f,ref,tf,xs,scale", WITH_TORCH, ids=[c[0] for c in WITH_TORCH])
def test_gradient_and_hessian_match_torch(name, f, ref, tf, xs, scale):
    tol = _tol(xs, scale)
    ws = weights(as_list(f(*[nn.array(x) for x in xs])))
    assert_grads_match(name, f, tf, xs, ws, tol)
    rest = [nn.array(x) for x in xs[1:]]
    h = nn.hessian(lambda x: _scalar_nn(f, ws)(x, *rest))(nn.array(xs[0]))
    trest = [torch.tensor(x) for x in xs[1:]]
    th = torch.autograd.functional.hessian(lambda x: _scalar_t(tf, ws)(x, *trest), torch.tensor(xs[0]))
    assert rel(h.data, th.numpy()) < tol * 10, f"{name}: hessian"


SMALL = np.array([[2.0, 0.4], [0.3, 1.5]])       # non-symmetric, distinct positive real eigenvalues


@pytest.mark.parametrize("f,x", [(nn.logm, SPD), (nn.logm, NEAR_I), (nn.sqrtm, SPD), (nn.sqrtm, NEAR_I)])
def test_logm_and_sqrtm_gradients_match_finite_differences(f, x):
    check_first_order(scalarize(f, x), [x], 0, tol=1e-7)


@pytest.mark.parametrize("f", [nn.logm, nn.sqrtm])
def test_logm_and_sqrtm_hessians_match_finite_differences(f):
    check_second_order(scalarize(f, SMALL), [SMALL], 0, tol=1e-5)


@needs_torch
def test_eig_values_gradient_and_hessian_match_torch():
    """torch's eig is complex (its eigenvectors carry an arbitrary phase), so the loss reads the
    vectors through |v|^2, which both define the same way; the eigenvalues are real."""
    a = REAL_EIG
    w, v = nn.eig(nn.array(a))
    nw, nv = np.linalg.eig(a)
    assert rel(w.data, nw) < 1e-13 and rel(np.abs(v.data), np.abs(nv)) < 1e-12
    w1, w2 = weights([w, v], seed=7)

    def loss_nn(m):
        ww, vv = nn.eig(m)
        return nn.sum(ww * w1) + nn.sum(vv * vv * w2)

    def loss_t(m):
        ww, vv = TL.eig(m)
        return (ww.real * torch.as_tensor(w1)).sum() + (vv.abs() ** 2 * torch.as_tensor(w2)).sum()

    g = nn.grad(loss_nn)(nn.array(a)).data
    tg = torch.func.grad(loss_t)(torch.tensor(a))
    assert rel(g, tg.numpy()) < 1e-10
    small = SMALL                                   # the hessian (reverse over reverse) by differences
    check_second_order(lambda m: nn.sum(nn.eig(m)[0] * w1[:2]) + nn.sum(nn.eig(m)[1] ** 2 * w2[:2, :2]),
                       [small], 0, tol=1e-5)
    gv = nn.grad(lambda m: nn.sum(nn.eigvals(m) * w1))(nn.array(a)).data
    assert rel(gv, torch.func.grad(lambda m: (TL.eigvals(m).real * torch.as_tensor(w1)).sum())(
        torch.tensor(a)).numpy()) < 1e-10


def test_lu_forms_match_scipy():
    a = normal(4, 4)
    pl, u = nn.lu(nn.array(a), permute_l=True)
    spl, su = sl.lu(a, permute_l=True)
    assert np.allclose(pl.data, spl, rtol=1e-13) and np.allclose(u.data, su, rtol=1e-13)
    p, low, up = nn.lu(nn.array(a), p_indices=True)
    sp, slow, sup = sl.lu(a, p_indices=True)
    assert p.data.tolist() == sp.tolist() and np.allclose(low.data, slow) and np.allclose(up.data, sup)
    tall = normal(5, 3)
    for got, want in zip(nn.lu(nn.array(tall)), sl.lu(tall), strict=True):
        assert np.allclose(got.data, want, rtol=1e-13)


def test_matrix_rank_matches_numpy():
    cases = [np.eye(3), np.array([[1.0, 2], [2, 4]]), np.zeros((2, 3)), normal(4, 2) @ normal(2, 5),
             np.stack([np.eye(3), np.diag([1.0, 1e-20, 1.0])])]
    for a in cases:
        got = nn.matrix_rank(nn.array(a))
        want = np.linalg.matrix_rank(a)
        assert np.array_equal(getattr(got, "data", got), want)
    assert nn.matrix_rank(nn.array(np.diag([1.0, 1e-3])), tol=1e-2) == np.linalg.matrix_rank(
        np.diag([1.0, 1e-3]), tol=1e-2) == 1
    assert nn.matrix_rank(nn.array(np.diag([1.0, 1e-3])), rtol=1e-4) == 2


def test_refusals_say_what_to_do():
    with pytest.raises(ApsiError, match="eigenvalue 0 is complex"):
        nn.eig(nn.array([[0.0, -1.0], [1.0, 0.0]]))
    with pytest.raises(ApsiError, match="logm: the matrix has a negative real eigenvalue"):
        nn.logm(nn.array([[-1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ApsiError, match="sqrtm: the matrix has a negative real eigenvalue"):
        nn.sqrtm(nn.array([[-4.0, 0.0], [0.0, 1.0]]))
    singular = nn.array([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ApsiError, match="logm: the matrix is singular"):
        nn.logm(singular)
    assert np.allclose(nn.sqrtm(singular).data, [[1.0, 0.0], [0.0, 0.0]])    # the value exists
    with pytest.raises(ApsiError, match="sqrtm: the derivative is unbounded at a singular matrix"):
        nn.grad(lambda m: nn.sum(nn.sqrtm(m)))(singular)
    with pytest.raises(ApsiError, match="solve_triangular: the matrix is singular"):
        nn.solve_triangular(nn.array([[1.0, 2.0], [0.0, 0.0]]), nn.array([1.0, 1.0]))
    with pytest.raises(ApsiError, match="3-vectors"):
        nn.cross(nn.array([1.0, 2.0]), nn.array([3.0, 4.0]))
    with pytest.raises(ApsiError, match="do not chain"):
        nn.multi_dot([nn.ones(2, 3), nn.ones(2, 3)])
    with pytest.raises(ApsiError, match="eigenvalues 0 and 1 are equal"):
        nn.grad(lambda m: nn.sum(nn.eig(m)[1]))(nn.eye(2))
    with pytest.raises(ApsiError, match="lu: the gradient of L and U is computed for a square"):
        nn.grad(lambda m: nn.sum(nn.lu(m)[1]))(nn.array(normal(3, 2)))


# --- the same functions on torch tensors (an Apsi loss under fit(backend="torch")) --------------------

@pytest.fixture
def torch_installed():
    pytest.importorskip("torch")
    from apsi_layers.backends.torch import nn_dispatch

    nn_dispatch.install()


@pytest.mark.parametrize("name,f,ref,tf,xs,scale", CASES, ids=[c[0] for c in CASES])
def test_torch_tensors_give_the_values_and_gradients(torch_installed, name, f, ref, tf, xs, scale):
    tol = _tol(xs, scale)
    txs = [torch.tensor(x, requires_grad=True) for x in xs]
    touts = as_list(f(*txs))
    refs = as_list(ref(*xs))
    for t, r in zip(touts, refs, strict=True):
        assert isinstance(t, torch.Tensor) and rel(t.detach().numpy(), r) < tol, name
    ws = weights(touts)
    grads = nn.grad(_scalar_nn(f, ws), argnums=tuple(range(len(xs))))(*[nn.array(x) for x in xs])
    grads = grads if len(xs) > 1 else (grads,)
    tgrads = torch.autograd.grad(_scalar_t(f, ws)(*txs), txs)
    for g, tg in zip(grads, tgrads, strict=True):
        assert rel(tg.numpy(), g.data) < tol, name


def test_torch_versions_of_rank_lu_forms_and_eig(torch_installed):
    a = torch.tensor(normal(4, 4))
    assert nn.matrix_rank(a) == 4
    p, low, up = nn.lu(a, p_indices=True)
    assert torch.allclose(low[p] @ up, a)
    w, v = nn.eig(torch.tensor(REAL_EIG))
    assert rel(w.numpy(), np.linalg.eig(REAL_EIG)[0]) < 1e-12
    with pytest.raises(ApsiError, match="complex"):
        nn.eigvals(torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64))
    # logm and sqrtm (scipy values, the block-formula derivative) differentiate twice on torch too
    # (nondet_tol: SciPy's logm/sqrtm call a threaded BLAS whose sums may round differently from one
    # call to the next under load, ~1e-16; gradgradcheck's default demands equal bits twice and flaked)
    small = torch.tensor(SMALL, requires_grad=True)
    assert torch.autograd.gradgradcheck(nn.logm, (small,), nondet_tol=1e-12)
    assert torch.autograd.gradgradcheck(nn.sqrtm, (small,), nondet_tol=1e-12)
    singular = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    with pytest.raises(ApsiError, match="sqrtm: the derivative is unbounded"):
        nn.sqrtm(singular).sum().backward()


def test_every_function_has_a_torch_version_and_an_export(torch_installed):
    from apsi_layers.apsi_modules import nn_module
    from apsi_layers.nn.autograd import foreign
    from apsi_layers.nn.numlib import linalg_more

    assert len(linalg_more.__all__) == 14
    assert [n for n in linalg_more.__all__ if n not in foreign.IMPLS] == []
    assert [n for n in linalg_more.__all__ if n not in nn_module()] == []


def test_every_rule_is_reached_by_a_case():
    from apsi_layers.nn.autograd.tape import STATE
    from apsi_layers.nn.autograd.vjps import rule_name
    from apsi_layers.nn.numlib.linalg_more_vjps import MORE_RULES

    seen = set()

    def record(f, *xs):
        outs = as_list(f(*xs))
        seen.update(rule_name(e[0]) for e in STATE.tape.entries if e is not None)
        return sum(nn.sum(o) for o in outs)

    for _, f, _, _, xs, _ in CASES + [("eig", nn.eig, None, None, [REAL_EIG], 1)]:
        nn.grad(lambda *a, f=f: record(f, *a))(*[nn.array(x) for x in xs])
    assert set(MORE_RULES) <= seen
