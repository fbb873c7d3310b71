"""The numeric library at the edges (issue 35, "wrong or missing results"), as users run it: one
.apsi program through `python -m apsi` per topic, checked against references computed here with
torch.autograd float64, NumPy finite differences and scikit-learn; never against nn's other backend."""

import json

import numpy as np
import pytest

from .test_linalg_apsi import run


def run_apsi(tmp_path, source, name="edges.apsi"):
    return run(tmp_path, source, name)


def printed(r):
    """Each printed line as JSON (Apsi prints lists and numbers as JSON does, nan as nan)."""
    assert r.returncode == 0, r.stderr
    return [json.loads(line.replace("nan", "NaN")) for line in r.stdout.splitlines()]


def no_traceback(stderr):
    return 'File "' not in stderr and ".py" not in stderr


def fd_hessian(f, x, h=1e-4):
    """Central second differences of a NumPy function (exact to h^2 for smooth f)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    out = np.zeros((n, n))

    def at(i, j, di, dj):
        y = x.copy().reshape(-1)
        y[i] += di
        y[j] += dj
        return f(y.reshape(x.shape))

    for i in range(n):
        for j in range(n):
            out[i, j] = (at(i, j, h, h) - at(i, j, h, -h) - at(i, j, -h, h) + at(i, j, -h, -h)) / (4 * h * h)
    return out.reshape(x.shape + x.shape)


# --- an int variable is promoted, never a silent zero ------------------------------------------------

INT_GRADS = """\
use nn
let v = array([3, 4], dtype="int")
let m = array([[2, 1], [1, 3]], dtype="int")
print(grad(fn(a) => norm(a))(v).tolist())
print(grad(fn(a) => sum(float64(a) ** 2))(v).tolist())
print(grad(fn(a) => sum(astype(a, "float64") ** 3))(v).tolist())
print(grad(fn(a) => det(a))(m).tolist())
print(grad(fn(a) => dot(a, a))(v).tolist())
print(grad(fn(a) => trace(a @ a))(m).tolist())
print(grad(fn(a) => sum(kron(a, a)))(m).tolist())
print(grad(fn(a) => sum(inv(a)))(m).tolist())
"""


def test_int_variables_get_the_gradient_of_their_values(tmp_path):
    torch = pytest.importorskip("torch")
    got = printed(run_apsi(tmp_path, INT_GRADS))
    v = torch.tensor([3.0, 4.0], dtype=torch.float64)
    m = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    g = torch.func.grad
    want = [g(torch.linalg.norm)(v), g(lambda a: (a ** 2).sum())(v), g(lambda a: (a ** 3).sum())(v),
            g(torch.linalg.det)(m), g(lambda a: a @ a)(v), g(lambda a: torch.trace(a @ a))(m),
            g(lambda a: torch.kron(a, a).sum())(m), g(lambda a: torch.linalg.inv(a).sum())(m)]
    assert got[0] == [0.6, 0.8]
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert np.allclose(a, b.numpy(), rtol=1e-13, atol=1e-15), (i, a, b)


# --- functions of eigen/singular values alone at repeated values -----------------------------------

SPECTRAL = """\
use nn
print(hessian(fn(a) => sum(eigvalsh(a) ** 2))(2.0 * eye(2)).tolist())
print(hessian(fn(a) => sum(svd(a, compute_uv=false) ** 2))(2.0 * eye(2)).tolist())
let d = array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
print(hessian(fn(a) => sum(exp(eigvalsh(a))))(d).tolist())
print(hessian(fn(a) => sum(exp(svd(a, compute_uv=false))))(d).tolist())
let tall = array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
print(hessian(fn(a) => sum(svd(a, compute_uv=false) ** 2))(tall).tolist())
let b = array([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
print(hessian(fn(a) => sum(svd(a, compute_uv=false) ** 3))(b).tolist())
print(hessian(fn(a) => norm(a, "nuc"))(array([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]])).tolist())
print(hessian(fn(a) => sum(svd(a)[1] ** 2))(2.0 * eye(2)).tolist())
print(hessian(fn(a) => sum(eigh(a)[0] ** 2))(2.0 * eye(2)).tolist())
"""


def test_hessians_of_spectral_functions_at_repeated_values_match_finite_differences(tmp_path):
    got = printed(run_apsi(tmp_path, SPECTRAL))
    eigvalsh_low = np.linalg.eigvalsh          # reads the lower triangle, as nn's (NumPy's UPLO="L")
    svals = np.linalg.svd
    d = np.diag([1.0, 1.0, 2.0])
    refs = [
        fd_hessian(lambda a: np.sum(eigvalsh_low(a) ** 2), 2 * np.eye(2)),
        fd_hessian(lambda a: np.sum(svals(a, compute_uv=False) ** 2), 2 * np.eye(2)),
        fd_hessian(lambda a: np.sum(np.exp(eigvalsh_low(a))), d),
        fd_hessian(lambda a: np.sum(np.exp(svals(a, compute_uv=False))), d),
        fd_hessian(lambda a: np.sum(svals(a, compute_uv=False) ** 2), np.eye(3, 2)),
        fd_hessian(lambda a: np.sum(svals(a, compute_uv=False) ** 3), np.diag([3.0, 1.0, 0.0])),
        fd_hessian(lambda a: np.sum(svals(a, compute_uv=False)), np.array([[2.0, 0], [0, 2], [0, 0]])),
        fd_hessian(lambda a: np.sum(svals(a)[1] ** 2), 2 * np.eye(2)),           # S of the full svd
        fd_hessian(lambda a: np.sum(np.linalg.eigh(a)[0] ** 2), 2 * np.eye(2)),   # eigh's values
    ]
    # sum(eigvalsh(a)**2) reads a's lower triangle: |tril|^2 + |strict tril|^2, whose hessian is 2
    # on the diagonal entries and 4 on the strictly lower ones (the "2I" for symmetric a)
    assert np.allclose(np.reshape(got[0], (4, 4)), np.diag([2.0, 0.0, 4.0, 2.0]))
    assert np.allclose(np.reshape(got[1], (4, 4)), 2 * np.eye(4))
    for i, (a, ref) in enumerate(zip(got, refs, strict=True)):
        # case 5 has a singular value 0: |s|^3's second difference there is off by about h
        assert np.allclose(a, ref, rtol=1e-6, atol=1e-3 if i == 5 else 1e-6), i


def test_spectral_hessians_match_torch_at_distinct_values(tmp_path):
    torch = pytest.importorskip("torch")
    a = np.array([[2.0, 0.3, -0.1], [0.3, 1.0, 0.4], [-0.1, 0.4, -1.0]])
    r = run_apsi(tmp_path, "use nn\nlet a = array(" + json.dumps(a.tolist()) + ")\n"
                 "print(hessian(fn(m) => sum(sin(eigvalsh((m + transpose(m)) / 2))))(a).tolist())\n"
                 "print(hessian(fn(m) => sum(svd(m, compute_uv=false) ** 3))(a[:, :2]).tolist())\n")
    got = printed(r)
    th = torch.autograd.functional.hessian
    t = torch.tensor(a)
    want0 = th(lambda m: torch.sin(torch.linalg.eigvalsh((m + m.T) / 2)).sum(), t)
    want1 = th(lambda m: (torch.linalg.svdvals(m) ** 3).sum(), t[:, :2].contiguous())
    assert np.allclose(got[0], want0.numpy(), rtol=1e-9, atol=1e-10)
    assert np.allclose(got[1], want1.numpy(), rtol=1e-9, atol=1e-10)


def test_a_third_derivative_through_eigvalsh_at_a_repeat_is_refused_by_name():
    from apsi_lang.errors import ApsiError
    from apsi_layers import nn

    third = nn.jacobian(nn.hessian(lambda m: nn.sum(nn.eigvalsh(m) ** 3)))
    with pytest.raises(ApsiError, match="eigvalsh: a third derivative at repeated"):
        third(2.0 * nn.eye(2))


def test_a_non_smooth_spectral_function_is_refused_at_a_repeat(tmp_path):
    r = run_apsi(tmp_path, "use nn\nlet h = hessian(fn(a) => eigvalsh(a)[1])(eye(2))\n")
    assert r.returncode != 0 and no_traceback(r.stderr)
    assert "edges.apsi:2" in r.stderr and "second derivative is undefined" in r.stderr


# --- the 2-norm's hessian at 0 --------------------------------------------------------------------

def test_the_hessian_of_norm_at_zero_is_nan_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    x = np.array([[0.0, 1.0], [0.0, 2.0]])
    got = printed(run_apsi(tmp_path, "use nn\nprint(hessian(fn(x) => norm(x))(zeros(3)).tolist())\n"
                           f"print(hessian(fn(x) => sum(norm(x, axis=0)))(array({x.tolist()})).tolist())\n"
                           f"print(grad(fn(x) => norm(x))(zeros(3)).tolist())\n"))
    th = torch.autograd.functional.hessian
    want0 = th(lambda v: torch.linalg.norm(v), torch.zeros(3, dtype=torch.float64)).numpy()
    want1 = th(lambda v: torch.linalg.vector_norm(v, dim=0).sum(), torch.tensor(x)).numpy()
    assert np.isnan(got[0]).all() and np.isnan(want0).all()
    assert np.array_equal(np.isnan(got[1]), np.isnan(want1))
    assert np.allclose(np.nan_to_num(got[1]), np.nan_to_num(want1), rtol=1e-12, atol=1e-14)
    assert got[2] == [0.0, 0.0, 0.0]                   # the first derivative: torch's subgradient 0


# --- svd full_matrices=true of a non-square matrix ------------------------------------------------

def test_svd_full_matrices_extra_columns_refuse_a_gradient_as_qr_complete(tmp_path):
    src = ("use nn\nlet t = array([[1.0, 2.0, 3.0], [2.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 2.0, 1.0], "
           "[3.0, 1.0, 0.0]])\n"
           "print(grad(fn(m) => sum(svd(m)[1]) + sum(svd(m)[0][:, :3]))(t).tolist())\n"
           "let u = fn(m) => svd(m)[0][:, 3:]\n"
           "let g = grad(fn(m) => sum(u(m) @ transpose(u(m)) * m[:, :1]))(t)\n")
    r = run_apsi(tmp_path, src)
    assert r.returncode != 0 and no_traceback(r.stderr)
    assert "edges.apsi:5" in r.stderr and "full_matrices=false" in r.stderr
    assert "not unique" in r.stderr
    wide = run_apsi(tmp_path, "use nn\nlet w = array([[1.0, 2.0, 3.0], [0.0, 1.0, 4.0]])\n"
                    "print(grad(fn(m) => sum(svd(m)[2][:2, :]) + sum(svd(m)[1]))(w).shape)\n"
                    "let g = grad(fn(m) => sum(svd(m)[2][2:, :] * m[:1, :]))(w)\n")
    assert wide.returncode != 0 and no_traceback(wide.stderr) and wide.stdout.strip() == "(2, 3)"
    assert "edges.apsi:4" in wide.stderr and "extra rows of Vh" in wide.stderr
    torch = pytest.importorskip("torch")
    t = torch.tensor([[1.0, 2, 3], [2, 0, 1], [1, 1, 1], [0, 2, 1], [3, 1, 0]], dtype=torch.float64,
                     requires_grad=True)
    u, s, vh = torch.linalg.svd(t, full_matrices=False)
    sign = torch.as_tensor(np.sign(np.sum(np.linalg.svd(t.detach().numpy(), full_matrices=False)[0]
                                          * u.detach().numpy(), axis=0)))
    (s.sum() + (u * sign).sum()).backward()
    assert np.allclose(json.loads(r.stdout.splitlines()[0]), t.grad.numpy(), rtol=1e-10)


# --- det of a singular matrix: the cofactors -----------------------------------------------------

def test_grad_and_hessian_of_det_at_a_singular_matrix_match_torch(tmp_path):
    torch = pytest.importorskip("torch")
    a = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
    z = [[0.0, 0.0], [0.0, 0.0]]
    got = printed(run_apsi(tmp_path, f"use nn\nlet a = array({a})\n"
                           "print(grad(fn(m) => det(m))(a).tolist())\n"
                           "print(hessian(fn(m) => det(m))(a).tolist())\n"
                           f"print(grad(fn(m) => det(m))(array({z})).tolist())\n"
                           "print(grad(fn(m) => sum(det(m)))(stack([a, eye(3)])).tolist())\n"))
    ta = torch.tensor(a, dtype=torch.float64)
    assert np.allclose(got[0], [[4, 4, -4], [-2, -2, 2], [0, 0, 0]], atol=1e-12)
    assert np.allclose(got[0], torch.func.grad(torch.linalg.det)(ta).numpy(), atol=1e-12)
    want_h = torch.autograd.functional.hessian(torch.linalg.det, ta).numpy()
    assert np.allclose(got[1], want_h, atol=1e-12)
    assert np.allclose(got[2], np.zeros((2, 2)))
    both = torch.stack([ta, torch.eye(3, dtype=torch.float64)])
    assert np.allclose(got[3], torch.func.grad(lambda m: torch.linalg.det(m).sum())(both).numpy(),
                       atol=1e-12)


# --- einsum broadcasts its '...' axes ------------------------------------------------------------

def test_einsum_broadcasts_the_ellipsis_axes_as_numpy(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 1, 3)), rng.standard_normal((4, 3))
    got = printed(run_apsi(tmp_path, f"use nn\nlet a = array({a.tolist()})\nlet b = array({b.tolist()})\n"
                           "print(einsum(\"...i,...i->...\", a, b).tolist())\n"
                           "print(grad(fn(x) => sum(einsum(\"...i,...i->...\", x, b) ** 2))(a).tolist())\n"
                           "print(einsum(\"i...,i...\", transpose(a[0]), b[:3]).tolist())\n"))
    assert np.allclose(got[0], np.einsum("...i,...i->...", a, b), rtol=1e-14)
    ta = torch.tensor(a, requires_grad=True)
    (torch.einsum("...i,...i->...", ta, torch.tensor(b)) ** 2).sum().backward()
    assert np.allclose(got[1], ta.grad.numpy(), rtol=1e-13)
    assert np.allclose(got[2], np.einsum("i...,i...", a[0].T, b[:3]), rtol=1e-14)
    from apsi_layers import nn
    from apsi_layers.backends.torch import nn_dispatch

    nn_dispatch.install()                # the torch backend's einsum broadcasts the same way
    out = nn.einsum("...i,...i->...", torch.tensor(a), torch.tensor(b))
    assert isinstance(out, torch.Tensor) and np.allclose(out.numpy(), got[0], rtol=1e-14)
    r = run_apsi(tmp_path, "use nn\nlet y = einsum(\"...i,...i->...\", ones(2, 2, 3), ones(4, 3))\n")
    assert r.returncode != 0 and no_traceback(r.stderr) and "do not broadcast" in r.stderr


# --- precision_recall_f1 averages over the labels present, as scikit-learn --------------------------

LABELS = [([0, 0, 2, 2, 2], [0, 2, 2, 2, 0]), ([1, 3, 3, 0], [3, 3, 1, 1]), ([0, 1, 1, 0], [0, 1, 0, 0])]


def test_precision_recall_f1_averages_match_scikit_learn(tmp_path):
    from sklearn import metrics  # a test dependency (pyproject's test extra)

    lines = []
    for t, p in LABELS:
        for avg in ("macro", "weighted", "micro"):
            lines.append(f"let m = precision_recall_f1({t}, {p}, average=\"{avg}\")\n"
                         "print([m.precision, m.recall, m.f1])\n")
    got = printed(run_apsi(tmp_path, "use nn\n" + "".join(lines)))
    want = [metrics.precision_recall_fscore_support(t, p, average=avg, zero_division=0)[:3]
            for t, p in LABELS for avg in ("macro", "weighted", "micro")]
    assert np.allclose(got, want, rtol=1e-14)
    assert np.allclose(got[0], [0.5833333333333333] * 3)        # the case (was 0.389)
