"""load_npy / save_npy (issue 32): shards as one array read by rows, and every bad file named."""

import os

import numpy as np
import pytest

from .run import error, ok


@pytest.fixture
def shards(tmp_path):
    a = np.random.default_rng(0).normal(size=(700, 3, 2)).astype(np.float32)
    np.save(tmp_path / "a.npy", a[:250])
    np.save(tmp_path / "b.npy", a[250:])
    return a


def test_shards_are_one_array_len_shape_slices_and_indexing(tmp_path, shards):
    out = ok(tmp_path, """use nn
let x = load_npy(["a.npy", "b.npy"])
print(len(x), x.shape, x.dtype)
save_npy("s1.npy", x[240:260])
save_npy("s2.npy", x[[699, 3, 250, 3]])
save_npy("s3.npy", x[-1])
save_npy("s4.npy", x[10:20, 1])
save_npy("all.npy", load_npy(["a.npy", "b.npy"], mmap=false))
""")
    assert out.split("\n")[0] == "700 (700, 3, 2) float32"
    ref = shards.astype(np.float64)
    assert np.array_equal(np.load(tmp_path / "s1.npy"), ref[240:260])
    assert np.array_equal(np.load(tmp_path / "s2.npy"), ref[[699, 3, 250, 3]])
    assert np.array_equal(np.load(tmp_path / "s3.npy"), ref[-1])
    assert np.array_equal(np.load(tmp_path / "s4.npy"), ref[10:20, 1])
    assert np.array_equal(np.load(tmp_path / "all.npy"), ref)


def test_rows_in_any_order_across_shards(project_with_python, shards):
    """Rows are read in ascending file order (runs merged) and handed back in the order asked."""
    from apsi_layers.data.memmap import load_npy

    m = load_npy(["a.npy", "b.npy"])
    idx = np.array([699, 0, 251, 250, 249, 5, 5])
    assert np.array_equal(m.take(idx), shards[idx])


def test_save_npy_writes_atomically_and_np_load_reads_it(tmp_path):
    ok(tmp_path, 'use nn\nsave_npy("x.npy", array([[1, 2], [3, 4]]))\n')
    assert np.array_equal(np.load(tmp_path / "x.npy"), [[1, 2], [3, 4]])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("second, said", [
    (np.zeros((5, 3, 2), np.float64), "holds float64 rows of shape [3, 2] but 'a.npy' holds float32"),
    (np.zeros((5, 3, 3), np.float32), "holds float32 rows of shape [3, 3] but 'a.npy' holds float32 rows "
                                      "of shape [3, 2]"),
])
def test_a_shard_of_another_dtype_or_shape_is_named(tmp_path, shards, second, said):
    np.save(tmp_path / "c.npy", second)
    msg = error(tmp_path, 'use nn\nlet x = load_npy(["a.npy", "c.npy"])\n')
    assert "load_npy: shard 'c.npy' " + said in msg


def test_a_truncated_npy_is_named(tmp_path, shards):
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(raw[:-100])
    msg = error(tmp_path, 'use nn\nlet x = load_npy("cut.npy")\n')
    assert "load_npy: 'cut.npy' is truncated: its header promises 250 rows" in msg


def test_not_an_npy_file(tmp_path):
    (tmp_path / "x.npy").write_text("hello")
    assert "'x.npy' is not a .npy file" in error(tmp_path, 'use nn\nlet x = load_npy("x.npy")\n')


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_named_pipe_is_refused_at_once_not_waited_on(tmp_path):
    """open() of a FIFO waits for a writer: load_npy of one hung the program for ever."""
    os.mkfifo(tmp_path / "x.npy")
    msg = error(tmp_path, 'use nn\nlet x = load_npy("x.npy")\n', timeout=60)
    assert 'load_npy("x.npy"): it is not a regular file (a named pipe, a device or a socket)' in msg


@pytest.mark.parametrize("reader", ["process", "thread"])
@pytest.mark.parametrize("change", ["cut", "grow"])
def test_a_file_changing_size_during_fit_is_named_at_the_next_read(project_with_python, monkeypatch, change,
                                                                   reader):
    """Another program cuts the mapped file short (or appends to it) after epoch 1: the next read
    (in the reader process or the read-ahead thread) fails naming the file, never a silently wrong
    batch or SIGBUS."""
    monkeypatch.setenv("APSI_READ_AHEAD", reader)
    from apsi_lang.errors import ApsiError
    from apsi_layers.data.memmap import load_npy
    from apsi_layers.layers import fit, mlp

    x = np.random.default_rng(1).normal(size=(400, 4))
    np.save("x.npy", x)

    def touch(epoch, logs):
        with open("x.npy", "r+b") as f:
            f.truncate(1000) if change == "cut" else (f.seek(0, 2), f.write(b"0" * 64))

    net = mlp(4, 1, hidden=[8])
    with pytest.raises(ApsiError, match="'x.npy' changed size while it was in use"):
        fit(net, net.init(seed=0), load_npy("x.npy"), x[:, :1], loss="mse", epochs=3, batch_size=50,
            on_epoch=touch)


def test_a_file_replaced_atomically_keeps_the_loaded_one(tmp_path):
    """save_npy replaces the name, not the bytes: a loaded array goes on reading the file it opened."""
    np.save(tmp_path / "x.npy", np.arange(10.0))
    out = ok(tmp_path, 'use nn\nlet x = load_npy("x.npy")\nsave_npy("x.npy", zeros(3))\n'
                       'print(x[9].item(), len(load_npy("x.npy")))\n')
    assert out.strip() == "9.0 3"


def test_save_npy_outside_the_project_needs_write(tmp_path):
    out = tmp_path / "proj"
    out.mkdir()
    msg = error(out, f'use nn\nsave_npy("{tmp_path}/x.npy", zeros(2))\n')
    assert "permission 'write'" in msg
