"""Issue 16: a layer value used inside two different combinators would get two sets of weights (the
docs promise one set per layer value); it is refused with a message naming both places. Sharing the
combinator itself stays one set, so a siamese model still predicts exactly zero for equal inputs."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import layers as L
from apsi_layers import nn


def test_a_layer_inside_two_combinators_is_refused_naming_both_places():
    d = L.dense(4)
    net = L.parallel(L.sequential(d), L.sequential(d), merge="sub")
    with pytest.raises(ApsiError) as e:
        net.init(seed=0, input_shape=[3])
    msg = str(e.value)
    assert "sequential.dense" in msg and "sequential_1.dense" in msg and "share the combinator" in msg


def test_fit_refuses_before_training():
    d = L.dense(1)
    net = L.parallel(L.sequential(d), L.sequential(L.dense(3), d), merge="add")
    other = L.parallel(L.sequential(L.dense(1)), L.sequential(L.dense(3), L.dense(1)), merge="add")
    p = other.init(seed=0, input_shape=[3])     # a tree of the right shapes, made elsewhere
    with pytest.raises(ApsiError, match="two different combinators"):
        L.fit(net, p, nn.Tensor(np.ones((4, 3))), nn.Tensor(np.ones((4, 1))), loss="mse", epochs=1,
              verbose=False)


def test_sharing_the_combinator_is_one_set_of_weights():
    s = L.sequential(L.dense(4, activation="tanh"))
    net = L.parallel(s, s, merge="sub")
    p = net.init(seed=0, input_shape=[3])
    assert [k for k in vars(p)] == ["sequential"]
    y = L.predict(net, p, nn.Tensor(np.random.default_rng(0).standard_normal((5, 3))))
    assert np.all(y.data == 0.0)


def test_a_weightless_layer_may_appear_anywhere():
    act = L.activation("relu")
    net = L.parallel(L.sequential(L.dense(2), act), L.sequential(L.dense(2), act), merge="add")
    assert net.init(seed=0, input_shape=[3]) is not None


def test_apsi_program_gets_file_and_line(tmp_path):
    import subprocess
    import sys

    prog = tmp_path / "t.apsi"
    prog.write_text('use layers\nlet d = dense(4)\nlet net = parallel(sequential(d), sequential(d))\n'
                    'let p = net.init(seed=0, input_shape=[3])\n')
    r = subprocess.run([sys.executable, "-m", "apsi", str(prog)], capture_output=True, text=True)
    assert r.returncode == 1 and "t.apsi:4:" in r.stderr and "two different combinators" in r.stderr
    assert 'File "' not in r.stderr
