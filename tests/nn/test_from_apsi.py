"""`use nn` from Apsi programs: operators, shadowed builtins, grad of Apsi functions, the sandbox,
errors, parameter files and the spiral example written with nn alone."""

from pathlib import Path

import pytest

from apsi_lang import permissions, run_source
from apsi_lang.errors import ApsiError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(tmp_path, capsys):
    old = permissions.current()

    def run(src):
        ns = run_source(src, filename=str(tmp_path / "t.apsi"),
                        grants=permissions.Grants(project_root=tmp_path))
        return ns, capsys.readouterr().out
    yield run
    permissions.set_current(old)


def test_tensors_and_operators(run):
    ns, out = run("use nn\nlet a = array([1, 2])\nprint(a * 2)\nlet b = 1 - a / 2\nlet m = a @ a\n")
    assert out == "tensor([2., 4.])\n"
    assert ns["b"].data.tolist() == [0.5, 0.0] and ns["m"].item() == 5.0


def test_shadowed_builtins_work_on_numbers_lists_and_tensors(run):
    ns, _ = run("""use nn
let a = array([1.0, 5.0])
let b = array([2.0, 1.0])
let r = [sum([1, 2, 3]), max(3, 4), min([5, 2, 8]), abs(-3), round(2.567, 2), round(2.5)]
let d = max(abs(a - b))
let s = sum(a)
let mx = max(a, b)
let n = sum([a, b])
""")
    assert ns["r"] == [6, 4, 2, 3, 2.57, 2]
    assert ns["d"].item() == 4.0 and ns["s"].item() == 6.0
    assert ns["mx"].data.tolist() == [2.0, 5.0] and ns["n"].data.tolist() == [3.0, 6.0]


def test_grad_of_an_apsi_function_of_a_record(run):
    ns, _ = run("""use nn
fn loss(p, x):
    return sum((x @ p.w + p.b) ** 2)
let p = {w: ones(2, 1), b: zeros(1)}
let g = grad(loss)(p, array([[1.0, 2.0]]))
let l, g2 = value_and_grad(loss)(p, x=array([[1.0, 2.0]]))
let h = hessian(fn(x) => sum(x ** 3))(array([1.0, 2.0]))
""")
    assert ns["g"].w.data.tolist() == [[6.0], [12.0]] and ns["g"].b.data.tolist() == [6.0]
    assert ns["l"].item() == 9.0
    assert ns["h"].data.tolist() == [[6.0, 0.0], [0.0, 12.0]]


def test_errors_are_apsi_errors_with_the_message(run):
    ns, _ = run("""use nn
let msg = ""
try:
    matmul(zeros(3, 4), zeros(5, 2))
catch e:
    msg = e.message
""")
    assert ns["msg"] == ("matmul: shapes (3, 4) and (5, 2) do not align: the last axis of a (4) must "
                         "equal the first of b (5)")
    with pytest.raises(ApsiError, match="grad: the function must return a single number"):
        run("use nn\ngrad(fn(x) => x * 2)(array([1.0, 2.0]))\n")


@pytest.mark.parametrize("expr", ["a.data", "a.numpy()", "a.data.tofile", "a.tape", "a.node"])
def test_sandbox_hides_raw_arrays(run, expr):
    with pytest.raises(ApsiError, match="not available to Apsi"):
        run(f"use nn\nlet a = array([1.0])\n{expr}\n")


def test_safe_attributes_are_readable(run):
    ns, _ = run("use nn\nlet a = zeros(2, 3)\nlet r = [a.shape, a.ndim, a.size, a.T.shape, a.sum().item()]\n"
                "let o = adam(lr=0.1)\nlet n = o.steps\n")
    assert ns["r"] == [(2, 3), 2, 6, (3, 2), 0.0] and ns["n"] == 0


def test_save_and_load_params_in_the_project(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                 # relative paths are relative to the working folder
    ns, _ = run("""use nn
let p = {layers: [{w: randn(2, 2, seed=0), b: zeros(2)}]}
save_params("m.npz", p)
let q = load_params("m.npz", like=p)
let same = max(abs(q.layers[0].w - p.layers[0].w)).item()
""")
    assert ns["same"] == 0.0 and (tmp_path / "m.npz").exists()


def test_spiral_by_hand_trains(capsys):
    old = permissions.current()
    path = ROOT / "examples" / "spiral_nn.apsi"
    try:
        run_source(path.read_text(), filename=str(path), grants=permissions.Grants(project_root=path.parent))
    finally:
        permissions.set_current(old)
    lines = capsys.readouterr().out.splitlines()
    losses = [float(line.split()[-1]) for line in lines if line.startswith("step")]
    assert losses[0] > 0.6 and losses[-1] < 0.1 and losses == sorted(losses, reverse=True)
    assert float(lines[-1].split()[1].rstrip("%")) > 95
