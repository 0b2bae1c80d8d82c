"""Functional transforms: grad, value_and_grad, jacobian, hessian, hvp (HIPS autograd / JAX style)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import fastgraph as fg
import fastgraph.numpy as fnp


def _bug(reason):
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


def _is_numpy(v):
    return isinstance(v, (np.ndarray, np.generic, float)) and not isinstance(v, fg.Tensor)


def rosen(x):
    return fg.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# ---- grad ----------------------------------------------------------------------------------------
def test_grad_returns_numpy():
    g = fg.grad(lambda x: fg.sum(x ** 2))(np.array([1.0, 2.0]))
    assert _is_numpy(g) and isinstance(g, np.ndarray)
    np.testing.assert_array_equal(g, [2.0, 4.0])
    s = fg.grad(lambda x: x ** 3)(2.0)
    assert _is_numpy(s) and float(s) == 12.0


def test_grad_of_python_scalar_and_int_input():
    assert fg.grad(lambda x: fg.sin(x))(0.0) == 1.0
    g = fg.grad(lambda x: fg.sum(x * x))(np.array([1, 2]))  # integers are promoted to float
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_grad_accepts_tensor_input_and_keeps_float32():
    g = fg.grad(lambda x: fg.sum(x * x))(np.array([1.0, 2.0], np.float32))
    assert g.dtype == np.float32
    g = fg.grad(lambda x: fg.sum(x * x))(fg.tensor([1.0, 3.0]))
    assert _is_numpy(g)
    np.testing.assert_array_equal(g, [2.0, 6.0])


def test_grad_matches_rosenbrock_closed_form():
    x = np.array([-1.2, 1.0, 0.5, 2.0])
    np.testing.assert_allclose(fg.grad(rosen)(x), scipy.optimize.rosen_der(x), rtol=1e-12)


def _rosen_with_asarray(x):
    """SciPy's rosen as written there, with the drop-in namespace's asarray."""
    x = fnp.asarray(x)
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0, axis=0)


def test_a_function_converting_its_argument_with_numpy_raises_naming_it():
    # scipy.optimize.rosen calls NumPy's np.asarray(x): the value would be right and the gradient
    # silently zero, so minimize would report success at the starting point
    x0 = np.array([-1.2, 1.0])
    for transform in (fg.value_and_grad, fg.grad, fg.jacobian, fg.hessian):
        with pytest.raises(RuntimeError, match=r"requires grad.* while differentiating 'rosen'.*"
                                               r"detach\(\)\.numpy\(\).*fastgraph\.numpy"):
            transform(scipy.optimize.rosen)(x0)
    with pytest.raises(RuntimeError, match="while differentiating 'rosen'"):
        scipy.optimize.minimize(fg.value_and_grad(scipy.optimize.rosen), x0, jac=True)
    # traced by fg.function, the argument is a graph Node: the same refusal
    for traced in (fg.function(scipy.optimize.rosen),
                   fg.function(fg.value_and_grad(scipy.optimize.rosen))):
        with pytest.raises(TypeError, match=r"np\.asarray.*symbolic Node.*fastgraph\.numpy"):
            traced(x0)
    # the same function written against fastgraph.numpy is differentiated
    value, g = fg.value_and_grad(_rosen_with_asarray)(x0)
    assert value == scipy.optimize.rosen(x0)
    np.testing.assert_allclose(g, [-215.6, -88.0], rtol=1e-12)
    np.testing.assert_allclose(g, scipy.optimize.rosen_der(x0), rtol=1e-12)
    res = scipy.optimize.minimize(fg.value_and_grad(_rosen_with_asarray), x0, jac=True)
    assert res.success and np.allclose(res.x, [1.0, 1.0], atol=1e-4)
    traced_value, traced_grad = fg.function(fg.value_and_grad(_rosen_with_asarray))(x0)
    assert traced_value == value
    np.testing.assert_allclose(traced_grad, g, rtol=1e-14)
    # (and it still runs as plain NumPy on plain values)
    assert _rosen_with_asarray(x0) == scipy.optimize.rosen(x0)


def test_grad_argnums():
    f = lambda x, y: fg.sum(x * y ** 2)
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_array_equal(fg.grad(f)(x, y), y ** 2)
    np.testing.assert_array_equal(fg.grad(f, argnums=1)(x, y), 2 * x * y)
    gx, gy = fg.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, y ** 2)
    np.testing.assert_array_equal(gy, 2 * x * y)
    (gy2,) = fg.grad(f, argnums=(1,))(x, y)
    np.testing.assert_array_equal(gy2, 2 * x * y)
    np.testing.assert_array_equal(fg.grad(f, argnums=-1)(x, y), 2 * x * y)


def test_grad_with_kwargs_and_unused_argument():
    f = lambda x, y, scale=1.0: fg.sum(x) * scale
    np.testing.assert_array_equal(fg.grad(f, argnums=1)(np.ones(2), np.ones(3), scale=2.0),
                                  np.zeros(3))
    np.testing.assert_array_equal(fg.grad(f)(np.ones(2), np.ones(3), scale=2.0), [2.0, 2.0])


def test_grad_of_constant_function_is_zero():
    g = fg.grad(lambda x: 3.0)(np.ones(3))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_grad_rejects_non_scalar_output():
    with pytest.raises(TypeError, match="scalar"):
        fg.grad(lambda x: x * 2.0)(np.ones(3))


def test_grad_rejects_bad_argnums():
    with pytest.raises(ValueError, match="argnums"):
        fg.grad(lambda x: fg.sum(x), argnums=2)(np.ones(3))


def test_grad_does_not_leak_into_global_state():
    fg.grad(lambda x: fg.sum(x * x))(np.ones(2))
    assert fg.is_grad_enabled()
    with fg.no_grad():
        g = fg.grad(lambda x: fg.sum(x * x))(np.ones(2))  # transforms work inside no_grad
        assert not fg.is_grad_enabled()
    np.testing.assert_array_equal(g, [2.0, 2.0])


# ---- value_and_grad -----------------------------------------------------------------------------
def test_value_and_grad():
    v, g = fg.value_and_grad(lambda x: fg.sum(x ** 2))(np.array([1.0, 2.0]))
    assert _is_numpy(v) and float(v) == 5.0
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_value_and_grad_has_aux():
    def f(x):
        loss = fg.sum(x ** 2)
        return loss, {"norm": fg.sqrt(loss), "n": 2}

    (v, aux), g = fg.value_and_grad(f, has_aux=True)(np.array([3.0, 4.0]))
    assert float(v) == 25.0
    np.testing.assert_array_equal(g, [6.0, 8.0])
    assert aux["n"] == 2
    assert float(np.asarray(aux["norm"])) == 5.0


def test_value_and_grad_aux_containers_are_numpy():
    f = lambda x: (fg.sum(x ** 2), {"norm": fg.sqrt(fg.sum(x ** 2))})
    (_, aux), _ = fg.value_and_grad(f, has_aux=True)(np.array([3.0, 4.0]))
    assert not isinstance(aux["norm"], fg.Tensor)


def test_value_and_grad_aux_tensor_is_numpy():
    f = lambda x: (fg.sum(x ** 2), x * 2.0)
    (v, aux), g = fg.value_and_grad(f, has_aux=True)(np.array([1.0, 2.0]))
    assert _is_numpy(aux)
    np.testing.assert_array_equal(aux, [2.0, 4.0])


def test_value_and_grad_has_aux_requires_pair():
    with pytest.raises(TypeError, match="pair"):
        fg.value_and_grad(lambda x: fg.sum(x), has_aux=True)(np.ones(2))


def test_value_and_grad_argnums_tuple():
    f = lambda a, b: fg.sum(a * b)
    v, (ga, gb) = fg.value_and_grad(f, argnums=(0, 1))(np.array([1.0, 2.0]), np.array([3.0, 5.0]))
    assert float(v) == 13.0
    np.testing.assert_array_equal(ga, [3.0, 5.0])
    np.testing.assert_array_equal(gb, [1.0, 2.0])


_ARRAY_CASES = [   # (function, arguments, argnums, has_aux)
    (lambda x: fg.sum(x ** 2), (np.array([1.0, -2.0, 3.0]),), 0, False),
    (lambda x: fg.mean(fg.tanh(x)), (np.arange(6.0, dtype=np.float32).reshape(2, 3),), 0, False),
    (lambda x: x * x, (np.array(1.5),), 0, False),                              # 0-d
    (lambda z: fg.sum(fg.abs(z) ** 2), (np.array([1 + 2j, -0.5j]),), 0, False),  # complex
    (lambda a, b: fg.sum(a * b), (np.array([1.0, 2.0]), np.array([3.0, 5.0])), (0, 1), False),
    (lambda a, b: fg.sum(a * b), (np.array([1.0, 2.0]), np.array([3.0, 5.0])), (1, 0), False),
    (lambda a, b: fg.sum(a * a), (np.array([1.0, 2.0]), np.array([3.0, 5.0])), 1, False),  # unused
    (lambda x: (fg.sum(x ** 2), x * 2.0), (np.array([1.0, 2.0]),), 0, True),
    (lambda x: fg.sum(x ** 2), (np.array([1, 2]),), 0, False),                  # ints: float64
    (lambda a, b: fg.sum(a * b), (np.array([1.0, 2.0]), np.array([3.0, 5.0])), (0, 0), False),
    # an objective through fastgraph.numpy and NumPy's operators (a mean's VJP, np.logaddexp)
    (lambda w: fnp.mean(fnp.logaddexp(0.0, -np.array([1.0, -1.0]) * (np.eye(2) @ w)))
     + 0.5 * (w @ w), (np.array([0.3, -0.7]),), 0, False),
]


def _wrapped(f, nums):
    """``f`` taking its differentiated arguments in 1-lists (the path that walks structures)."""
    nums = (nums,) if isinstance(nums, int) else nums

    def g(*args):
        return f(*[a[0] if i in nums else a for i, a in enumerate(args)])
    return g


def _unwrapped(v):
    return v[0] if isinstance(v, list) else tuple(x[0] for x in v)


@pytest.mark.parametrize("f, args, argnums, has_aux", _ARRAY_CASES)
def test_value_and_grad_of_arrays_equals_the_structured_path(f, args, argnums, has_aux):
    """Plain array arguments (an optimiser's call) give what the same arrays inside lists give:
    values, gradients, their types and dtypes, bit for bit."""
    value, grad = fg.value_and_grad(f, argnums=argnums, has_aux=has_aux)(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    listed = [[a] if i in nums else a for i, a in enumerate(args)]
    value2, grad2 = fg.value_and_grad(_wrapped(f, argnums), argnums=argnums,
                                      has_aux=has_aux)(*listed)
    grad2 = _unwrapped(grad2)
    assert type(grad) is type(grad2)
    leaves = lambda t: t if isinstance(t, tuple) else (t,)
    for got, want in zip(leaves(grad), leaves(grad2)):
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if has_aux:
        (value, aux), (value2, aux2) = value, value2
        np.testing.assert_array_equal(aux, aux2)
    assert type(value) is type(value2)
    np.testing.assert_array_equal(value, value2)


def test_transformed_function_called_with_different_argument_counts():
    """argnums=-1 is the last argument of each call, whatever their number."""
    f = fg.grad(lambda *xs: fg.sum(xs[-1] ** 3), argnums=-1)
    np.testing.assert_array_equal(f(np.ones(2), np.array([2.0])), [12.0])
    np.testing.assert_array_equal(f(np.ones(2), np.ones(3), np.array([1.0, 3.0])), [3.0, 27.0])
    with pytest.raises(ValueError, match="argnums"):
        fg.grad(lambda x: fg.sum(x), argnums=1)(np.ones(2))


def test_grad_does_not_touch_closed_over_leaf_grad():
    w = fg.tensor(2.0, requires_grad=True)
    g = fg.grad(lambda x: x * w)(1.0)
    assert float(g) == 2.0
    assert w.grad is None


def test_value_and_grad_of_arrays_does_not_touch_closed_over_leaf_grad():
    """The plain-array path captures the arguments' gradients only: a leaf the function reaches
    through a closure keeps its ``.grad``."""
    w = fg.tensor(np.array([2.0, 3.0]), requires_grad=True)
    value, g = fg.value_and_grad(lambda x: fg.sum(x * w))(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(g, [2.0, 3.0])
    assert float(value) == 5.0 and w.grad is None


def test_autograd_grad_targets_change_between_walks_of_one_graph():
    """Each fg.autograd.grad walk marks the nodes leading to its own targets: a later walk of
    the same (retained) graph with other targets visits its own."""
    x = fg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = fg.tensor(np.array([3.0, 4.0]), requires_grad=True)
    h = x * y
    z = fg.sum(h * h)
    gx, = fg.autograd.grad(z, x, retain_graph=True)
    gy, = fg.autograd.grad(z, y, retain_graph=True)
    gh, gx2 = fg.autograd.grad(z, [h, x])
    hv = np.array([3.0, 8.0])
    np.testing.assert_array_equal(gx.data, 2 * hv * [3.0, 4.0])
    np.testing.assert_array_equal(gy.data, 2 * hv * [1.0, 2.0])
    np.testing.assert_array_equal(gh.data, 2 * hv)
    np.testing.assert_array_equal(gx2.data, gx.data)
    assert x.grad is None and y.grad is None


# ---- jacobian, hessian, hvp ----------------------------------------------------------------------
def test_jacobian_elementwise_and_shapes():
    x = np.array([1.0, 2.0, 3.0])
    J = fg.jacobian(lambda x: x * x)(x)
    assert _is_numpy(J) and J.shape == (3, 3)
    np.testing.assert_array_equal(J, np.diag(2 * x))


def test_jacobian_matrix_function():
    A = np.arange(6.0).reshape(2, 3)
    J = fg.jacobian(lambda x: fg.matmul(A, x))(np.ones(3))
    np.testing.assert_allclose(J, A)
    X = np.random.default_rng(0).standard_normal((2, 2))
    J = fg.jacobian(lambda x: fg.exp(x))(X)
    assert J.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(J.reshape(4, 4), np.diag(np.exp(X).ravel()))


def test_jacobian_scalar_output_and_argnums():
    J = fg.jacobian(lambda x: fg.sum(x ** 2))(np.array([1.0, 2.0]))
    assert J.shape == (2,)
    np.testing.assert_array_equal(J, [2.0, 4.0])
    J = fg.jacobian(lambda a, b: a * b, argnums=1)(np.array([2.0, 3.0]), np.array([1.0, 1.0]))
    np.testing.assert_array_equal(J, np.diag([2.0, 3.0]))


def test_jacobian_of_constant_is_zero():
    J = fg.jacobian(lambda x: fg.ones(2))(np.ones(3))
    assert J.shape == (2, 3)
    np.testing.assert_array_equal(J, 0)


@pytest.mark.parametrize("make,args", [
    (lambda: fg.jacobian(lambda x: fg.tanh(x) * x[::-1]), (np.array([0.3, -1.0, 2.0]),)),
    (lambda: fg.jacobian(lambda x: fg.matmul(x, x)), (np.array([[1.0, 2.0], [0.5, -1.0]]),)),
    (lambda: fg.jacobian(lambda x, y: x * y, argnums=(0, 1)),
     (np.array([1.0, 2.0]), np.array([3.0, -4.0]))),
    (lambda: fg.jacobian(lambda p: [p["a"] * 2.0, fg.sum(p["a"] * p["b"])]),
     ({"a": np.array([1.0, 2.0]), "b": np.array([0.5, 4.0])},)),
    (lambda: fg.jacobian(lambda x: np.ones(2)), (np.ones(3),)),               # constant: zeros
    (lambda: fg.hessian(rosen), (np.array([-1.2, 1.0, 0.7]),)),
    (lambda: fg.hessian(lambda x: fg.sum(fg.sin(x) * x ** 2)), (np.array([0.1, 0.2, 0.3]),)),
    (lambda: fg.hessian(lambda x: fg.sum(x * x)), (np.ones((2, 2), np.float32),)),
])
def test_jacobian_and_hessian_inside_function_equal_eager(make, args):
    """Traced, a Jacobian is one symbolic gradient per output element, stacked: what the
    eager transform computes row by row."""
    got, want = fg.function(make())(*args), make()(*args)
    flat_got, flat_want = _leaves(got), _leaves(want)
    assert len(flat_got) == len(flat_want)
    for g, w in zip(flat_got, flat_want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def _leaves(tree) -> list:
    if isinstance(tree, dict):
        return [leaf for k in tree for leaf in _leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [np.asarray(tree)]


def test_jacobian_inside_function_through_a_closure_and_its_limits():
    x = np.array([1.0, 2.0, 3.0])
    closure = fg.function(lambda x: fg.jacobian(lambda y: y * x)(np.ones(3)))
    np.testing.assert_array_equal(closure(x), np.diag(x))
    with pytest.raises(ValueError, match="4097 gradients"):
        fg.function(fg.jacobian(lambda v: v * 2.0))(np.ones(4097))
    with pytest.raises(TypeError, match="only floating-point outputs"):
        fg.function(fg.jacobian(lambda v: v > 0))(np.ones(3))


def test_hessian():
    x = np.array([-1.2, 1.0, 0.7])
    H = fg.hessian(rosen)(x)
    assert _is_numpy(H) and H.shape == (3, 3)
    np.testing.assert_allclose(H, scipy.optimize.rosen_hess(x), rtol=1e-12)
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(fg.hessian(lambda x: fg.dot(x, fg.matmul(A, x)))(np.ones(2)), 2 * A)


def test_hvp():
    x = np.array([-1.2, 1.0, 0.7, 0.3])
    v = np.array([0.5, -1.0, 2.0, 1.0])
    hv = fg.hvp(rosen, x, v)
    assert _is_numpy(hv)
    np.testing.assert_allclose(hv, scipy.optimize.rosen_hess_prod(x, v), rtol=1e-12)
    np.testing.assert_allclose(fg.hvp(lambda x: fg.sum(x ** 3), np.array([1.0, 2.0]),
                                      np.array([1.0, 0.0])), [6.0, 0.0])


# ---- composition -------------------------------------------------------------------------------
def test_grad_composes_to_third_order():
    f = lambda x: fg.sin(x) * x ** 2
    x = 0.7
    d1 = fg.grad(f)(x)
    d2 = fg.grad(fg.grad(f))(x)
    d3 = fg.grad(fg.grad(fg.grad(f)))(x)
    s, c = np.sin(x), np.cos(x)
    np.testing.assert_allclose(d1, c * x ** 2 + 2 * x * s)
    np.testing.assert_allclose(d2, -s * x ** 2 + 4 * x * c + 2 * s)
    np.testing.assert_allclose(d3, -c * x ** 2 - 6 * x * s + 6 * c)
    assert _is_numpy(d3)


def test_grad_of_tanh_to_fourth_order():
    d4 = fg.grad(fg.grad(fg.grad(fg.grad(fg.tanh))))(0.3)
    # independent check by finite differences of the analytic third derivative
    d3 = lambda x: -2 * (1 - np.tanh(x) ** 2) * (1 - 3 * np.tanh(x) ** 2)
    eps = 1e-5
    np.testing.assert_allclose(d4, (d3(0.3 + eps) - d3(0.3 - eps)) / (2 * eps), rtol=1e-6)


def test_jacobian_of_grad_equals_hessian():
    x = np.array([0.3, -0.2, 1.1])
    np.testing.assert_allclose(fg.jacobian(fg.grad(rosen))(x), fg.hessian(rosen)(x), rtol=1e-12)


def test_grad_of_value_and_grad_closure():
    # an inner transform inside an outer one returns Tensors connected to the outer trace
    def f(x):
        v, g = fg.value_and_grad(lambda y: fg.sum(y ** 3))(x)
        return v + fg.sum(g)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(fg.grad(f)(x), 3 * x ** 2 + 6 * x)


def test_grad_through_closed_over_tensor():
    w = np.array([1.0, 2.0])
    g = fg.grad(lambda a: fg.grad(lambda x: fg.sum(a * x * x))(w).sum())(np.array([3.0, 4.0]))
    np.testing.assert_allclose(g, 2 * w)


def test_transform_with_fastgraph_numpy_namespace():
    def loss(w):
        return fnp.mean(fnp.tanh(w) ** 2) + fnp.linalg.det(fnp.reshape(w, (2, 2)))

    w = np.array([0.1, 0.2, 0.3, 0.4])
    g = fg.grad(loss)(w)
    eps = 1e-6
    num = [(loss(w + eps * e) - loss(w - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, num, rtol=1e-7)


# ---- SciPy --------------------------------------------------------------------------------------
def test_scipy_minimize_rosenbrock_with_value_and_grad():
    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    res = scipy.optimize.minimize(fg.value_and_grad(rosen), x0, jac=True, method="BFGS")
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(4), atol=1e-4)


def test_scipy_minimize_default_method():
    res = scipy.optimize.minimize(fg.value_and_grad(rosen), np.array([-1.2, 1.0]), jac=True)
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-4)


@pytest.mark.parametrize("method,opts", [("Newton-CG", {"xtol": 1e-10}),
                                         ("trust-ncg", {"gtol": 1e-10})])
def test_scipy_minimize_with_hessp(method, opts):
    x0 = np.array([-1.2, 1.0, -0.5])
    res = scipy.optimize.minimize(fg.value_and_grad(rosen), x0, jac=True, method=method,
                                  hessp=lambda x, p: fg.hvp(rosen, x, p),
                                  options={"maxiter": 200, **opts})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-4)


def test_scipy_minimize_with_hess():
    res = scipy.optimize.minimize(rosen, np.array([-1.2, 1.0]), jac=fg.grad(rosen),
                                  hess=fg.hessian(rosen), method="trust-exact")
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-5)


# ---- outputs that are not one Tensor -------------------------------------------------------------
@pytest.mark.parametrize("fun, match", [
    (lambda x: [fg.sum(x)], "got list .*fg.jacobian"),
    (lambda x: (fg.sum(x),), "got tuple"),
    (lambda x: {"a": fg.sum(x)}, "got dict"),
    (lambda x: None, "got NoneType"),
    (lambda x: fg.sum(x) > 0, "dtype bool"),
    (lambda x: fg.sum(x).astype(np.int64), "dtype int64"),
])
def test_grad_of_a_non_scalar_output_raises_instead_of_zeros(fun, match):
    with pytest.raises(TypeError, match=match):
        fg.grad(fun)(np.ones(3))


def test_grad_of_a_constant_number_is_zero():
    np.testing.assert_array_equal(fg.grad(lambda x: 3.0)(np.ones(2)), np.zeros(2))


def test_jacobian_keeps_the_output_structure():
    x = np.array([1.0, 2.0, 3.0])
    J = fg.jacobian(lambda v: {"a": v * 2, "b": [fg.sum(v), v * v]})(x)
    np.testing.assert_array_equal(J["a"], 2 * np.eye(3))
    np.testing.assert_array_equal(J["b"][0], np.ones(3))
    np.testing.assert_array_equal(J["b"][1], np.diag(2 * x))
    Jt = fg.jacobian(lambda v: (v * 2, fg.sum(v)))(x)
    assert isinstance(Jt, tuple) and Jt[0].shape == (3, 3) and Jt[1].shape == (3,)


def test_hessian_with_tuple_argnums_is_nested_like_jax():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    H = fg.hessian(lambda a, b: fg.sum(a * a * b), (0, 1))(x, y)
    np.testing.assert_array_equal(H[0][0], np.diag(2 * y))
    np.testing.assert_array_equal(H[0][1], np.diag(2 * x))
    np.testing.assert_array_equal(H[1][0], np.diag(2 * x))
    np.testing.assert_array_equal(H[1][1], np.zeros((2, 2)))


@pytest.mark.parametrize("argnums", [1.0, "0", (), (0, 1.5), True])
def test_argnums_must_be_ints(argnums):
    with pytest.raises(TypeError, match="argnums"):
        fg.grad(lambda a, b: fg.sum(a * b), argnums=argnums)(np.ones(2), np.ones(2))
