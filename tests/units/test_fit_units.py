"""fit and predict on data with units: the layers see SI magnitudes on both backends, so the trained
parameters equal those of a fit on the SI numbers; predict(unit=...) converts the SI output."""

import numpy as np
import pytest

PROGRAM = """use nn
use layers
use units
let v = reshape(linspace(10, 100, 20), [20, 1]) * u.km / u.h
let d = 2 * u.s * v + 300 * u.cm
let net = dense(1)
let p0 = net.init(seed=0, input_shape=[1])
let opts = {opt: adam(lr=0.1), epochs: 5, batch_size: 20, seed: 0, verbose: false}
let r = fit(net, p0, v, d, loss="mse", opt=opts.opt, epochs=5, batch_size=20, seed=0, verbose=false BACKEND)
let si = fit(net, p0, magnitude(v, "m/s"), magnitude(d, "m"), loss="mse", opt=adam(lr=0.1), epochs=5,
             batch_size=20, seed=0, verbose=false BACKEND)
let own = fit(net, p0, v, d, loss=fn(p, t) => mean((p - t) ** 2), opt=adam(lr=0.1), epochs=5,
              batch_size=20, seed=0, verbose=false BACKEND)
let cm = predict(net, r.params, v[0:2], unit="cm" BACKEND)
let plain = predict(net, r.params, v[0:2] BACKEND)
"""


def _params(tree):
    return [np.asarray(tree.w.data if hasattr(tree.w, "data") else tree.w),
            np.asarray(tree.b.data if hasattr(tree.b, "data") else tree.b)]


def _check(ns, U):
    for a, b in zip(_params(ns["r"].params), _params(ns["si"].params)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(_params(ns["own"].params), _params(ns["si"].params)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert str(U.unit_of(ns["cm"])) == "cm"
    np.testing.assert_allclose(U.magnitude(ns["cm"], "m").data, ns["plain"].data, rtol=1e-14)


def test_fit_on_numpy_equals_fit_on_si_magnitudes(run, U):
    ns, _ = run(PROGRAM.replace(" BACKEND", ""))
    _check(ns, U)


@pytest.mark.torch
def test_fit_on_torch_equals_fit_on_si_magnitudes(tmp_path, U):
    pytest.importorskip("torch")
    from apsi_lang import permissions, run_source

    old = permissions.current()
    try:
        ns = run_source(PROGRAM.replace(" BACKEND", ', backend="torch", precision="fp64"'),
                        filename=str(tmp_path / "t.apsi"),
                        grants=permissions.Grants(project_root=tmp_path, granted=frozenset({"python"})))
    finally:
        permissions.set_current(old)
    _check(ns, U)


def test_an_apsi_loss_sees_si_quantities_and_a_unit_mistake_is_an_error(run):
    from apsi_lang.errors import ApsiError

    src = PROGRAM.replace(" BACKEND", "") + (
        "let bad = fit(net, p0, v, d, loss=fn(p, t) => mean(p - t * u.s), epochs=1, verbose=false)\n")
    with pytest.raises(ApsiError, match=r"cannot subtract m \(length\) and m·s \(length·time\)"):
        run(src)


def test_predict_unit_must_be_a_unit(run):
    from apsi_lang.errors import ApsiError

    src = PROGRAM.replace(" BACKEND", "") + "predict(net, r.params, v, unit=3)\n"
    with pytest.raises(ApsiError, match="predict: unit= must be a unit"):
        run(src)


def test_a_loss_with_a_unit_on_plain_data_is_minimised_as_its_si_magnitude(run):
    base = """use nn
use layers
use units
let x = reshape(linspace(0, 1, 8), [8, 1])
let net = dense(1)
let p0 = net.init(seed=0, input_shape=[1])
let a = fit(net, p0, x, 2 * x, loss=fn(p, t) => mean((p - t) ** 2) * u.km, epochs=3, verbose=false, seed=0)
let b = fit(net, p0, x, 2 * x, loss=fn(p, t) => mean((p - t) ** 2) * 1000, epochs=3, verbose=false, seed=0)
"""
    ns, _ = run(base)
    assert ns["a"].history == ns["b"].history
