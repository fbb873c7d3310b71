"""Real .apsi programs with `use units`, run as users run them (`python -m apsi FILE`)."""

import os
import subprocess
import sys

from .conftest import ROOT


def apsi(path, cwd):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("APSI_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "apsi", str(path)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_the_issue_example(tmp_path):
    prog = tmp_path / "fall.apsi"
    prog.write_text("""use nn
use units
let g = 9.81 * u.m / u.s ** 2
let t = linspace(0, 2, 5) * u.s
let h = 0.5 * g * t ** 2
print(h)
print(to(h, "cm")[1])
print(f"{3 * u.m / u.s:.2f}")
print(h + 1 * u.s)
print("not reached")
""")
    p = apsi(prog, tmp_path)
    assert p.stdout.splitlines() == ["tensor([ 0.     ,  1.22625,  4.905  , 11.03625, 19.62   ]) m",
                                     "122.625 cm", "3.00 m/s"]
    assert p.returncode != 0
    assert "fall.apsi:9:" in p.stderr
    assert "cannot add m (length) and s (time)" in p.stderr
    assert "Traceback (most recent call last):\n  File" not in p.stderr     # no Python traceback


def test_the_pendulum_example(tmp_path):
    p = apsi(ROOT / "examples" / "pendulum_units.apsi", tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "g by gradient descent: 9.790 m/s²" in lines
    assert "g by fit: 9.790 m/s²" in lines
    assert "predicted period of a 1 ft pendulum: 1108.7 ms" in lines
    assert lines[-1] == "error: cannot add cm (length) and s (time): add only values of the same dimension"


def test_an_error_in_an_nn_function_points_at_the_line(tmp_path):
    prog = tmp_path / "angle.apsi"
    prog.write_text("use nn\nuse units\nprint(sin(30 * u.deg))\nlet d = 2 * u.m\nprint(exp(d))\n")
    p = apsi(prog, tmp_path)
    assert p.stdout.strip() == "0.49999999999999994"
    assert "angle.apsi:5:" in p.stderr and "exp: the argument must be dimensionless" in p.stderr
    assert "m (length)" in p.stderr


def test_the_builtins_nn_shadows_work_on_quantities(run):
    _, out = run("""use nn
use units
let x = array([3.0, -1.0, 2.0]) * u.m
print(sum(x), max(x), min(x), abs(x), round(1.256 * u.s, 1))
print(max(1 * u.m, 50 * u.cm), min(1 * u.m, 50 * u.cm), sum([1 * u.m, 20 * u.cm]))
print(len(x), x[0], [v for v in x], type(x), type(u.m))
""")
    assert out.splitlines() == [
        "4.0 m 3.0 m -1.0 m tensor([3., 1., 2.]) m 1.3 s",
        "1.0 m 0.5 m 1.2 m",
        "3 3.0 m [3.0 m, -1.0 m, 2.0 m] quantity unit",
    ]


def test_pint_is_imported_only_by_use_units(tmp_path):
    code = ("import sys\nfrom apsi_lang import run_source, permissions\n"
            "g = permissions.Grants(project_root=sys.argv[1])\n"
            "run_source('use nn\\nuse layers\\nprint(sum(array([1, 2])))',\n"
            "           filename=sys.argv[1] + '/a.apsi', grants=g)\n"
            "print('pint' in sys.modules)\n"
            "run_source('use units\\nprint(2 * u.m)', filename=sys.argv[1] + '/b.apsi', grants=g)\n"
            "print('pint' in sys.modules)\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.stdout.splitlines() == ["3.0", "False", "2 m", "True"], p.stderr
