"""nn bugs found by trying it as a new user would: each one stays fixed."""

import io
import zipfile

import numpy as np
import pytest

from apsi_lang import permissions, run_source
from apsi_lang.errors import ApsiError
from apsi_layers import nn
from apsi_layers.apsi_modules import nn_module

T = nn.Tensor


def test_sum_takes_the_axis_positionally_as_mean_does():
    s = nn_module()["sum"]
    x = nn.array([[1.0, 2.0], [3.0, 4.0]])
    assert s(x, 1).data.tolist() == [3.0, 7.0]
    assert s(x, 0, True).data.shape == (1, 2)
    assert s([1, 2], 10) == 13            # lists keep Python's start argument


def test_clip_with_tensor_bounds():
    x = nn.array([-3.0, 0.5, 3.0])
    c = nn.array(1.0)
    assert nn.clip(x, -c, c).data.tolist() == [-1.0, 0.5, 1.0]
    assert nn.clip(x, None, nn.array([0.0, 0.0, 2.0])).data.tolist() == [-3.0, 0.0, 2.0]
    g = nn.grad(lambda v: nn.sum(nn.clip(v, -c, c)))(x)
    assert g.data.tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(ApsiError, match=r"clip: hi has shape \(2,\), which does not broadcast"):
        nn.clip(x, None, nn.zeros(2))


def test_power_zero_has_zero_derivative_at_zero():
    for b in (0, 0.0, nn.array([0.0, 0.0])):
        g = nn.grad(lambda v, b=b: nn.sum(v ** b))(nn.zeros(2))
        assert g.data.tolist() == [0.0, 0.0]
    h = nn.hessian(lambda v: nn.sum(v ** 0))(nn.zeros(2))
    assert np.all(h.data == 0)
    g = nn.grad(lambda v: nn.sum(v ** nn.array([0.0, 2.0])))(nn.array([0.0, 3.0]))
    assert g.data.tolist() == [0.0, 6.0]


@pytest.mark.parametrize("call, message", [
    (lambda: nn.transpose(nn.zeros(2, 3), [0, -3]), "transpose: axis -3 is out of range"),
    (lambda: nn.transpose(nn.zeros(2, 3), [2, 0]), "transpose: axis 2 is out of range"),
    (lambda: nn.expand_dims(nn.zeros(2), 7), "expand_dims: axis=7 does not fit"),
    (lambda: nn.expand_dims(nn.zeros(2), -3), "expand_dims: axis=-3 does not fit"),
    (lambda: nn.concat([nn.zeros(2), nn.zeros(2)], 1), "concat: axis=1 does not fit"),
    (lambda: nn.stack([nn.zeros(2), nn.zeros(2)], 3), "stack: axis=3 does not fit"),
])
def test_out_of_range_axes_raise(call, message):
    with pytest.raises(ApsiError, match=message):
        call()


def test_in_range_negative_axes_still_work():
    assert nn.expand_dims(nn.zeros(2), -1).shape == (2, 1)
    assert nn.expand_dims(nn.zeros(2), -2).shape == (1, 2)
    assert nn.transpose(nn.zeros(2, 3), [-1, 0]).shape == (3, 2)
    assert nn.stack([nn.zeros(2), nn.zeros(2)], -1).shape == (2, 2)


def test_duplicate_argnums_refused():
    with pytest.raises(ApsiError, match=r"argnums=\[0, 0\] names the same argument twice"):
        nn.grad(lambda a, b: a * b, [0, 0])(1.0, 2.0)
    with pytest.raises(ApsiError, match="names the same argument twice"):
        nn.grad(lambda a, b: a * b, [1, -1])(1.0, 2.0)


def test_optimizer_state_is_matched_by_shape():
    opt = nn.adam(lr=0.1)
    opt.step(_rec(w=nn.ones(2)), _rec(w=nn.ones(2)))
    with pytest.raises(ApsiError, match=r"parameter 'w' has shape \(3,\) but had \(2,\) at the first step"):
        opt.step(_rec(w=nn.ones(3)), _rec(w=nn.ones(3)))


def test_infinite_gradient_is_reported():
    opt = nn.adam(lr=0.1)
    g = nn.array([1.0, np.inf])
    with pytest.raises(ApsiError, match="gradient of 'w' holds an infinite value"):
        opt.step(_rec(w=nn.ones(2)), _rec(w=g))
    with pytest.raises(ApsiError, match="holds NaN"):
        nn.sgd(lr=0.1).step(_rec(w=nn.ones(2)), _rec(w=nn.array([np.nan, np.inf])))


def _rec(**kw):
    from apsi_lang.values import Record

    return Record(**kw)


def test_nan_first_in_the_backward_pass_is_named():
    with pytest.raises(ApsiError, match="first NaN appeared in the backward pass, in the gradient "
                                        "of op 'sqrt'"):
        nn.grad(lambda x: nn.sum(nn.sqrt(x) * 0.0))(nn.zeros(3))
    with pytest.raises(ApsiError, match="first non-finite value came from op 'log'"):
        nn.grad(lambda x: nn.sum(nn.log(x)))(nn.zeros(3))


@pytest.mark.parametrize("call, message", [
    (lambda: nn.eye(-1), "eye: n must be an int >= 0"),
    (lambda: nn.eye(2.5), "eye: n must be an int >= 0"),
    (lambda: nn.eye(2, -1), "eye: m must be an int >= 0"),
    (lambda: nn.one_hot([0, 1], 2.5), "one_hot: classes must be an int >= 1"),
    (lambda: nn.one_hot([0], 0), "one_hot: classes must be an int >= 1"),
    (lambda: nn.full([2], "a"), "full: value must be a number"),
    (lambda: nn.permutation(-1), "permutation: n must be an int >= 0"),
    (lambda: nn.mean(nn.zeros(2, 2), 5), "mean: axis=5 does not fit"),
    # NumPy's "out of bounds for array of dimension 2" said in nn's words
    (lambda: nn.sum(nn.zeros(2, 2), 5), r"sum: axis=5 does not fit a tensor of shape \(2, 2\): an axis is an "
                                        r"int from -2 to 1, a list of them"),
    (lambda: nn.argmax(nn.zeros(2, 2), 2), r"argmax: axis=2 does not fit .*: an axis is an int from -2 to 1, "
                                           r"or none for all"),
])
def test_numpy_messages_name_the_nn_function(call, message):
    with pytest.raises(ApsiError, match=message):
        call()


def test_load_params_converts_to_float64(inside):
    np.savez("f.npz", w=np.ones(2, dtype=np.float32), b=np.array([1, 2], dtype=np.uint8))
    p = nn.load_params("f.npz")
    assert p.w.data.dtype == np.float64 and p.b.data.dtype == np.float64
    assert p.b.data.tolist() == [1.0, 2.0]


def test_load_params_plain_npy_is_explained(inside):
    np.save("plain.npy", np.zeros(3))
    with pytest.raises(ApsiError, match=r"plain.npy is not a parameter file .* single NumPy array \(.npy\)"):
        nn.load_params("plain.npy")


@pytest.mark.parametrize("name", ["a..b", ".a", "a.", "a._x", "_a", "a-b", ""])
def test_load_params_refuses_bad_names(inside, name):
    np.savez("bad.npz", **{name or "x": np.ones(2)}) if name else _raw_npz("bad.npz", ".npy")
    with pytest.raises(ApsiError, match="is not a parameter name|is not a parameter file"):
        nn.load_params("bad.npz")


def _raw_npz(path, member):
    buf = io.BytesIO()
    np.save(buf, np.ones(2))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(member, buf.getvalue())


def _bomb(path, claimed_items, written_bytes):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                   "shape": (claimed_items,)})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("w.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            chunk = b"\0" * (1 << 20)
            for _ in range(written_bytes >> 20):
                f.write(chunk)


def test_load_params_has_a_size_cap(inside):
    _bomb("bomb.npz", 8 * 2 ** 20, 64 * 2 ** 20)       # 64 MB of zeros in a small file
    assert (inside / "bomb.npz").stat().st_size < 2 ** 20
    with pytest.raises(ApsiError, match=r"would unpack to 64 MB, more than the limit of 10 MB"):
        nn.load_params("bomb.npz", max_mb=10)
    assert nn.load_params("bomb.npz", max_mb=100).w.shape == (8 * 2 ** 20,)


def test_load_params_header_claiming_more_than_the_data(inside):
    _bomb("liar.npz", 10 ** 12, 2 ** 20)
    with pytest.raises(ApsiError, match="claims more data than it holds"):
        nn.load_params("liar.npz")


def test_sum_axis_from_apsi(tmp_path, capsys):
    old = permissions.current()
    try:
        run_source("use nn\nlet x = array([[1, 2], [3, 4]])\nprint(sum(x, 1), mean(x, 1))\n",
                   filename=str(tmp_path / "t.apsi"), grants=permissions.Grants(project_root=tmp_path))
    finally:
        permissions.set_current(old)
    assert capsys.readouterr().out == "tensor([3., 7.]) tensor([1.5, 3.5])\n"
