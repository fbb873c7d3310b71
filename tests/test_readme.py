"""The README's commands and its tour stay true."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_first_lines_are_the_two_commands():
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert block[0].startswith("python -m pip install -e . && apsi examples/quickstart.apsi")
    assert block[1].startswith('python -m pip install -e ".[test]" && python -m pytest')
    assert (ROOT / "examples" / "quickstart.apsi").is_file()


def test_quickstart_trains(tmp_path):
    r = subprocess.run([sys.executable, "-m", "apsi", str(ROOT / "examples" / "quickstart.apsi")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", r.stdout)]
    assert len(losses) > 3 and losses[-1] < losses[0] / 5
    accuracy = float(re.search(r"accuracy (\d+\.\d)%", r.stdout).group(1))
    assert accuracy > 90


def test_tour_snippet_runs(tmp_path):
    tour = re.search(r"## A short tour\n```\n(.*?)```", README, re.S).group(1)
    program = tmp_path / "tour.apsi"
    program.write_text(tour)
    r = subprocess.run([sys.executable, "-m", "apsi", str(program)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"loss \d+\.\d{4}\n", r.stdout)


def test_tour_example_runs():
    r = subprocess.run([sys.executable, "-m", "apsi", str(ROOT / "examples" / "tour.apsi"), "a"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith('args: ["a"]\n')


def test_rosenbrock_example_converges():
    r = subprocess.run([sys.executable, "-m", "apsi", str(ROOT / "examples" / "rosenbrock.apsi")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    f = dict(re.findall(r"^(\w+).*f = (\S+)$", r.stdout, re.M))
    assert float(f["sgd"]) < 0.1 and float(f["adam"]) < 1e-10 and float(f["newton"]) < 1e-20
