"""Custom layers from Python (the documented CustomLayer interface) and how Apsi sees layers."""

import subprocess
import sys
import textwrap

import numpy as np

from apsi_lang import sandbox
from apsi_layers import layers as L
from apsi_layers import nn
from apsi_layers.layers import CustomLayer, exports


class Scale(CustomLayer):
    kind = "scale"

    def __init__(self, start=1.0, name=None):
        super().__init__(name)
        self.start = start

    def params(self, rng, input_shape):
        return {"s": rng.full((input_shape[-1],), self.start)}, input_shape

    def forward(self, params, x, ctx):
        return x * params.s


def test_a_custom_layer_composes_and_trains():
    net = L.sequential(L.dense(3, inputs=2), Scale(2.0), L.dense(1))
    p = net.init(seed=0)
    assert np.array_equal(p.scale.s.data, [2.0, 2.0, 2.0])
    x = np.random.default_rng(0).standard_normal((16, 2))
    r = L.fit(net, p, x, x[:, :1] * 3, loss="mse", opt=nn.adam(lr=0.05), epochs=20, batch_size=4)
    assert r.history[-1] < r.history[0] / 4
    assert not np.array_equal(r.params.scale.s.data, p.scale.s.data)


def test_plugins_join_use_layers_and_their_classes_become_readable(monkeypatch):
    monkeypatch.setattr(exports, "plugin_layers", lambda: {"scale": Scale})
    names = exports.layers_exports()
    assert names["scale"] is Scale and names["dense"] is L.dense
    assert sandbox.may_read(Scale, "init") and not sandbox.may_read(Scale, "s")


def test_apsi_reads_models_through_their_allow_list(tmp_path):
    program = tmp_path / "m.apsi"
    program.write_text(textwrap.dedent('''
        use layers
        use nn
        let net = sequential(dense(4, inputs=3, name="hidden"), dense(2, activation="relu"))
        print(net)
        print(net.kind, net.name, net.input_shape, len(net.layers), net.layers[1].options)
        let p = net.init(seed=1)
        print(p.hidden.w.shape, param_count(p))
        let v = vae(4, 2, hidden=[3])
        print(v.decoder.input_shape, flatten().kind, len(flatten(p)))
        print(net.build)
    '''))
    r = subprocess.run([sys.executable, "-m", "apsi", str(program)], capture_output=True, text=True,
                       timeout=120)
    assert r.stdout.splitlines() == [
        'sequential(dense(4, inputs=3, name="hidden"), dense(2, activation="relu"))',
        'sequential sequential [3] 2 {activation: "relu"}',
        "(3, 4) 26",
        "[2] flatten 4",
    ]
    assert r.returncode == 1 and "'.build' of a layer is not available to Apsi code" in r.stderr


def test_a_python_package_adds_a_layer_through_the_entry_point(tmp_path):
    """The documented route, for real: an installed distribution with an `apsi.layers` entry point;
    an Apsi program then builds, trains and prints the custom layer like a built-in one."""
    import os

    # installed = outside the project: distributions in the program's own folder are never read
    site, proj = tmp_path / "site", tmp_path / "proj"
    site.mkdir()
    proj.mkdir()
    (site / "scaleplug.py").write_text(textwrap.dedent('''
        from apsi_layers.layers import CustomLayer

        class Scale(CustomLayer):
            kind = "scale"

            def __init__(self, start=1.0, name=None):
                super().__init__(name, start=start)
                self.start = start

            def params(self, rng, input_shape):
                return {"s": rng.full((input_shape[-1],), self.start)}, input_shape

            def forward(self, params, x, ctx):
                return x * params.s

        def layers():
            return {"scale": Scale}
    '''))
    info = site / "scaleplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scaleplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[apsi.layers]\nscale = scaleplug:layers\n")
    program = proj / "p.apsi"
    program.write_text(textwrap.dedent('''
        use layers
        use nn
        let net = sequential(dense(3, inputs=2), scale(2.0), dense(1))
        let p = net.init(seed=0)
        print(net, p.scale.s)
        let x = randn(16, 2, seed=0)
        let r = fit(net, p, x, x[:, 0] * 3, loss="mse", opt=adam(lr=0.05), epochs=20, batch_size=4)
        print(r.history[-1] < r.history[0] / 4)
    '''))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "apsi", str(program)], capture_output=True, text=True,
                       timeout=120, cwd=proj, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "sequential(dense(3, inputs=2), scale(start=2.0), dense(1)) tensor([2., 2., 2.])", "true"]
