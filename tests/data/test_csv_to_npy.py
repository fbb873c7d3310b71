"""csv_to_npy (issue 32): a CSV streamed into .npy shards with load_csv's rules and messages."""

import numpy as np

from .run import error, ok


def test_shards_hold_the_csv_rows_in_order(tmp_path):
    a = np.random.default_rng(0).normal(size=(2500, 3))
    np.savetxt(tmp_path / "t.csv", a, delimiter=",", header="a,b,c", comments="")
    out = ok(tmp_path, """use nn
let files = csv_to_npy("t.csv", "t", shard_rows=1000, dtype="float64", columns=["a", "c"])
print(files)
let x = load_npy(files)
print(x.shape)
""")
    assert out.splitlines() == ['["t-00000.npy", "t-00001.npy", "t-00002.npy"]', "(2500, 2)"]
    got = np.concatenate([np.load(tmp_path / f"t-0000{i}.npy") for i in range(3)])
    assert np.array_equal(got, a[:, [0, 2]])
    assert [len(np.load(tmp_path / f"t-0000{i}.npy")) for i in range(3)] == [1000, 1000, 500]


def test_quoted_cells_take_the_strict_reading(tmp_path):
    (tmp_path / "q.csv").write_text('x,y\n"1",2\n3,"4"\n5,6\n')
    ok(tmp_path, 'use nn\nlet f = csv_to_npy("q.csv", "q", shard_rows=2)\n')
    assert np.load(tmp_path / "q-00000.npy").tolist() == [[1, 2], [3, 4]]
    assert np.load(tmp_path / "q-00001.npy").tolist() == [[5, 6]]


def test_a_bad_cell_is_named_by_line_and_column_as_load_csv_does(tmp_path):
    rows = "\n".join(f"{i},{i * 2}" for i in range(5000))
    (tmp_path / "b.csv").write_text("x,y\n" + rows + "\n7,oops\n")
    msg = error(tmp_path, 'use nn\nlet f = csv_to_npy("b.csv", "b", shard_rows=1000)\n')
    said = error(tmp_path, 'use nn\nlet f = load_csv("b.csv")\n')
    mine = next(line for line in msg.splitlines() if "error: csv_to_npy(" in line)
    theirs = next(line for line in said.splitlines() if "error: load_csv(" in line)
    assert "line 5002" in mine
    # the same place and words; the advice is csv_to_npy's own (it takes no as="columns")
    where = mine.split("error: csv_to_npy(")[1].split(";")[0]
    assert where == theirs.split("error: load_csv(")[1].split(" (pick")[0]
    assert "leave the column out with columns=[…]" in mine and "as=" not in mine


def test_shards_go_into_a_subfolder_as_the_docs_show(tmp_path):
    # the prefix "data/train" has no suffix: the write rules are the shards' (.npy), not the prefix's
    (tmp_path / "data").mkdir()
    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    out = ok(tmp_path, 'use nn\nprint(csv_to_npy("t.csv", "data/train", shard_rows=2))\n')
    assert out.strip() == '["data/train-00000.npy", "data/train-00001.npy"]'
    assert np.load(tmp_path / "data" / "train-00001.npy").tolist() == [[5, 6]]
    msg = error(tmp_path, 'use nn\ncsv_to_npy("t.csv", "nope/train")\n')
    assert 'csv_to_npy: the folder "nope" does not exist; create it first with make_dir' in msg
    msg = error(tmp_path, 'use nn\ncsv_to_npy("t.csv", "test")\n')
    assert "csv_to_npy(out='test') needs permission 'write' for test-00000.npy" in msg


def test_a_shard_larger_than_the_file_asks_no_memory_for_rows_it_cannot_hold(tmp_path):
    # the buffer was shard_rows long whatever the file: 10**12 rows was "out of memory"
    (tmp_path / "t.csv").write_text("a\n1\n2\n3\n4\n5")
    out = ok(tmp_path, 'use nn\nlet f = csv_to_npy("t.csv", "t", shard_rows=10**12)\n'
                       'print(f, load_npy(f).shape)\n')
    assert out.split() == ['["t-00000.npy"]', "(5,", "1)"]
