"""Hostile model files: each refused with a message naming the file and the part, never a Python
traceback, never a model."""

import json
import zipfile

import pytest

from .conftest import apsi

SAVE = '''
use layers
use nn
let k = 2.0
let net = sequential(dense(3, inputs=2), lambda_layer(fn(x) => x * k), dense(2))
save_model("good.apsim", net, net.init(seed=0))
'''
LOAD = 'use layers\nlet m = load_model("bad.apsim")\nprint("loaded", m.net)\n'


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    (folder / "s.apsi").write_text(SAVE)
    r = apsi(["s.apsi"], folder)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(folder / "good.apsim") as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def write(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)


def edited(good, change):
    d = json.loads(good["model.json"])
    change(d)
    return {**good, "model.json": json.dumps(d).encode()}


def refused(tmp_path, *flags):
    (tmp_path / "p.apsi").write_text(LOAD)
    r = apsi([*flags, "p.apsi"], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "loaded" not in r.stdout and 'File "' not in r.stderr
    assert "bad.apsim" in r.stderr
    return r.stderr


def test_good_file_loads(tmp_path, good):
    write(tmp_path / "bad.apsim", good)
    (tmp_path / "p.apsi").write_text(LOAD)
    r = apsi(["p.apsi"], tmp_path)
    assert r.returncode == 0 and "loaded" in r.stdout, r.stderr


def test_truncated(tmp_path, good):
    write(tmp_path / "whole.apsim", good)
    data = (tmp_path / "whole.apsim").read_bytes()
    (tmp_path / "bad.apsim").write_bytes(data[: len(data) // 2])
    assert "damaged" in refused(tmp_path)


def test_tampered_bytes_fail_the_crc(tmp_path, good):
    write(tmp_path / "whole.apsim", good)
    data = bytearray((tmp_path / "whole.apsim").read_bytes())
    at = data.index(b"\x93NUMPY") + 130           # inside the first array's numbers (header: 128)
    data[at] ^= 0xFF
    (tmp_path / "bad.apsim").write_bytes(bytes(data))
    assert "damaged" in refused(tmp_path)


def test_zip_bomb_refused_before_inflating(tmp_path, good):
    members = dict(good)
    members["params/dense.w.npy"] = good["params/dense.w.npy"][:128] + b"\0" * (50 << 20)
    write(tmp_path / "bad.apsim", members, zipfile.ZIP_DEFLATED)
    assert (tmp_path / "bad.apsim").stat().st_size < 1 << 20
    err = refused(tmp_path)
    assert "zip bomb" in err or "unpack" in err


def test_size_cap(tmp_path, good):
    write(tmp_path / "bad.apsim", good)
    (tmp_path / "p2.apsi").write_text('use layers\nload_model("bad.apsim", max_mb=0.0001)\n')
    r = apsi(["p2.apsi"], tmp_path)
    assert r.returncode == 1 and "max_mb" in r.stderr and 'File "' not in r.stderr


def test_unknown_layer(tmp_path, good):
    write(tmp_path / "bad.apsim", edited(good, lambda d: d["layers"][0].update(kind="dense_plus")))
    err = refused(tmp_path)
    assert "layers[0] (dense_plus)" in err and "unknown layer kind" in err


def test_unknown_option(tmp_path, good):
    write(tmp_path / "bad.apsim", edited(good, lambda d: d["layers"][0]["options"].update(colour="red")))
    err = refused(tmp_path)
    assert "layers[0] (dense)" in err and "unknown option 'colour'" in err


def test_plugin_layer_named_with_its_package(tmp_path, good):
    def change(d):
        d["layers"][0].update(kind="scale", plugin={"name": "scale", "package": "apsi-scale-layers"})
    write(tmp_path / "bad.apsim", edited(good, change))
    err = refused(tmp_path)
    assert "apsi-scale-layers" in err and "pip install apsi-scale-layers" in err


def test_shapes_not_matching_the_description(tmp_path, good):
    write(tmp_path / "bad.apsim", edited(good, lambda d: d["layers"][0]["args"].__setitem__(0, 5)))
    err = refused(tmp_path)
    assert "params/" in err or "parameter dense.w" in err


def test_array_with_python_objects(tmp_path, good):
    import io

    import numpy as np

    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([object()], dtype=object), allow_pickle=True)
    write(tmp_path / "bad.apsim", {**good, "params/dense.b.npy": buf.getvalue()})
    err = refused(tmp_path)
    assert "params/dense.b.npy" in err and "not numbers" in err


def test_extra_member(tmp_path, good):
    write(tmp_path / "bad.apsim", {**good, "run.py": b"import os"})
    assert "run.py" in refused(tmp_path)


@pytest.mark.parametrize("text, said", [
    ("fn(x) => x +", "does not compile"),
    ('fn(x) => len(write_text("apsi.toml", "x"))', "calls write_text"),
    ('fn(x) => x * len(read_text("/etc/hostname"))', "calls read_text"),
    ('fn(x) => x\n)\nprint("smuggled")\nlet y = (1', "not one function"),
    ("fn(x) => x.__class__", "does not compile"),
])
def test_lambda_sources(tmp_path, good, text, said):
    write(tmp_path / "bad.apsim", edited(good, lambda d: d["functions"][0].update(text=text)))
    err = refused(tmp_path, "--allow-python", "--allow-write", "--allow-read")
    assert said in err and "functions[0]" in err
    assert not (tmp_path / "apsi.toml").exists()


def test_stored_function_runs_without_the_programs_permissions(tmp_path, good):
    """A function that writes through nn (no builtin named) compiles, but runs under no permissions:
    the program's --allow-write does not reach it."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.npz"
    text = f'fn(x) => x * len(save_params("{outside}", {{a: x}}))'
    write(tmp_path / "bad.apsim", edited(good, lambda d: d["functions"][0].update(text=text)))
    (tmp_path / "p.apsi").write_text('use layers\nuse nn\nlet m = load_model("bad.apsim")\n'
                                     'print(predict(m.net, m.params, ones(1, 2)))\n')
    r = apsi(["--allow-write", "--allow-python", "p.apsi"], tmp_path)
    assert r.returncode == 1 and "a model file's function may only compute" in r.stderr, r.stderr
    assert not outside.exists()


def test_a_kind_that_is_not_a_layer_is_not_called(tmp_path, good):
    """A node's kind picks a constructor: save_model there (any of `use layers`' functions) was called
    while loading, with the loading program's permissions, and overwrote another model in the folder."""
    (tmp_path / "victim.apsim").write_bytes(b"the user's model")
    zeros = {"tensor": {"dtype": "float64", "shape": [2], "data": [0, 0]}}
    square = {"tensor": {"dtype": "float64", "shape": [2, 2], "data": [0, 0, 0, 0]}}

    def change(d):
        n = len(d["layers"])
        d["layers"].append({"kind": "dense", "args": [2], "options": {}, "inputs": [2]})
        d["layers"].append({"kind": "save_model", "args": [
            "victim", {"layer": n}, {"record": {"w": square, "b": zeros}}]})
        d["layers"][0]["options"]["activation"] = {"layer": n + 1}
    write(tmp_path / "bad.apsim", edited(good, change))
    err = refused(tmp_path)
    assert "unknown layer kind 'save_model'" in err
    assert (tmp_path / "victim.apsim").read_bytes() == b"the user's model"


def test_labels_that_do_not_fit_the_outputs(tmp_path, good):
    """One label for a model of two outputs loaded, and every served request was then a 422."""
    write(tmp_path / "bad.apsim", edited(good, lambda d: d.update(labels=["only"])))
    err = refused(tmp_path)
    assert "model.json: it has 1 labels but the model gives 2 classes" in err
