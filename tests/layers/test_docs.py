"""docs/layers.md stays true: its examples run and print what they should, every name `use layers`
exports is documented, and so is every option of fit."""

import re
from pathlib import Path

import pytest

from apsi_lang import permissions, run_source

DOC = (Path(__file__).resolve().parents[2] / "docs" / "layers.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```apsi\n(.*?)```", DOC, re.S)
EXPECTED = [
    "20 true (64, 2)",
    'sequential(dense(8, activation="relu", inputs=3), batch_norm(), dense(1))\n'
    '["dense.w", "dense.b", "batch_norm.gamma", "batch_norm.beta", "batch_norm.state.mean", '
    '"batch_norm.state.var", "dense_1.w", "dense_1.b"]',
    "(2, 3)\n(4, 2)\ntensor([[ 0.5 , -0.75]])\nlambda_layer(<fn <lambda>>) tensor([[2.]])",
    "tensor([ 3., 20.]) tensor([ 3., 20.])",       # preprocessing: impute and normalization adapted
    "tensor([3., 7.])",      # preprocessing of column groups in parallel branches
    '["ea.w", "ea.b", "score.w", "score.b"]\n(1, 8)',
    "4 4 true",              # the workflow options
    "4 4 4 1 true",          # weights, task, reduce_lr, csv_log
    None,                    # summary: checked below
]


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_example_prints_what_it_should(i, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    old = permissions.current()
    try:
        run_source(BLOCKS[i], filename=str(tmp_path / "doc.apsi"),
                   grants=permissions.Grants(project_root=tmp_path))
    finally:
        permissions.set_current(old)
    out = capsys.readouterr().out.strip()
    if EXPECTED[i] is not None:
        assert out == EXPECTED[i]
    else:
        assert out.splitlines()[1].split() == ["layer", "kind", "output", "shape", "params"]
        assert out.endswith("total parameters: 58")


def test_every_export_and_fit_option_is_documented():
    from apsi_layers.layers import registry
    from apsi_layers.layers.exports import FUNCTIONS
    from apsi_layers.layers.training.plan import FIT_OPTIONS

    # torch's names: docs/backends.md
    names = [*registry.constructors(), *FUNCTIONS, "param_count", "rank", "world_size"]
    missing = [name for name in names if f"`{name}(" not in DOC and f"`{name}`" not in DOC]
    assert missing == []
    assert [o for o in FIT_OPTIONS if f"`{o}`" not in DOC] == []


ZOO = DOC.split("## Zoo", 1)[1].split("\n## ", 1)[0]
ONE_LINERS = [line for cell in re.findall(r"^\| `(\w+)\(.*\| (`let .*`) \|$", ZOO, re.M)
              for line in re.findall(r"`(let [^`]*)`", cell[1])]


def test_every_zoo_model_has_a_one_line_example_that_runs(tmp_path, capsys):
    from apsi_layers.layers import zoo

    assert len(ONE_LINERS) >= 7
    documented = {re.match(r"let \w+ = (\w+)\(", line).group(1) for line in ONE_LINERS}
    assert documented >= {"mlp", "resnet_mlp", "cnn_classifier", "lstm_classifier", "transformer_lm",
                          "gcn_classifier", "vae"}
    assert all(hasattr(zoo, name) for name in documented)
    check = "print({0}.kind, param_count({0}.init(seed=0)) > 0)"
    lines = "\n".join(f"{line}\n{check.format(line.split()[1])}" for line in ONE_LINERS)
    old = permissions.current()
    try:
        run_source("use layers\nuse nn\nlet vocab = 50\n" + lines, filename=str(tmp_path / "zoo.apsi"),
                   grants=permissions.Grants(project_root=tmp_path))
    finally:
        permissions.set_current(old)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(ONE_LINERS) and all(line.endswith(" true") for line in out)
