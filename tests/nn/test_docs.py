"""Every ```apsi example in docs/nn.md runs as written."""

import re
from pathlib import Path

import pytest

from apsi_lang import permissions, run_source

DOC = Path(__file__).resolve().parents[2] / "docs" / "nn.md"
BLOCKS = re.findall(r"```apsi\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 12


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs(source, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    old = permissions.current()
    try:
        run_source(source, filename=str(tmp_path / "doc.apsi"),
                   grants=permissions.Grants(project_root=tmp_path))
    finally:
        permissions.set_current(old)
    assert capsys.readouterr().out.strip()


def test_every_export_is_documented():
    from apsi_layers.apsi_modules import nn_module

    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in nn_module() if f"`{name}(" not in text and f" {name}(" not in text]
    assert missing == []
