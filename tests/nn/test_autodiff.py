"""grad / value_and_grad / jacobian / hessian: trees, argnums, nesting, and their errors."""

import numpy as np
import pytest

from apsi_lang.errors import ApsiError
from apsi_lang.values import Record
from apsi_layers import nn
from apsi_layers.nn.autograd.tape import STATE


def test_grad_of_a_parameter_tree_keeps_its_structure():
    params = Record(layers=[Record(w=nn.array([[1.0, 2.0]]), b=nn.array([0.5]))], scale=nn.array(3.0))

    def loss(p):
        layer = p.layers[0]
        return nn.sum((layer.w * p.scale + layer.b) ** 2)

    g = nn.grad(loss)(params)
    assert isinstance(g, Record) and isinstance(g.layers, list)
    # d/dw sum((3w + b)^2) = 6 (3w + b)
    np.testing.assert_allclose(g.layers[0].w.data, 6 * (3 * np.array([[1, 2]]) + 0.5))
    np.testing.assert_allclose(g.layers[0].b.data, [2 * (3.5 + 6.5)])
    np.testing.assert_allclose(g.scale.data, 2 * (3.5 * 1 + 6.5 * 2))


def test_argnums_tuple_value_and_grad_and_keywords():
    f = lambda a, b, c=1.0: nn.sum(a * b) * c
    a, b = nn.array([1.0, 2.0]), nn.array([3.0, 4.0])
    value, (ga, gb) = nn.value_and_grad(f, argnums=(0, 1))(a, b, c=2.0)
    assert value.item() == 22.0
    np.testing.assert_allclose(ga.data, [6, 8])
    np.testing.assert_allclose(gb.data, [2, 4])
    np.testing.assert_allclose(nn.grad(f, argnums=1)(a, b).data, [1, 2])


def test_numbers_and_lists_are_differentiable_inputs():
    assert nn.grad(lambda x: x * x)(3.0).item() == 6.0
    g = nn.grad(lambda xs: xs[0] * xs[1])([2.0, 5.0])
    assert [v.item() for v in g] == [5.0, 2.0]


def test_reused_variables_accumulate_without_aliasing():
    x = nn.array([1.0, 2.0])
    # x appears in several places; in-place accumulation must not corrupt shared arrays
    g = nn.grad(lambda x: nn.sum(x + x) + nn.sum(x * x * x) + nn.sum(x))(x)
    np.testing.assert_allclose(g.data, 2 + 3 * np.array([1.0, 4.0]) + 1)
    ga, gb = nn.grad(lambda a, b: nn.sum(a + b), argnums=(0, 1))(x, x)
    assert ga.data is not gb.data or not ga.data.flags.writeable


def test_function_that_ignores_its_input_has_zero_gradient():
    g = nn.grad(lambda x: nn.sum(nn.ones(3)))(nn.array([1.0, 2.0]))
    np.testing.assert_array_equal(g.data, [0.0, 0.0])
    assert nn.grad(lambda x: 5.0)(nn.array([1.0])).data.tolist() == [0.0]


def test_jacobian_shape_and_values():
    A = np.arange(6.0).reshape(2, 3)
    J = nn.jacobian(lambda x: nn.Tensor(A) @ x)(nn.array([1.0, 2.0, 3.0]))
    assert J.shape == (2, 3)
    np.testing.assert_allclose(J.data, A)
    J2 = nn.jacobian(lambda x: x * x)(nn.array([[1.0, 2.0]]))
    assert J2.shape == (1, 2, 1, 2)


def test_hessian_of_a_quadratic_form():
    A = np.array([[2.0, 1.0], [0.0, 3.0]])
    H = nn.hessian(lambda x: x @ (nn.Tensor(A) @ x))(nn.array([0.3, -0.7]))
    np.testing.assert_allclose(H.data, A + A.T, atol=1e-12)


def test_grad_of_grad_and_closures():
    # d/dx [x * d/dy (x * y)] = d/dx x^2 = 2x: nested grads must not confuse their variables
    def outer(x):
        return x * nn.grad(lambda y: x * y)(nn.array(1.0))
    assert nn.grad(outer)(nn.array(3.0)).item() == pytest.approx(6.0)
    third = nn.grad(nn.grad(nn.grad(lambda x: x ** 4)))
    assert third(nn.array(2.0)).item() == pytest.approx(24 * 2.0)


def test_non_scalar_loss_is_a_clear_error():
    with pytest.raises(ApsiError, match=r"grad: .*single number.*shape \(2,\).*mean"):
        nn.grad(lambda x: x * 2)(nn.array([1.0, 2.0]))
    with pytest.raises(ApsiError, match="must return a number"):
        nn.grad(lambda x: "loss")(nn.array([1.0]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_loss_names_the_op():
    with pytest.raises(ApsiError, match="op 'log'"):
        nn.grad(lambda x: nn.sum(nn.log(x - 2.0)))(nn.array([1.0, 3.0]))
    assert STATE.tape is None


def test_tape_is_released_after_errors():
    def bad(x):
        raise ApsiError("boom")
    with pytest.raises(ApsiError, match="boom"):
        nn.grad(bad)(nn.array(1.0))
    assert STATE.tape is None
    assert nn.grad(lambda x: x * x)(nn.array(2.0)).item() == 4.0


def test_bad_argnums_and_non_function():
    with pytest.raises(ApsiError, match="argnums=3"):
        nn.grad(lambda x: x, argnums=3)(nn.array(1.0))
    with pytest.raises(ApsiError, match="expects a function"):
        nn.grad(5)(1.0)


def test_tensors_kept_from_a_finished_trace_are_constants():
    kept = []

    def f(x):
        y = x * 2
        kept.append(y)
        return nn.sum(y)
    nn.grad(f)(nn.array([1.0]))
    g = nn.grad(lambda z: nn.sum(z * kept[0]))(nn.array([5.0]))
    assert g.data.tolist() == [2.0]


def test_gradients_are_writable_arrays_of_the_right_shape():
    g = nn.grad(lambda x: nn.sum(x))(nn.zeros(2, 3))
    assert g.shape == (2, 3) and g.data.flags.writeable


def test_has_aux():
    f = lambda x: (nn.sum(x * x), {"n": 2})
    (value, aux), g = nn.value_and_grad(f, has_aux=True)(nn.array([1.0, 2.0]))
    assert value.item() == 5.0 and aux == {"n": 2} and g.data.tolist() == [2.0, 4.0]
    g2, aux2 = nn.grad(f, has_aux=True)(nn.array([1.0, 2.0]))
    assert g2.data.tolist() == [2.0, 4.0] and aux2 == {"n": 2}
    with pytest.raises(ApsiError, match="has_aux=true"):
        nn.grad(lambda x: nn.sum(x), has_aux=True)(nn.array([1.0]))


def test_defop_first_and_higher_order():
    from apsi_layers.nn.autograd.extend import defop
    from apsi_layers.nn.autograd.vjps import RULES

    cube = defop("test_cube", lambda x: x ** 3, lambda xp, g, ans, x: g * 3.0 * x * x)
    fused = defop("test_fused_square", lambda x: x * x, lambda xp, g, ans, x: g * 2.0 * x.data
                  if hasattr(x, "data") else g * 2.0 * x, second_order=False)
    try:
        x = nn.array([1.0, 2.0])
        assert nn.grad(lambda x: nn.sum(cube(x)))(x).data.tolist() == [3.0, 12.0]
        assert nn.hessian(lambda x: nn.sum(cube(x)))(x).data.tolist() == [[6.0, 0.0], [0.0, 12.0]]
        assert nn.grad(lambda x: nn.sum(fused(x)))(x).data.tolist() == [2.0, 4.0]
        with pytest.raises(ApsiError, match="op 'test_fused_square' has no second derivative"):
            nn.hessian(lambda x: nn.sum(fused(x)))(x)
        assert STATE.tape is None
        with pytest.raises(ApsiError, match="already exists"):
            defop("test_cube", lambda x: x)
    finally:
        RULES.pop("test_cube", None)
        RULES.pop("test_fused_square", None)


def test_hessian_of_a_parameter_tree_is_a_tree_of_trees():
    p = Record(w=nn.array([1.0, 2.0]), b=nn.array([3.0]))
    h = nn.hessian(lambda q: nn.sum(q.w * q.w * q.b))(p)
    # f = b (w0² + w1²): d²f/dw² = 2b I, d²f/dw db = 2w, d²f/db² = 0
    np.testing.assert_allclose(h.w.w.data, [[6.0, 0.0], [0.0, 6.0]])
    np.testing.assert_allclose(h.w.b.data, [[2.0], [4.0]])
    np.testing.assert_allclose(h.b.w.data, [[2.0, 4.0]])
    np.testing.assert_allclose(h.b.b.data, [[0.0]])


def test_jacobian_of_a_tree_valued_function():
    x = nn.array([1.0, 2.0])
    j = nn.jacobian(lambda v: [v * 2, nn.sum(v * v)])(x)
    np.testing.assert_allclose(j[0].data, [[2.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(j[1].data, [2.0, 4.0])


def test_hessian_over_several_arguments():
    a, b = nn.array([1.0, 2.0]), nn.array([3.0])
    h = nn.hessian(lambda a, b: nn.sum(a * a * b), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(h[0][0].data, [[6.0, 0.0], [0.0, 6.0]])
    np.testing.assert_allclose(h[0][1].data, [[2.0], [4.0]])
    np.testing.assert_allclose(h[1][0].data, [[2.0, 4.0]])
    np.testing.assert_allclose(h[1][1].data, [[0.0]])
