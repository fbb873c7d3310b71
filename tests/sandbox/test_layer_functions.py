"""Issue 15: what an Apsi function gives a layer is checked on every call, not only when the model is
built: a lambda_layer whose result changed type after the probe made predict return a map holding an
`__array_interface__` key (a NumPy protocol) to the layers."""

import pytest

from sandbox.helpers import cli


@pytest.mark.parametrize("make", ["lambda_layer(f)", "activation(f)", "dense(2, activation=f)"])
def test_a_function_that_changes_its_result_type_is_refused_at_the_call(project, make):
    code = f"""use layers
use nn
let calls = [0]
fn f(x):
    calls[0] += 1
    if calls[0] > 6:
        return {{"__array_interface__": {{"shape": [2], "typestr": "<f8", "data": [0, false]}}}}
    return x
let net = sequential(dense(2, inputs=2), {make})
let p = net.init(seed=0)
let r = fit(net, p, randn(8, 2, seed=0), randn(8, 2, seed=1), loss="mse", batch_size=1, epochs=2,
            verbose=false)
print(r.history)
"""
    (project / "p.apsi").write_text(code)
    rc, out, err = cli(["p.apsi"], project)
    assert rc == 1 and "the function returned" in err and "it must return a tensor" in err, err
    assert out == ""


def test_a_function_returning_a_tensor_works(project):
    (project / "p.apsi").write_text("use layers\nuse nn\nlet net = sequential(dense(2, inputs=2), "
                                    "lambda_layer(fn(x) => x * 2.0))\n"
                                    "print(predict(net, net.init(seed=0), ones(1, 2)).shape)\n")
    rc, out, err = cli(["p.apsi"], project)
    assert rc == 0 and out == "(1, 2)\n", err
