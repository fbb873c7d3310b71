"""Linear algebra as users run it: a real .apsi program through `python -m apsi`, checked against
NumPy computed here, and errors that name the Apsi line with no Python traceback."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

PROGRAM = """\
use nn
let a = array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
let b = array([1.0, 2.0, 3.0])
let x = solve(a, b)
let sign, logdet = slogdet(a)
let w, v = eigh(a)
let u, s, vh = svd(a)
let q, r = qr(a)
# the gradient of log det is inv(a).T; the hessian of a quadratic form through inv
let g = grad(fn(m) => slogdet(m)[1])(a)
let h = hessian(fn(y) => y @ inv(a) @ y)(b)
let fro = norm(a)
let e = einsum("ij,jk,k->i", a, a, b)
let out = {x: x.tolist(), logdet: logdet.item(), det: det(a).item(), w: w.tolist(),
           s: s.tolist(), r_diag: abs(diag(r)).tolist(), g: g.tolist(), h: h.tolist(),
           fro: fro.item(), e: e.tolist(), chol: cholesky(a).tolist(), tr: trace(a).item(),
           recon: (q @ r).tolist(), cond: cond(a).item(), p3: matrix_power(a, 3).tolist(),
           k: kron(eye(2), a).shape, ls: lstsq(a, b)[0].tolist(), pinv: pinv(a).tolist()}
print(out.x, out.logdet)
"""


def run(tmp_path, source, name="linalg.apsi"):
    path = tmp_path / name
    path.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    return subprocess.run([sys.executable, "-m", "apsi", str(path)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_a_linear_algebra_program_matches_numpy(tmp_path):
    r = run(tmp_path, PROGRAM)
    assert r.returncode == 0, r.stderr
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    b = np.array([1.0, 2.0, 3.0])
    first = r.stdout.splitlines()[0]
    x_text, logdet_text = first.rsplit(" ", 1)
    assert np.allclose(json.loads(x_text), np.linalg.solve(a, b), rtol=1e-13, atol=0)
    assert abs(float(logdet_text) - np.linalg.slogdet(a)[1]) < 1e-13


def test_values_and_derivatives_inside_the_program(tmp_path):
    checks = PROGRAM + textwrap.dedent("""\
        let ok = [
            max(abs(g - transpose(inv(a)))) < 1e-12,
            max(abs(h - (inv(a) + transpose(inv(a))))) < 1e-12,
            abs(det(a) - exp(logdet)) < 1e-12,
            max(abs((v * w) @ transpose(v) - a)) < 1e-12,
            max(abs(q @ r - a)) < 1e-12,
            max(abs((u * s) @ vh - a)) < 1e-12,
            abs(fro - sqrt(sum(a * a))) < 1e-12,
            max(abs(e - a @ (a @ b))) < 1e-12,
            max(abs(cholesky(a) @ transpose(cholesky(a)) - a)) < 1e-12,
            abs(trace(a) - 9.0) < 1e-12,
            max(abs(matrix_power(a, 3) - a @ a @ a)) < 1e-11,
            max(abs(lstsq(a, b)[0] - x)) < 1e-12,
            max(abs(pinv(a) - inv(a))) < 1e-12,
            max(abs(tril(a) + triu(a, 1) - a)) == 0,
            dot(b, b) == 14.0, vdot(a, a) == sum(a * a),
            max(abs(outer(b, b) - inner(b[:, none], b[:, none]))) == 0,
            tensordot(a, a, 2) == sum(a * a),
        ]
        print(ok)
        """)
    r = run(tmp_path, checks)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[" + ", ".join(["true"] * 18) + "]"


def no_python_traceback(stderr):
    """Apsi prints its own traceback (Apsi frames only); a Python one would name .py files."""
    return ".py" not in stderr and 'File "' not in stderr


def test_errors_name_the_line_and_show_no_traceback(tmp_path):
    r = run(tmp_path, "use nn\nlet a = ones(3, 3)\nlet x = 1\nlet y = inv(a)\n")
    assert r.returncode != 0
    assert no_python_traceback(r.stderr)
    assert "singular" in r.stderr and "linalg.apsi:4" in r.stderr
    r = run(tmp_path, 'use nn\nlet a = ones(2, 2)\nlet y = einsum("ij,j%->i", a, a)\n')
    assert no_python_traceback(r.stderr) and "linalg.apsi:3" in r.stderr
    assert "character '%'" in r.stderr
    r = run(tmp_path, "use nn\nlet a = eye(3)\nlet g = grad(fn(m) => sum(eigh(m)[1] * 2))(a)\n")
    assert no_python_traceback(r.stderr) and "eigenvalues 0 and 1 are equal" in r.stderr


FIT = """\
use layers
use nn
let x = randn(32, 4, seed=1)
let y = x @ array([[1.0], [-2.0], [0.5], [0.0]])
let mix = fn(h) => einsum("bi,ij->bj", h, eye(4)) + 0.1 * norm(h, axis=1, keepdims=true)
let net = sequential([dense(4), lambda_layer(mix), dense(1)])
let loss = fn(p, t) => mean((p - t) ** 2) + 0.01 * norm(p - t, 1) / 32 + 0.01 * trace(outer(p[:, 0], t[:, 0]))
let p0 = net.init(seed=0, input_shape=[4])
let rn = fit(net, p0, x, y, loss=loss, opt=sgd(lr=0.05), epochs=3, batch_size=8)
let rt = fit(net, p0, x, y, loss=loss, opt=sgd(lr=0.05), epochs=3, batch_size=8, backend="torch",
             device="cpu", precision="fp64")
print(rn.history[-1], rt.history[-1])
"""


def test_a_loss_and_layer_written_with_linalg_train_on_both_backends(tmp_path):
    import pytest

    pytest.importorskip("torch")
    path = tmp_path / "fit.apsi"
    path.write_text(FIT)
    r = subprocess.run([sys.executable, "-m", "apsi", "--allow-python", str(path)], capture_output=True,
                       text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    numpy_loss, torch_loss = map(float, r.stdout.split()[-2:])
    assert abs(numpy_loss - torch_loss) <= 1e-12 * abs(numpy_loss)
