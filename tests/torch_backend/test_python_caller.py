"""Issue 16: from Python, apsi_layers is a plain library: fit(backend="torch") works without Apsi's
`python` permission (that permission is for Apsi programs; a Python caller is not sandboxed)."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")


def test_a_python_program_trains_on_torch_without_apsi_permissions():
    code = textwrap.dedent("""
        import numpy as np
        from apsi_layers import nn
        from apsi_layers.layers import fit, mlp, predict
        net = mlp(3, 1, hidden=[4])
        x = nn.Tensor(np.random.default_rng(0).standard_normal((16, 3)))
        r = fit(net, net.init(seed=0), x, x, loss="mse", epochs=1, verbose=False, backend="torch")
        print(r.backend, predict(net, r.params, x, backend="torch").shape)
        r = fit(net, net.init(seed=0), x, x, loss="mse", epochs=1, verbose=False, backend="auto")
        print(r.backend)
    """).replace("x, x, loss", "x, x[:, :1], loss")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["torch", "(16,", "1)", "torch"]
