"""Linear algebra under nn against torch.autograd in float64: each value, each gradient and the
hessian (a second derivative through the rule itself) of a random scalarization sum(f(x) * W).

Tolerance: 1e-10 relative, times the condition number of the input matrix where the function's
sensitivity grows with it (inverses, solves, decompositions)."""

import numpy as np
import pytest

from apsi_layers import nn

from .linalg_compare import as_list, assert_grads_match, rel, weights
from .linalg_compare import scalar_nn as _scalar_nn
from .linalg_compare import scalar_t as _scalar_t
from .linalg_compare import tol_for as _tol

torch = pytest.importorskip("torch")   # optional: the whole file compares against it

TL = torch.linalg
RNG = np.random.default_rng(19)


def normal(*shape):
    return RNG.standard_normal(shape)


def spd(n, batch=()):
    x = RNG.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def sym_nn(x):
    return (x + nn.transpose(x, list(range(x.ndim - 2)) + [x.ndim - 1, x.ndim - 2])) * 0.5


def sym_t(x):
    return (x + x.transpose(-1, -2)) * 0.5


def svd_t(a):
    """torch's reduced SVD with each singular pair's sign chosen as NumPy's LAPACK call chose it
    (a sign is arbitrary; the flip is a constant, so derivatives are unaffected)."""
    u, s, vh = TL.svd(a, full_matrices=False)
    nu = np.linalg.svd(a.detach().numpy(), full_matrices=False)[0]
    sign = torch.as_tensor(np.sign(np.sum(nu * u.detach().numpy(), axis=-2)))
    return u * sign[..., None, :], s, vh * sign[..., :, None]


def eigh_t(a):
    """torch's eigh with each eigenvector's sign chosen as NumPy's LAPACK call chose it."""
    w, v = TL.eigh(a)
    nv = np.linalg.eigh(a.detach().numpy())[1]
    sign = torch.as_tensor(np.sign(np.sum(nv * v.detach().numpy(), axis=-2)))
    return w, v * sign[..., None, :]


# (name, nn function, torch function, inputs, scale of the tolerance)
CASES = [
    ("dot_vec", nn.dot, torch.dot, [normal(4), normal(4)], 1),
    ("dot_mat", nn.dot, torch.matmul, [normal(3, 4), normal(4, 2)], 1),
    ("dot_nd_vec", nn.dot, torch.matmul, [normal(2, 3, 4), normal(4)], 1),
    ("dot_nd_nd", nn.dot, lambda a, b: torch.tensordot(a, b, dims=([2], [1])),
     [normal(2, 3, 4), normal(2, 4, 3)], 1),
    ("vdot", nn.vdot, lambda a, b: torch.vdot(a.reshape(-1), b.reshape(-1)), [normal(2, 3), normal(3, 2)], 1),
    ("inner", nn.inner, torch.inner, [normal(2, 3), normal(4, 3)], 1),
    ("outer", nn.outer, lambda a, b: torch.outer(a.reshape(-1), b.reshape(-1)), [normal(2, 2), normal(3)], 1),
    ("tensordot2", nn.tensordot, lambda a, b: torch.tensordot(a, b, dims=2),
     [normal(2, 3, 4), normal(3, 4, 2)], 1),
    ("tensordot_pairs", lambda a, b: nn.tensordot(a, b, axes=[[0, 2], [2, 0]]),
     lambda a, b: torch.tensordot(a, b, dims=([0, 2], [2, 0])), [normal(2, 3, 4), normal(4, 2, 2)], 1),
    ("kron", nn.kron, torch.kron, [normal(2, 3), normal(3, 2)], 1),
    ("kron_mixed_ndim", nn.kron, torch.kron, [normal(2), normal(2, 3)], 1),
    ("trace", nn.trace, torch.trace, [normal(3, 3)], 1),
    ("trace_offset_axes", lambda a: nn.trace(a, 1, 2, 0),
     lambda a: torch.diagonal(a, 1, 2, 0).sum(-1), [normal(3, 2, 4)], 1),
    ("diag_vec", lambda v: nn.diag(v, 1), lambda v: torch.diag(v, 1), [normal(3)], 1),
    ("diag_mat", lambda m: nn.diag(m, -1), lambda m: torch.diag(m, -1), [normal(3, 4)], 1),
    ("tril", lambda m: nn.tril(m, -1), lambda m: torch.tril(m, -1), [normal(2, 3, 4)], 1),
    ("triu", lambda m: nn.triu(m, 1), lambda m: torch.triu(m, 1), [normal(3, 4)], 1),
    ("einsum_matmul", lambda a, b: nn.einsum("ij,jk->ik", a, b),
     lambda a, b: torch.einsum("ij,jk->ik", a, b), [normal(2, 3), normal(3, 4)], 1),
    ("einsum_diag", lambda a: nn.einsum("ii->i", a), lambda a: torch.einsum("ii->i", a), [normal(3, 3)], 1),
    ("einsum_repeat_sum", lambda a, b: nn.einsum("iij,j", a, b),
     lambda a, b: torch.einsum("iij,j", a, b), [normal(3, 3, 2), normal(2)], 1),
    ("einsum_row_sum", lambda a: nn.einsum("ij->i", a), lambda a: torch.einsum("ij->i", a),
     [normal(2, 3)], 1),
    ("einsum_ellipsis", lambda a, b: nn.einsum("...ij,...jk", a, b),
     lambda a, b: torch.einsum("...ij,...jk", a, b), [normal(2, 2, 3), normal(2, 3, 2)], 1),
    ("einsum_three", lambda a, b, c: nn.einsum("ij,jk,kl->il", a, b, c),
     lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c), [normal(2, 3), normal(3, 2), normal(2, 2)], 1),
    ("einsum_implicit_order", lambda a, b: nn.einsum("ba,Ac", a, b),
     lambda a, b: torch.einsum("ba,Ac->Aabc", a, b), [normal(2, 3), normal(2, 2)], 1),
    ("norm_default", nn.norm, lambda x: TL.norm(x), [normal(2, 3)], 1),
    ("norm_vec_1", lambda x: nn.norm(x, 1, axis=1), lambda x: TL.vector_norm(x, 1, dim=1), [normal(2, 3)], 1),
    ("norm_vec_3", lambda x: nn.norm(x, 3, axis=0, keepdims=True),
     lambda x: TL.vector_norm(x, 3, dim=0, keepdim=True), [normal(2, 3)], 1),
    ("norm_vec_inf", lambda x: nn.norm(x, np.inf), lambda x: TL.vector_norm(x, float("inf")), [normal(4)], 1),
    ("norm_vec_2_axis", lambda x: nn.norm(x, axis=-1), lambda x: TL.vector_norm(x, dim=-1),
     [normal(2, 3)], 1),
    ("norm_fro", lambda x: nn.norm(x, "fro"), lambda x: TL.matrix_norm(x, "fro"), [normal(3, 2)], 1),
    ("norm_nuc", lambda x: nn.norm(x, "nuc", axis=(1, 2)), lambda x: TL.matrix_norm(x, "nuc"),
     [normal(2, 3, 2)], 10),
    ("norm_mat_1", lambda x: nn.norm(x, 1), lambda x: TL.matrix_norm(x, 1), [normal(3, 3)], 1),
    ("norm_mat_inf_axes", lambda x: nn.norm(x, -np.inf, axis=(2, 0)),
     lambda x: TL.matrix_norm(x, -float("inf"), dim=(2, 0)), [normal(3, 2, 4)], 1),
    ("norm_mat_2", lambda x: nn.norm(x, 2), lambda x: TL.matrix_norm(x, 2), [normal(3, 3)], 10),
    ("norm_mat_m2_keep", lambda x: nn.norm(x, -2, axis=(0, 1), keepdims=True),
     lambda x: TL.matrix_norm(x, -2, dim=(0, 1), keepdim=True), [normal(3, 2)], 10),
    ("inv", nn.inv, TL.inv, [spd(3)], 30),
    ("inv_batched", nn.inv, TL.inv, [normal(2, 3, 3) + 3 * np.eye(3)], 30),
    ("pinv_tall", nn.pinv, TL.pinv, [normal(4, 2)], 30),
    ("pinv_wide", nn.pinv, TL.pinv, [normal(2, 3)], 30),
    ("solve_mat", nn.solve, TL.solve, [normal(3, 3) + 3 * np.eye(3), normal(3, 2)], 30),
    ("solve_vec_batched", nn.solve, lambda a, b: TL.solve(a, b.expand(2, 3)),
     [normal(2, 3, 3) + 3 * np.eye(3), normal(3)], 30),
    ("lstsq_x", lambda a, b: nn.lstsq(a, b)[0], lambda a, b: TL.lstsq(a, b).solution,
     [normal(5, 3), normal(5, 2)], 30),
    ("lstsq_residuals", lambda a, b: nn.lstsq(a, b)[1],
     lambda a, b: ((a @ TL.pinv(a) @ b - b) ** 2).sum(0).reshape(1), [normal(5, 3), normal(5)], 30),
    ("det", nn.det, TL.det, [normal(3, 3)], 30),
    ("det_batched", nn.det, TL.det, [normal(2, 3, 3)], 30),
    ("slogdet", lambda a: nn.slogdet(a)[1], lambda a: TL.slogdet(a)[1], [normal(3, 3)], 30),
    ("cholesky", lambda x: nn.cholesky(sym_nn(x)), lambda x: TL.cholesky(sym_t(x)), [spd(3)], 30),
    ("qr_square", nn.qr, TL.qr, [normal(3, 3)], 30),
    ("qr_tall_batched", nn.qr, TL.qr, [normal(2, 4, 3)], 30),
    ("qr_wide", nn.qr, TL.qr, [normal(2, 4)], 30),
    ("qr_wide_batched", nn.qr, TL.qr, [normal(2, 2, 3)], 30),
    ("qr_r", lambda a: nn.qr(a, mode="r"), lambda a: TL.qr(a)[1], [normal(4, 2)], 30),
    ("eigh", lambda x: nn.eigh(sym_nn(x)), lambda x: eigh_t(sym_t(x)), [normal(3, 3)], 100),
    ("eigh_batched", lambda x: nn.eigh(sym_nn(x)), lambda x: eigh_t(sym_t(x)), [normal(2, 3, 3)], 100),
    ("eigvalsh", lambda x: nn.eigvalsh(sym_nn(x)), lambda x: TL.eigvalsh(sym_t(x)), [normal(3, 3)], 10),
    ("svd_square", lambda a: nn.svd(a), svd_t, [normal(3, 3)], 100),
    ("svd_tall", lambda a: nn.svd(a, full_matrices=False), svd_t, [normal(4, 2)], 100),
    ("svd_wide_batched", lambda a: nn.svd(a, full_matrices=False), svd_t, [normal(2, 2, 3)], 100),
    ("svd_values", lambda a: nn.svd(a, compute_uv=False), TL.svdvals, [normal(3, 4)], 10),
    # full_matrices=true: S and Vh of a tall a (U's extra columns are not unique; their gradient
    # is refused, tests/nn/test_numeric_edges.py)
    ("svd_full_tall_s_vh", lambda a: nn.svd(a)[1:], lambda a: svd_t(a)[1:], [normal(4, 2)], 100),
    ("matrix_power_3", lambda a: nn.matrix_power(a, 3), lambda a: TL.matrix_power(a, 3), [normal(3, 3)], 1),
    ("matrix_power_m2", lambda a: nn.matrix_power(a, -2), lambda a: TL.matrix_power(a, -2),
     [normal(3, 3) + 3 * np.eye(3)], 30),
    ("cond", nn.cond, TL.cond, [normal(3, 3)], 100),
    # torch.linalg.cond(a, p) for p != 2 modifies a saved tensor in place; its formula instead
    ("cond_fro", lambda a: nn.cond(a, "fro"), lambda a: TL.matrix_norm(a, "fro") * TL.matrix_norm(
        TL.inv(a), "fro"), [normal(3, 3)], 100),
    ("cond_1", lambda a: nn.cond(a, 1), lambda a: TL.matrix_norm(a, 1) * TL.matrix_norm(TL.inv(a), 1),
     [normal(3, 3) + 3 * np.eye(3)], 100),
]


@pytest.mark.parametrize("name,f,tf,xs,scale", CASES, ids=[c[0] for c in CASES])
def test_value_and_gradient_match_torch(name, f, tf, xs, scale):
    tol = _tol(xs, scale)
    outs = as_list(f(*[nn.array(x) for x in xs]))
    touts = as_list(tf(*[torch.tensor(x) for x in xs]))
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts, strict=True):
        assert o.shape == tuple(t.shape), name
        assert rel(o.data, t.detach().numpy()) < tol, name
    assert_grads_match(name, f, tf, xs, weights(outs), tol)


@pytest.mark.parametrize("name,f,tf,xs,scale", CASES, ids=[c[0] for c in CASES])
def test_second_derivative_matches_torch(name, f, tf, xs, scale):
    tol = _tol(xs, scale) * 10
    ws = weights(as_list(f(*[nn.array(x) for x in xs])))
    rest = [nn.array(x) for x in xs[1:]]
    h = nn.hessian(lambda x: _scalar_nn(f, ws)(x, *rest))(nn.array(xs[0]))
    trest = [torch.tensor(x) for x in xs[1:]]
    th = torch.autograd.functional.hessian(lambda x: _scalar_t(tf, ws)(x, *trest), torch.tensor(xs[0]))
    assert rel(h.data, th.numpy()) < tol, name


def test_every_linalg_rule_is_exercised():
    """Each rule of linalg_vjps.py is reached by a case above (directly or through a composition)."""
    from apsi_layers.nn.autograd.tape import STATE
    from apsi_layers.nn.autograd.vjps import rule_name
    from apsi_layers.nn.numlib.linalg_vjps import LINALG_RULES

    seen = set()
    for _, f, _, xs, _ in CASES:
        with_tape = nn.grad(lambda *a, f=f: _record(f, a, seen, STATE, rule_name), argnums=0)
        with_tape(*[nn.array(x) for x in xs])
    assert set(LINALG_RULES) <= seen


def _record(f, args, seen, state, rule_name):
    outs = as_list(f(*args))
    seen.update(rule_name(e[0]) for e in state.tape.entries if e is not None)
    return sum(nn.sum(o) for o in outs)
