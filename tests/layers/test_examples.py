"""The `use layers` examples run from the repository root, as the README runs them, and learn."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(name):
    r = subprocess.run([sys.executable, "-m", "apsi", f"examples/{name}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def losses(out):
    first, last = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+)", out).groups()
    return float(first), float(last)


@pytest.mark.slow
def test_char_lm_learns_and_writes_a_sample():
    out = run("char_lm.apsi")
    first, last = losses(out)
    assert last < 0.75 * first
    sample = re.search(r"^sample: (.*)$", out, re.M).group(1)
    assert sample.startswith("the ") and len(sample) >= 80


@pytest.mark.slow
def test_cnn_tells_bars_apart():
    out = run("cnn_images.apsi")
    first, last = losses(out)
    assert last < first / 2
    assert float(re.search(r"test accuracy (\d+\.\d)%", out).group(1)) > 85


@pytest.mark.slow
def test_gcn_labels_the_communities():
    out = run("gcn_graph.apsi")
    assert float(re.search(r"accuracy on all 40 nodes: (\d+\.\d)%", out).group(1)) > 85


@pytest.mark.slow
def test_vae_rebuilds_patterns():
    out = run("vae.apsi")
    first, last = losses(out)
    assert last < 0.7 * first
    assert float(re.search(r"pixels wrong after the round trip: (\d+\.\d)%", out).group(1)) < 5
    assert "decoded from code [0, 0]: tensor([[" in out


def test_workflow_trains_then_resumes_from_its_checkpoint(tmp_path):
    import shutil

    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "workflow.apsi", tmp_path / "examples")

    def go(*args):
        r = subprocess.run([sys.executable, "-m", "apsi", "examples/workflow.apsi", *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    first, second = go(), go("resume")
    assert first.startswith("epochs 4  loss ") and second.startswith("epochs 8  loss ")
    assert first.split()[3] == second.split()[3]                # the same first epoch: one run
    assert (tmp_path / "examples" / "workflow.ckpt").exists()
    import matplotlib.image

    png = matplotlib.image.imread(tmp_path / "examples" / "workflow.png")
    assert png.shape[0] > 100 and png.shape[1] > 100 and png[..., :3].std() > 0.01     # drawn, not blank
