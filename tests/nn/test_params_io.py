"""save_params / load_params: round trip, atomic write, checks, permissions, no pickles."""

import os

import numpy as np
import pytest

from apsi_lang import permissions
from apsi_lang.errors import ApsiError, PermissionDenied
from apsi_lang.values import Record
from apsi_layers import nn


@pytest.fixture
def project(tmp_path):
    old = permissions.current()
    permissions.set_current(permissions.Grants(project_root=tmp_path))
    yield tmp_path
    permissions.set_current(old)


def params():
    return Record(layers=[Record(w=nn.randn(2, 3, seed=0), b=nn.zeros(3))], step=nn.array(3, dtype="int"))


def test_round_trip(project):
    path = str(project / "m.npz")
    assert nn.save_params(path, params()) == path
    back = nn.load_params(path, like=params())
    np.testing.assert_array_equal(back.layers[0].w.data, params().layers[0].w.data)
    assert back.step.dtype == "int64"
    assert nn.save_params(params(), str(project / "noext")).endswith("noext.npz")   # either order
    assert [f for f in os.listdir(project) if f.endswith(".tmp")] == []


def test_write_is_atomic(project, monkeypatch):
    path = project / "m.npz"
    nn.save_params(str(path), params())
    before = path.read_bytes()

    def crash(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(np.lib.format, "write_array", crash)
    with pytest.raises(ApsiError, match="cannot write"):
        nn.save_params(str(path), Record(w=nn.ones(5)))
    assert path.read_bytes() == before
    assert sorted(os.listdir(project)) == ["m.npz"]


def test_load_checks(project):
    path = str(project / "m.npz")
    nn.save_params(path, params())
    with pytest.raises(ApsiError, match=r"does not match the model: missing extra.*layers.0.w is \(2, 3\)"):
        nn.load_params(path, like=Record(layers=[Record(w=nn.zeros(3, 3), b=nn.zeros(3))], step=1, extra=1))
    with pytest.raises(ApsiError, match="there is no file"):
        nn.load_params(str(project / "nope.npz"))
    (project / "bad.npz").write_text("not a zip")
    with pytest.raises(ApsiError, match="not a parameter file"):
        nn.load_params(str(project / "bad.npz"))


def test_pickled_arrays_are_refused(project):
    path = str(project / "evil.npz")
    np.savez(path, w=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ApsiError, match="not a parameter file"):
        nn.load_params(path)


def test_permissions_outside_the_project(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    with pytest.raises(PermissionDenied, match="needs permission 'write'"):
        nn.save_params(str(elsewhere / "m.npz"), params())
    assert not (elsewhere / "m.npz").exists()
    np.savez(str(elsewhere / "m.npz"), w=np.ones(2))
    with pytest.raises(PermissionDenied, match="needs permission 'read'"):
        nn.load_params(str(elsewhere / "m.npz"))


@pytest.mark.parametrize("key", ["allow_pickle", "file", "args", "kwds"])
def test_keys_named_like_numpys_options_are_saved(project, key):
    """np.savez(f, **arrays) took `allow_pickle` as its own option (the entry vanished) and failed on
    `file` with a Python TypeError (issue 15)."""
    path = str(project / "m.npz")
    tree = {key: nn.array([1.0, 2.0]), "w": nn.zeros(2)}
    nn.save_params(path, tree)
    assert sorted(np.load(path).files) == sorted([key, "w"])      # NumPy reads it as its own .npz
    back = nn.load_params(path, like=tree)
    np.testing.assert_array_equal(getattr(back, key).data, [1.0, 2.0])
