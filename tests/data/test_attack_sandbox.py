"""A hostile program or data file against load_npy and the path checks (the sandbox attack round on
the data features): each test fails on the code before its fix."""

import os

import numpy as np
import pytest

from .run import error, ok


def _header_only(path, shape, descr="<f8"):
    """A .npy file of just a header: what a file that lies about its rows looks like."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})


def test_a_header_promising_rows_of_no_bytes_is_refused(tmp_path):
    """Rows of shape [0] take no bytes, so the size check let a 128-byte file promise 2**62 rows:
    save_npy of it (or `for row in x`) then looped for ever, and x[0:3] failed with NumPy's 'array is
    too big'."""
    _header_only(tmp_path / "z.npy", (2 ** 62, 0))
    said = error(tmp_path, 'use nn\nlet x = load_npy("z.npy")\nprint(len(x))\nsave_npy("out.npy", x)\n',
                 timeout=60)
    assert ("load_npy: 'z.npy' has rows that hold no numbers (shape [4611686018427387904, 0]); a data file's "
            "rows hold one number at least") in said, said
    assert not (tmp_path / "out.npy").exists()


def test_a_slice_of_a_mapped_array_reads_only_its_rows(tmp_path):
    """x[0:3] made an array of every row number first (np.arange(n)[0:3]): 8 bytes a row, 8 TB for
    this (sparse) file of 10**12 rows, so a slice of a large file failed or took all memory."""
    big = tmp_path / "big.npy"
    _header_only(big, (10 ** 12, 1), "|u1")
    with open(big, "r+b") as f:
        f.truncate(f.seek(0, 2) + 10 ** 12)         # sparse: no disk, no memory
        f.seek(-1, 2)
        f.write(b"\x07")                             # the last row
    x = np.arange(12.0).reshape(6, 2)
    np.save(tmp_path / "x.npy", x)
    out = ok(tmp_path, """use nn
let b = load_npy("big.npy")
print(b[0:3].shape, b[-2:].tolist(), b[10 ** 12 - 1:].tolist())
let x = load_npy("x.npy")
for part in [x[1:5:2], x[::-1], x[10:20], x[-2:], x[5:1:-2], x[-100:2]]:
    print(part.tolist())
""", timeout=60).splitlines()
    assert out[0] == "(3, 1) [[0], [7]] [[7]]", out
    want = [x[1:5:2], x[::-1], x[10:20], x[-2:], x[5:1:-2], x[-100:2]]
    assert out[1:] == [str(w.tolist()) for w in want], out


@pytest.mark.skipif(not os.path.isdir("/proc/1"), reason="Linux /proc only")
def test_a_link_the_system_will_not_let_us_follow_is_said_in_apsis_words(tmp_path):
    """read_text("/proc/1/cwd/x") (another user's process) ended in Python's 'PermissionError: [Errno
    13] Permission denied' raised while the path was resolved for the check."""
    try:
        os.readlink("/proc/1/cwd")
    except PermissionError:
        pass
    else:
        pytest.skip("this user may follow /proc/1/cwd (root, or pid 1 is ours)")
    for call in ('read_text("/proc/1/cwd/x")', 'load_npy("/proc/1/cwd/x.npy")',
                 'write_text("/proc/1/cwd/x.txt", "hi")'):
        said = error(tmp_path, f"use nn\n{call}\n", timeout=60)
        assert f"{call.split('(')[0]}(\"/proc/1/cwd/x" in said, said
        assert ": cannot follow '/proc/1/cwd/x" in said and "(Permission denied); name a file" in said, said
        assert "PermissionError" not in said, said
