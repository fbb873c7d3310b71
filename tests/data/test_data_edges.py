"""Edges of the data sources met by using them as a new user would (issue 32's attack pass)."""

import numpy as np

from .run import error


def test_a_mapped_file_of_rows_with_no_numbers_is_refused_as_in_memory(tmp_path):
    # fit and predict skipped the check for mapped inputs: a dense layer built for 0 features
    # failed with Python's "division by zero"
    np.save(tmp_path / "x.npy", np.zeros((10, 0), np.float32))
    for call in ('fit(net, net.init(seed=0), x, zeros(10, 1), loss="mse", epochs=1)',
                 "predict(net, net.init(seed=0), x)"):
        msg = error(tmp_path, f'use nn\nuse layers\nlet x = load_npy("x.npy")\nlet net = mlp(1, 1)\n{call}\n')
        assert "inputs holds samples of per-sample shape [0], with no numbers; the model takes " \
               "per-sample shape [1]" in msg, msg
