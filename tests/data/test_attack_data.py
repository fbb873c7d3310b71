"""What a new user met with issue 32's data features (the third attack round): each test fails on
the code before its fix."""

import numpy as np

from .run import ok


def test_nan_category_code_is_the_unknown_column_in_fit_and_predict(tmp_path):
    """A missing category (NaN in the codes) was skipped by adapt but refused by fit and predict
    ('inputs hold nan …; an imputation layer fills them', and impute cannot fill a code): it is the
    unknown column, as any code adapt did not keep."""
    codes = np.array([1.0, 2.0, np.nan, 2.0, 5.0, np.nan, 1.0, 2.0])
    np.save(tmp_path / "c.npy", codes.reshape(-1, 1))
    np.save(tmp_path / "y.npy", np.arange(8.0).reshape(-1, 1))
    ok(tmp_path, """use layers
use nn
let c = load_npy("c.npy")
let net = sequential(category_lookup(2), dense(1))
let p = adapt(net, net.init(seed=0, input_shape=[1]), c)
let r = fit(net, p, c, load_npy("y.npy"), loss="mse", epochs=2, batch_size=4, verbose=false)
save_params("p.npz", r.params)
save_npy("out.npy", predict(net, r.params, c))
""")
    p = np.load(tmp_path / "p.npz")
    assert np.array_equal(p["category_lookup.state.values"], [1.0, 2.0])
    onehot = np.zeros((8, 3))
    onehot[np.arange(8), [1, 2, 0, 2, 0, 0, 1, 2]] = 1      # NaN and 5 (not kept): column 0
    want = onehot @ p["dense.w"] + p["dense.b"]
    assert np.allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-12, atol=1e-12)
