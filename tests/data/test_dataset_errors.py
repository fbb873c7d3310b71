"""A dataset function's failures in Apsi's words, the same with worker processes as in a thread: a batch
of no samples, exit() inside the function, a recursion without end."""

import pytest

from .run import apsi, error

HEAD = """use layers
use nn
fn deep(n):
    return deep(n + 1)
fn batch(i):
    if i == 3:
        BAD
    return [ones(8, 3), ones(8, 1)]
let net = mlp(3, 1)
let r = fit(net, net.init(seed=0), dataset(5, batch, workers=WORKERS), loss="mse", epochs=1, verbose=false)
"""


def program(bad, workers):
    return HEAD.replace("BAD", bad).replace("WORKERS", str(workers))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_batch_of_no_samples_is_named(tmp_path, workers):
    msg = error(tmp_path, program("return [zeros(0, 3), zeros(0, 1)]", workers))
    assert ("fit: the dataset function returned x of shape [0, 3] at batch 3 (epoch 1): a batch of no "
            "samples") in msg, msg


@pytest.mark.parametrize("workers", [0, 2])
def test_exit_in_the_function_ends_the_program_with_its_code(tmp_path, workers):
    r = apsi(tmp_path, program("exit(3)", workers))
    assert r.returncode == 3 and r.stderr == "", r.stderr


@pytest.mark.parametrize("workers", [0, 2])
def test_a_recursion_without_end_is_too_many_nested_calls(tmp_path, workers):
    msg = error(tmp_path, program("deep(0)", workers))
    said = "fit: the dataset function failed at batch 3 (epoch 1) (prog.apsi:4): too many nested calls"
    assert said in msg, msg
