"""save_params / load_params: one naming rule both ways, and metadata (text, numbers, booleans, none)
kept in the tree without pickling (issue 19, data files)."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from apsi_lang.errors import ApsiError, PermissionDenied
from apsi_lang.values import Record
from apsi_layers import nn

ROOT = Path(__file__).resolve().parents[2]


def test_the_name_rule_is_the_same_both_ways(inside):
    """save_params("m2", p) wrote m2.npz and load_params("m2") said there was no file."""
    assert nn.save_params("m2", Record(w=nn.ones(2))) == "m2.npz"
    assert nn.load_params("m2").w.tolist() == [1.0, 1.0]
    assert nn.load_params("m2.npz").w.tolist() == [1.0, 1.0]
    with pytest.raises(ApsiError, match="there is no file m3.npz"):
        nn.load_params("m3")


def test_a_file_named_otherwise_by_another_tool_is_still_read(inside):
    np.savez("weights.npz", w=np.ones(2))
    os.rename("weights.npz", "weights.bin")
    assert nn.load_params("weights.bin").w.tolist() == [1.0, 1.0]


def test_the_other_name_needs_its_permission_before_it_is_looked_at(inside, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    np.savez(str(elsewhere / "m.npz"), w=np.ones(2))
    with pytest.raises(PermissionDenied, match="needs permission 'read'"):
        nn.load_params(str(elsewhere / "m"))


def test_metadata_round_trips_in_place(inside):
    p = Record(name="tiny", lr=0.01, epochs=3, big=2 ** 70, norm=True, note=None, loss=float("nan"),
               layers=[Record(w=nn.randn(2, 2, seed=0), act="tanh")], vocab=["a", "b", "ç"])
    nn.save_params("m", p)
    q = nn.load_params("m", like=p)
    assert list(vars(q)) == list(vars(p))                  # fields in the saved order
    assert (q.name, q.lr, q.epochs, q.big, q.norm, q.note) == ("tiny", 0.01, 3, 2 ** 70, True, None)
    assert type(q.epochs) is int and type(q.norm) is bool and q.loss != q.loss
    assert q.layers[0].act == "tanh" and q.vocab == ["a", "b", "ç"]
    np.testing.assert_array_equal(q.layers[0].w.data, p.layers[0].w.data)


def test_metadata_is_json_not_pickle(inside):
    nn.save_params("m", Record(w=nn.zeros(2), tag="x"))
    with zipfile.ZipFile("m.npz") as z:
        assert sorted(z.namelist()) == ["_meta.json", "w.npy"]
        assert json.loads(z.read("_meta.json")) == {"order": ["w", "tag"], "values": {"tag": "x"}}
    assert np.load("m.npz", allow_pickle=False)["w"].tolist() == [0.0, 0.0]   # NumPy still reads it


def test_only_metadata_is_a_tree_too(inside):
    nn.save_params("cfg", Record(width=4, kind="mlp"))
    assert vars(nn.load_params("cfg")) == {"width": 4, "kind": "mlp"}


def test_files_without_metadata_are_unchanged(inside):
    nn.save_params("m", Record(w=nn.zeros(2)))
    with zipfile.ZipFile("m.npz") as z:
        assert z.namelist() == ["w.npy"]


@pytest.mark.parametrize("meta, match", [
    (b"not json", "metadata .* is not JSON"),
    (b'{"order": ["w", "x"], "values": {"x": [1]}}', "not text, a number"),
    (b'{"order": ["w", "_x"], "values": {"_x": 1}}', "'_x' is not a parameter name"),
    (b'{"order": ["w"], "values": {"x": 1}}', "list of names does not match"),
    (b'{"order": ["w", "w"], "values": {"w": 1}}', "both an array and metadata"),
    (b'[1]', "expected an object"),
])
def test_damaged_metadata_is_refused(inside, meta, match):
    nn.save_params("m", Record(w=nn.zeros(2)))
    with zipfile.ZipFile("m.npz", "a") as z:
        z.writestr("_meta.json", meta)
    with pytest.raises(ApsiError, match=match):
        nn.load_params("m")


def test_like_compares_metadata_by_name_and_kind(inside):
    nn.save_params("m", Record(w=nn.zeros(2), tag="x"))
    nn.load_params("m", like=Record(w=nn.ones(2), tag="y"))
    with pytest.raises(ApsiError, match="missing lr; unexpected tag"):
        nn.load_params("m", like=Record(w=nn.ones(2), lr=0.1))
    with pytest.raises(ApsiError, match=r"tag is text, expected \(2,\)"):
        nn.load_params("m", like=Record(w=nn.ones(2), tag=nn.ones(2)))


def test_an_apsi_program_saves_and_loads_without_the_extension(tmp_path):
    (tmp_path / "t.apsi").write_text("""use nn
let p = {w: ones(2), act: "relu", lr: 0.5, epochs: 2, norm: false}
save_params("m2", p)
let q = load_params("m2", like=p)
print(q.act, q.lr, q.epochs, q.norm, q.w * q.lr)
try:
    load_params("nope")
catch e:
    print(e.message)
""")
    r = subprocess.run([sys.executable, "-m", "apsi", "t.apsi"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "relu 0.5 2 false tensor([0.5, 0.5])\nload_params: there is no file nope.npz\n"
    assert (tmp_path / "m2.npz").exists() and not (tmp_path / "m2").exists()
