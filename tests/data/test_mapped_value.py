"""A load_npy value behaves like the tensor it stands for, or refuses in Apsi's words (issue 32's
attack): iteration, shape, boolean and empty indexes, arithmetic, damaged headers; and the batch
checks of mapped files and datasets name the file and row, or the batch."""

import numpy as np
import pytest

from .run import error, ok


@pytest.fixture
def rows(tmp_path):
    a = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    np.save(tmp_path / "x.npy", a)
    return a


def test_iterating_gives_rows_as_a_tensor_does(tmp_path, rows):
    out = ok(tmp_path, """use nn
let x = load_npy("x.npy")
let n = 0
let total = 0.0
for r in x:
    n = n + 1
    total = total + r[3]
let all = list(x)
print(n, total, len(all), all[999], all[0].shape)
""")
    n, total, count, last = out.split(" ", 3)
    assert (int(n), float(total), int(count)) == (1000, float(rows[:, 3].astype(np.float64).sum()), 1000)
    assert last.startswith("tensor([3996., 3997., 3998., 3999.]) (4,)")


def test_iteration_reads_a_block_at_a_time(project_with_python, rows, monkeypatch):
    """Never the whole file: each read is one block of rows (ITER_BYTES), read when the loop gets there."""
    from apsi_layers.data import memmap

    monkeypatch.setattr(memmap, "ITER_BYTES", 16 * 100)     # 100 rows of 4 float32
    m = memmap.load_npy("x.npy")
    asked = []
    take = m.take
    monkeypatch.setattr(m, "take", lambda idx, *a: asked.append(len(idx)) or take(idx, *a))
    it = iter(m)
    assert np.array_equal(next(it).data, rows[0]) and asked == [100]
    assert np.array_equal([r.data for r in it][-1], rows[-1]) and asked == [100] * 10


def test_sum_max_of_a_mapped_array_are_refused_saying_what_to_do(tmp_path, rows):
    for call in ("sum(x)", "min(x, 1)"):
        msg = error(tmp_path, f'use nn\nlet x = load_npy("x.npy")\nprint({call})\n')
        name = call.split("(")[0]
        assert (f"{name}() of a mapped array ([1000, 4] float32 in 'x.npy')" in msg
                and f"e.g. {name}(x[0:1000])" in msg), msg


def test_shape_is_a_tuple_equal_to_a_tensors(tmp_path, rows):
    out = ok(tmp_path, 'use nn\nlet x = load_npy("x.npy")\nprint(x.shape, x.shape == zeros(1000, 4).shape, '
                       'x[0:3].shape == x.shape)\n')
    assert out.strip() == "(1000, 4) true false"


def test_boolean_and_empty_row_indexes_as_a_tensor(tmp_path, rows):
    mask = [i % 3 == 0 for i in range(1000)]
    out = ok(tmp_path, f"""use nn
let x = load_npy("x.npy")
let t = load_npy("x.npy", mmap=false)
save_npy("m.npy", x[{str(mask).lower()}])
print(x[[]].shape, t[[]].shape)
""")
    assert np.array_equal(np.load(tmp_path / "m.npy"), rows[np.array(mask)])
    assert out.strip() == "(0, 4) (0, 4)"
    msg = error(tmp_path, 'use nn\nlet x = load_npy("x.npy")\nprint(x[[true, false]])\n')
    assert ("boolean index did not match indexed mapped array along axis 0; size of axis is 1000 but size "
            "of corresponding boolean axis is 2") in msg, msg


@pytest.mark.parametrize("expr, said", [
    ("x + 1", "'+' does not work on a mapped array ([1000, 4] float32 in 'x.npy': rows on disk"),
    ("-x", "'-' does not work on a mapped array"),
    ("float(x)", "float() of a mapped array ([1000, 4] float32 in 'x.npy'): it holds many numbers, not one; "
                 "index one first, e.g. float(x[0, 0])"),
])
def test_arithmetic_and_conversion_say_what_the_value_is(tmp_path, rows, expr, said):
    msg = error(tmp_path, f'use nn\nlet x = load_npy("x.npy")\nprint({expr})\n')
    assert said in msg and "Mapped" not in msg, msg
    if "float()" not in said:
        assert "index it first: x[a:b] is a tensor of those rows, e.g. x[0:1000]" in msg, msg


@pytest.mark.parametrize("shape, said", [((-5, 4), "its shape [-5, 4] has a negative length"),
                                         ((5, 2 ** 62, 4), "is too large for any file")])
def test_a_header_with_an_impossible_shape_is_refused_at_load(tmp_path, shape, said):
    with open(tmp_path / "bad.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        f.write(bytes(80))
    msg = error(tmp_path, 'use nn\nlet x = load_npy("bad.npy")\nprint(len(x))\n')
    assert "load_npy: 'bad.npy' has a damaged header: " in msg and said in msg, msg


EMBED = """use layers
use nn
let net = sequential(embedding(10, 2))
let p = net.init(seed=0, input_shape=[3])
"""


def test_token_ids_of_a_mapped_file_name_the_file_and_row(tmp_path):
    ids = np.zeros((300, 3), np.int64)
    ids[270, 1] = 99
    np.save(tmp_path / "a.npy", ids[:200])
    np.save(tmp_path / "b.npy", ids[200:])
    np.save(tmp_path / "y.npy", np.zeros((300, 3, 2)))
    fit = 'fit(net, p, load_npy(["a.npy", "b.npy"]), load_npy("y.npy"), loss="mse")\n'
    msg = error(tmp_path, EMBED + fit)
    assert "fit: token id 99 at row 270 (file 'b.npy', its row 70) is out of range (ids 0..9)" in msg, msg
    frac = ids.astype(np.float32)
    frac[5, 0] = 0.5
    np.save(tmp_path / "a.npy", frac[:200])
    np.save(tmp_path / "b.npy", frac[200:])
    msg = error(tmp_path, EMBED + fit)
    assert "inputs must be int token ids; row 5 (file 'a.npy') holds fractional numbers" in msg, msg


ROWS_99 = "[[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 99, 0]]"
ROWS_HALF = "[[0, 0, 0], [0, 0, 0], [0.5, 0, 0], [0, 0, 0]]"


@pytest.mark.parametrize("bad, said", [
    (ROWS_99, "token id 99 at row 3 of x at batch 8 (epoch 1) is out of range (ids 0..9)"),
    (ROWS_HALF, "the model starts with an embedding, so inputs must be int token ids; row 2 of x at batch 8 "
                "(epoch 1) holds fractional numbers"),
])
def test_token_ids_of_a_dataset_name_the_batch(tmp_path, bad, said):
    msg = error(tmp_path, EMBED + f"""fn batch(i):
    let x = zeros(4, 3)
    if i == 8:
        x = array({bad})
    return [x, zeros(4, 3, 2)]
fit(net, p, dataset(10, batch, workers=0), loss="mse", seed=1)
""")
    assert "fit: " + said in msg, msg


def test_a_dataset_of_samples_with_no_numbers_says_so(tmp_path):
    msg = error(tmp_path, """use layers
use nn
let net = mlp(4, 1, hidden=[4])
fit(net, net.init(seed=0), dataset(4, fn(i) => [zeros(8, 0), zeros(8, 1)], workers=0), loss="mse")
""")
    assert ("fit: the dataset function returned x of shape [8, 0] at batch 0: samples of per-sample shape "
            "[0], with no numbers") in msg, msg
