"""Issue 28: array() of a list with gaps said only "not a list of 600 items"; it names the first none
(its index) and what to do, and where a list stops being numbers of equal lengths."""

import os
import subprocess
import sys

import pytest

from apsi_lang.errors import ApsiError
from apsi_layers import nn


@pytest.mark.parametrize("data, says", [
    ([1.0, 2.0] + [None] * 3, "list[2] is none, not a number; fill the gaps first"),
    ([[1, 2], [None, 4.0]], "list[1, 0] is none, not a number; fill the gaps first"),
    ([[1, 2], [3]], "list[1] is a list of 1 but list[0] is a list of 2"),
    ([1, "a"], 'list[1] is "a", not a number'),
])
def test_array_names_where_the_list_is_not_numbers(data, says):
    with pytest.raises(ApsiError) as e:
        nn.array(data)
    assert e.value.message.startswith("array: expects a number or a nested list of numbers with equal "
                                      "lengths; " + says), e.value.message


def test_a_program_learns_the_index_of_the_first_none(tmp_path):
    code = ("use nn\nlet xs = [i * 1.0 for i in range(600)]\nxs[417] = none\nxs[500] = none\n"
            "let t = array(xs)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    p = subprocess.run([sys.executable, "-m", "apsi", "-e", code], cwd=tmp_path, capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 1
    assert ("<-e>:5:9: error: array: expects a number or a nested list of numbers with equal lengths; "
            "list[417] is none, not a number; fill the gaps first, e.g. [0.0 if v == none else v for v "
            "in xs]") in p.stderr, p.stderr
    assert "600 items" not in p.stderr and "Traceback (most recent call last):\n  File" not in p.stderr
