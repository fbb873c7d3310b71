"""Linear algebra's edges: einsum's subscripts checked strictly (they are user input), a clear
error instead of NaN where a derivative does not exist, and messages that say what to do."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apsi_lang.errors import ApsiError
from apsi_layers import nn


def raises(match, fn, *args, **kw):
    with pytest.raises(ApsiError, match=match):
        fn(*args, **kw)


A = nn.array(np.arange(6.0).reshape(2, 3))
S = nn.array(np.eye(3) * 2 + 0.1)


@pytest.mark.parametrize("subs,ops,match", [
    ("ij,jk->ik%", [A, A], r"character '%' at position 9"),
    ("ij,jk", [A], r"names 2 operand\(s\) but 1 tensor"),
    ("ijk", [A], r"operand 0 has shape \(2, 3\) \(2 axes\) but 'ijk'"),
    ("ij,ij->i", [A, nn.array(np.ones((3, 2)))], r"letter 'i' .* has size 2 in operand 0 but 3 in operand 1"),
    ("ij->k", [A], r"output letter 'k' .* is in no operand"),
    ("ij->ii", [A], r"names 'i' twice"),
    ("i.j", [A], r"a '\.' may only appear as one '\.\.\.'"),
    ("....", [A], r"a '\.' may only appear"),
    ("ij->i->j", [A], r"stray '-' or '>'"),
    ("i-j", [A], r"stray '-' or '>'"),
    ("ij->...", [A], r"'\.\.\.' in the output but in no operand"),
    ("...i,...i", [nn.ones(2, 3), nn.ones(4, 3)], r"'\.\.\.' .* \(2,\), \(4,\), which do not broadcast"),
    ("ij\n", [A], r"character '\\n'"),
])
def test_einsum_rejects_bad_subscripts_with_a_clear_message(subs, ops, match):
    raises(match, nn.einsum, subs, *ops)


def test_einsum_other_misuse():
    raises("subscripts string", nn.einsum, 3, A)
    raises("at least one tensor", nn.einsum, "ij")
    raises("at most 32 operands", nn.einsum, ",".join(["i"] * 33), *[nn.ones(2)] * 33)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ijk.,->A ", max_size=12),
       st.lists(st.lists(st.integers(1, 3), max_size=3), min_size=1, max_size=3))
def test_einsum_fuzz_gives_numpys_answer_or_an_apsi_error(subs, shapes):
    """Whatever the string: NumPy's value or an ApsiError, never another exception or a crash."""
    arrays = [np.arange(float(np.prod(s))).reshape(s) for s in shapes]
    try:
        got = nn.einsum(subs, *[nn.array(a) for a in arrays])
    except ApsiError:
        return
    assert np.allclose(got.data, np.einsum(subs, *arrays))


def test_repeated_eigenvalues_stop_the_eigenvector_gradient_but_not_the_eigenvalues():
    a = nn.array(np.diag([1.0, 1.0, 2.0]))
    raises(r"eigh: eigenvalues 0 and 1 are equal .*eigvalsh", nn.grad(lambda m: nn.sum(nn.eigh(m)[1])), a)
    # the sum of the eigenvalues is the trace: its gradient is the identity, repeats or not
    g = nn.grad(lambda m: nn.sum(nn.eigvalsh(m)))(a)
    assert np.allclose(g.data, np.eye(3), atol=1e-15)


def test_repeated_singular_values_stop_the_vector_gradient_but_not_the_values():
    a = nn.array(np.eye(3))
    raises(r"svd: singular values 0 and 1 are equal", nn.grad(lambda m: nn.sum(nn.svd(m)[0])), a)
    g = nn.grad(lambda m: nn.norm(m, "nuc"))(a)          # the nuclear norm at I: gradient U V^T = I
    assert np.allclose(g.data, np.eye(3), atol=1e-15)


def test_singular_matrices():
    z = nn.array([[1.0, 2.0], [2.0, 4.0]])
    raises("inv: the matrix is singular .* use pinv or lstsq", nn.inv, z)
    raises("solve: the matrix is singular", nn.solve, z, [1.0, 2.0])
    assert abs(nn.det(z).item()) < 1e-15
    assert np.allclose(nn.grad(nn.det)(z).data, [[4.0, -2.0], [-2.0, 1.0]])     # the cofactors
    raises("returned -inf; the first non-finite value came from op 'logabsdet'",
           nn.grad(lambda m: nn.slogdet(m)[1]), z)
    raises("slogdet: the gradient .* singular", nn.jacobian(lambda m: nn.slogdet(m)[1]), z)
    raises("qr: the gradient is undefined here: R has a zero", nn.grad(lambda m: nn.sum(nn.qr(m)[0])), z)
    sign, logdet = nn.slogdet(z)
    assert sign.item() == 0.0 and logdet.item() == -np.inf


def test_decomposition_messages():
    raises("cholesky: the matrix is not positive definite", nn.cholesky, nn.array([[1.0, 2.0], [2.0, 1.0]]))
    raises(r"inv: a must be square .* shape \(2, 3\)", nn.inv, A)
    raises(r"det: a must be a matrix \(2 axes\), or a stack of them, but it has shape \(3,\)",
           nn.det, nn.ones(3))
    raises("eigh: a holds NaN or inf", nn.eigh, nn.array([[np.nan, 0.0], [0.0, 1.0]]))
    raises(r"solve: a is \(3, 3\) so b needs 3 rows", nn.solve, S, nn.ones(2))
    raises("qr: mode must be", nn.qr, A, mode="full")
    raises(r"qr: the gradient of mode 'complete' is undefined for a 3x2 matrix",
           nn.grad(lambda m: nn.sum(nn.qr(m, mode="complete")[1])), nn.transpose(A))
    raises(r"lstsq: a has 2 rows but b has shape \(3,\)", nn.lstsq, A, nn.ones(3))


def test_norm_and_friends_messages():
    raises("norm: ord='fro' is not a vector norm", nn.norm, nn.ones(3), "fro")
    raises("norm: ord=3 is not a matrix norm", nn.norm, nn.ones((2, 2)), 3)
    raises(r"norm: ord=1 needs axis for a tensor of shape \(2, 2, 2\)", nn.norm, nn.ones((2, 2, 2)), 1)
    raises(r"norm: axis \[0, 0\] names one axis twice", nn.norm, A, None, [0, 0])
    raises(r"tensordot: axis 1 of a \(size 3\) and axis 0 of b \(size 2\)", nn.tensordot, A, A, [[1], [0]])
    raises("vdot: a has 6 elements and b 3", nn.vdot, A, nn.ones(3))
    raises("diag: v must be a vector or a matrix", nn.diag, nn.ones((2, 2, 2)))
    raises("matrix_power: n must be an int", nn.matrix_power, S, 1.5)
    raises("pinv: rcond must be none or a number >= 0", nn.pinv, S, "abc")
    raises("lstsq: rcond must be none or a number >= 0", nn.lstsq, S, nn.ones(3), -1.0)


def test_norm_gradient_at_zero_is_zero_not_nan():
    g = nn.grad(lambda x: nn.norm(x))(nn.zeros(3))
    assert g.data.tolist() == [0.0, 0.0, 0.0]


def test_full_matrices_svd_values_and_gradients():
    """NumPy's default full_matrices=true: the extra columns are constants, the rest differentiable."""
    a = np.random.default_rng(0).standard_normal((4, 2))
    u, s, vh = nn.svd(nn.array(a))
    nu, ns, nvh = np.linalg.svd(a)
    assert u.shape == (4, 4) and np.allclose(np.abs(u.data), np.abs(nu)) and np.allclose(s.data, ns)
    g = nn.grad(lambda m: nn.sum(nn.svd(m)[0][:, :2] ** 2 * nn.svd(m)[1]))(nn.array(a))
    g2 = nn.grad(lambda m: nn.sum(nn.svd(m, full_matrices=False)[0] ** 2 * nn.svd(m)[1]))(nn.array(a))
    assert np.allclose(g.data, g2.data, rtol=1e-12)


def test_lstsq_matches_numpy():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    x, res, rank, s = nn.lstsq(nn.array(a), nn.array(b))
    nx, nres, nrank, ns = np.linalg.lstsq(a, b)
    assert np.allclose(x.data, nx, rtol=1e-12) and np.allclose(res.data, nres, rtol=1e-12)
    assert rank == nrank and np.allclose(s.data, ns)
    low = np.c_[a[:, :2], a[:, :1]]                     # rank 2: no residuals, as NumPy
    x, res, rank, _ = nn.lstsq(nn.array(low), nn.array(b))
    assert rank == 2 and res.shape == (0,) and np.allclose(x.data, np.linalg.lstsq(low, b)[0], rtol=1e-10)


def test_numpy_results_for_the_plain_functions():
    rng = np.random.default_rng(5)
    m = rng.standard_normal((3, 3))
    for name, args in [("diag", (m, 2)), ("diag", (m[0], -1)), ("trace", (m, -1)), ("tril", (m, -1)),
                       ("kron", (m, m[:2])), ("inner", (m, m)), ("outer", (m, m[0])), ("dot", (m, m)),
                       ("vdot", (m, m)), ("matrix_power", (m, 0)), ("matrix_power", (m, 5))]:
        got = getattr(nn, name)(*[nn.array(a) if isinstance(a, np.ndarray) else a for a in args])
        want = getattr(np, name) if hasattr(np, name) else getattr(np.linalg, name)
        assert np.allclose(got.data, want(*args), rtol=1e-12), name
    for o in [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"]:
        assert np.isclose(nn.norm(nn.array(m), o).item(), np.linalg.norm(m, o), rtol=1e-12), o
    for o in [None, 0, 0.5, 3, np.inf, -np.inf, 1, -1]:
        assert np.allclose(nn.norm(nn.array(m), o, axis=1).data, np.linalg.norm(m, o, axis=1)), o
    for p in [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"]:
        assert np.isclose(nn.cond(nn.array(m), p).item(), np.linalg.cond(m, p), rtol=1e-10), p


def test_eigh_reads_one_triangle_as_numpy_does():
    a = np.random.default_rng(6).standard_normal((2, 3, 3))          # not symmetric
    for uplo in "LU":
        w, v = nn.eigh(nn.array(a), uplo)
        nw, nv = np.linalg.eigh(a, uplo)
        assert np.allclose(w.data, nw, rtol=1e-13) and np.allclose(np.abs(v.data), np.abs(nv), rtol=1e-12)
        assert np.allclose(nn.eigvalsh(nn.array(a), UPLO=uplo).data, np.linalg.eigvalsh(a, uplo))


@pytest.mark.torch
def test_the_torch_comparison_catches_a_wrong_rule(monkeypatch):
    """The checker must be able to fail: give inv a rule with the wrong sign."""
    pytest.importorskip("torch")
    from apsi_layers.nn.autograd import vjps

    from .test_linalg_torch import CASES, test_value_and_gradient_match_torch

    case = next(c for c in CASES if c[0] == "inv")
    monkeypatch.setitem(vjps.RULES, "inv", (lambda xp, g, ans, a: xp.matmul(ans, g),))
    with pytest.raises(AssertionError, match="gradient of argument 0"):
        test_value_and_gradient_match_torch(*case)
