"""The drop-in NumPy namespace (``optable_numpy.py``'s functions) beyond the op-table tests:

* against JAX where PyTorch lacks the function: values and vector-Jacobian products;
* ``@fg.function`` (every region fused however small) equals eager, values and gradients, and
  a fused plan equals the unfused one;
* NumPy's ``np.X(tensor)`` reaches the differentiable function;
* the forms NumPy takes: joining functions given tuples, mixed values, a single array and
  (autograd's) generators; ``einsum``'s errors; ties, NaN and infinities; what is refused.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
from fastgraph.static.passes.fuse import cost as fuse_cost

from optable import CASES, as_list, case_params, make_inputs
from optable_numpy import NUMPY_DROPIN_OPS

DROPIN = [c for c in CASES if c.op in NUMPY_DROPIN_OPS]


def test_every_function_of_the_table_is_public():
    for name in NUMPY_DROPIN_OPS:
        assert hasattr(fnp, name), name
        if name not in ("acos", "asinh", "atan", "atan2", "pow", "msort", "full"):
            assert callable(getattr(fg, name)), name


# ---- against JAX --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params([c for c in DROPIN if c.jax is not None]))
def test_values_and_vjps_match_jax(case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    arrays = make_inputs(case, np.float64)
    ts = [fg.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    outs = as_list(case.fn(*ts))
    rng = np.random.default_rng(11)
    cots = [rng.standard_normal(o.shape) for o in outs]
    fg.autograd.backward(outs, [fg.tensor(c) for c in cots])

    def f(*diff):
        args = [jnp.asarray(a) for a in arrays]
        for i, d in zip(case.diff, diff):
            args[i] = d
        return tuple(as_list(case.jax(*args)))

    jouts, vjp = jax.vjp(f, *[jnp.asarray(arrays[i]) for i in case.diff])
    jgrads = vjp(tuple(jnp.asarray(c) for c in cots))
    for o, jo in zip(outs, jouts):
        np.testing.assert_allclose(o.data, np.asarray(jo), rtol=1e-10, atol=1e-12)
    for i, jg in zip(case.diff, jgrads):
        np.testing.assert_allclose(ts[i].grad.data, np.asarray(jg), rtol=1e-8, atol=1e-10,
                                   err_msg=f"{case.name} d/darg{i}")


# ---- fg.function and fusion --------------------------------------------------------------------------
def _loss_of(case, ws):
    def loss(*xs):
        total = 0.0
        for o, w in zip(as_list(case.fn(*xs)), ws):
            total = total + fg.sum(fg.tanh(o) * w)
        return total
    return loss


@pytest.mark.parametrize("case", case_params([c for c in DROPIN if c.static and not c.zero_grad]))
def test_function_equals_eager_with_gradients(case, monkeypatch):
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)
    arrays = make_inputs(case, np.float64)
    outs = as_list(case.fn(*map(fg.tensor, arrays)))
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(o.shape) for o in outs]
    vg = fg.value_and_grad(_loss_of(case, ws), argnums=tuple(case.diff))
    v_eager, g_eager = vg(*arrays)
    v_fn, g_fn = fg.function(vg)(*arrays)
    np.testing.assert_allclose(v_fn, v_eager, rtol=1e-12, atol=1e-13)
    for a, b, x in zip(g_fn, g_eager, (arrays[i] for i in case.diff)):
        assert np.shape(a) == x.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("case", case_params([c for c in DROPIN if c.static
                                              and not c.zero_grad][::3]))
def test_fused_plan_equals_unfused(case, monkeypatch):
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)
    arrays = make_inputs(case, np.float64)
    rng = np.random.default_rng(5)
    ws = [rng.standard_normal(np.shape(o)) for o in as_list(case.ref(*arrays))]
    g = fg.Graph()
    with g.as_default():
        phs = [fg.placeholder(a.dtype, a.shape) for a in arrays]
        loss = _loss_of(case, ws)(*phs)
        grads = fg.gradients(loss, [phs[i] for i in case.diff])
        fetches = [loss] + [gr for gr in grads if gr is not None]
        feed = dict(zip(phs, arrays))
        fused = fg.Session(g).run(fetches, feed)
        plain = fg.Session(g, disable=("fuse",)).run(fetches, feed)
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


# ---- NumPy's own functions on Tensors ------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda x: np.sort(x), lambda x: np.partition(x, 1), lambda x: np.pad(x, 1, mode="edge"),
    lambda x: np.cumprod(x), lambda x: np.median(x), lambda x: np.quantile(x, 0.3),
    lambda x: np.nanmean(x), lambda x: np.fliplr(x[None]), lambda x: np.rot90(x[None]),
    lambda x: np.linspace(x[0], x[1], 4), lambda x: np.kron(x, x), lambda x: np.inner(x, x),
    lambda x: np.einsum("i,i", x, x), lambda x: np.arctan2(x, 1.0), lambda x: np.sinc(x),
    lambda x: np.interp(x, [0.0, 5.0], [1.0, 2.0]), lambda x: np.convolve(x, [1.0, 2.0]),
    lambda x: np.cross(x[:3], x[1:]), lambda x: np.trapezoid(x), lambda x: np.ptp(x),
    lambda x: np.select([x > 2], [x]), lambda x: np.append(x, x), lambda x: np.fmax(x, 2.0),
    lambda x: np.gradient(x), lambda x: np.nan_to_num(x), lambda x: np.average(x, weights=x),
], ids=lambda f: "")
def test_numpy_functions_on_tensors_are_differentiable(call):
    x = fg.tensor([1.25, 3.5, 2.0, 4.75], requires_grad=True)
    out = call(x)
    assert isinstance(out, fg.Tensor) and out.requires_grad
    fg.sum(out * 1.0).backward()
    assert x.grad is not None and np.all(np.isfinite(x.grad.data))


# ---- the forms NumPy takes -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["concatenate", "stack", "hstack", "vstack", "dstack",
                                  "column_stack"])
def test_joining_takes_tuples_mixed_values_single_arrays_and_generators(name):
    a = fg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = np.ones((2, 3))
    join = getattr(fnp, name)
    ref = getattr(np, name)
    for arg, plain in (((a, b), (a.data, b)), ([b, a], [b, a.data]),
                       ((x for x in (a, b)), (a.data, b))):
        out = join(arg)
        np.testing.assert_array_equal(out.data, ref(plain))
    out = join(a)                   # a single array: its rows
    np.testing.assert_array_equal(out.data, ref(a.data))
    a.grad = None
    fg.sum(join((a, b)) * 2.0).backward()
    np.testing.assert_array_equal(a.grad.data, np.full((2, 3), 2.0))


def test_append_and_stack_accept_generators_as_autograd_does():
    t = fg.tensor([1.0, 2.0], requires_grad=True)
    out = fnp.concatenate(t * k for k in range(3))
    fg.sum(out).backward()
    np.testing.assert_array_equal(t.grad.data, [3.0, 3.0])


def test_einsum_errors_name_the_problem():
    x = fg.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match="names 2 operand"):
        fg.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="no '...' ellipsis"):
        fg.einsum("i->i", x)
    with pytest.raises(ValueError, match="index 'j' has sizes 3 and 2"):
        fg.einsum("ij,jk->ik", x, x)
    with pytest.raises(ValueError, match="output subscript 'k'"):
        fg.einsum("ij->k", x)
    with pytest.raises(ValueError, match="invalid subscript"):
        fg.einsum("i$->", x)


def test_einsum_repeated_index_gradient_is_on_the_diagonal():
    a = fg.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    fg.einsum("ii->", a).backward()
    np.testing.assert_array_equal(a.grad.data, np.eye(3))
    b = fg.tensor(np.arange(8.0).reshape(2, 2, 2), requires_grad=True)
    fg.sum(fg.einsum("iij->j", b) * np.array([1.0, 2.0])).backward()
    want = np.zeros((2, 2, 2))
    want[0, 0], want[1, 1] = [1.0, 2.0], [1.0, 2.0]
    np.testing.assert_array_equal(b.grad.data, want)


def test_sort_and_partition_send_each_gradient_back_to_its_element():
    x = fg.tensor([3.0, 1.0, 2.0, 1.0], requires_grad=True)
    out = fg.sort(x)
    np.testing.assert_array_equal(out.data, [1.0, 1.0, 2.0, 3.0])
    fg.sum(out * np.array([10.0, 20.0, 30.0, 40.0])).backward()
    # the tied 1.0s get 10 and 20 between them (in their order), 2.0 gets 30, 3.0 gets 40
    assert sorted(x.grad.data[[1, 3]]) == [10.0, 20.0]
    assert x.grad.data[2] == 30.0 and x.grad.data[0] == 40.0
    y = fg.tensor(np.random.default_rng(0).permutation(9).astype(float), requires_grad=True)
    p = fg.partition(y, 4)
    np.testing.assert_array_equal(p.data, np.partition(y.data, 4))
    w = np.arange(9.0)
    fg.sum(p * w).backward()
    for k, v in enumerate(p.data):
        assert y.grad.data[list(y.data).index(v)] == w[k]


def test_nan_to_num_and_nan_functions_at_nan_and_inf():
    x = fg.tensor([1.0, np.nan, np.inf, -np.inf, -2.0], requires_grad=True)
    y = fg.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0)
    np.testing.assert_array_equal(y.data, [1.0, 0.5, 9.0, -9.0, -2.0])
    fg.sum(y * 3.0).backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 0.0, 0.0, 0.0, 3.0])
    z = fg.tensor([[np.nan, np.nan], [1.0, np.nan]], requires_grad=True)
    m = fg.nanmax(z, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.nanmax(z.data, axis=1)
    np.testing.assert_array_equal(m.data, ref)
    fg.nansum(m * 1.0).backward()
    np.testing.assert_array_equal(z.grad.data, [[0.0, 0.0], [1.0, 0.0]])


def test_cumprod_gradient_with_zeros_is_exact():
    x = fg.tensor([2.0, 0.0, 3.0, 0.0, 5.0], requires_grad=True)
    fg.sum(fg.cumprod(x)).backward()
    # d/dx_k sum_j prod_{i<=j} x_i, term by term
    want = [1.0, 2.0 + 2 * 3.0, 0.0, 0.0, 0.0]
    np.testing.assert_array_equal(x.grad.data, want)
    h = fg.hessian(lambda v: fg.sum(fg.cumprod(v)))(np.array([2.0, 0.0, 3.0]))
    num = np.array([[0, 1 + 3.0, 0], [1 + 3.0, 0, 2.0], [0, 2.0, 0]])
    np.testing.assert_allclose(h, num)


def test_trim_zeros_on_tensors():
    x = fg.tensor([0.0, 0.0, 1.5, 0.0, -2.0, 0.0], requires_grad=True)
    out = fg.trim_zeros(x)
    np.testing.assert_array_equal(out.data, np.trim_zeros(x.data))
    fg.sum(out * 2.0).backward()
    np.testing.assert_array_equal(x.grad.data, [0, 0, 2, 2, 2, 0])
    np.testing.assert_array_equal(fg.trim_zeros(x, "b").data, np.trim_zeros(x.data, "b"))
    with fg.Graph().as_default(), pytest.raises(TypeError, match="trim_zeros"):
        fg.trim_zeros(fg.placeholder(fg.float64, (4,)))


def test_two_result_functions():
    x = fg.tensor([1.5, -2.25, 8.0], requires_grad=True)
    frac, whole = fg.modf(x)
    f_ref, w_ref = np.modf(x.data)
    np.testing.assert_array_equal(frac.data, f_ref)
    np.testing.assert_array_equal(whole.data, w_ref)
    m, e = fg.frexp(x)
    np.testing.assert_array_equal(m.data, np.frexp(x.data)[0])
    np.testing.assert_array_equal(e.data, np.frexp(x.data)[1])
    assert not e.requires_grad
    fg.sum(m).backward()
    np.testing.assert_array_equal(x.grad.data, 2.0 ** -np.frexp(x.data)[1])
    q, r = divmod(fg.tensor([7.0, -7.0]), 3.0)
    np.testing.assert_array_equal(q.data, [2.0, -3.0])
    np.testing.assert_array_equal(r.data, [1.0, 2.0])


def test_modes_without_a_gradient_are_refused_clearly():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="mode='mean'"):
        fg.pad(x, 1, mode="mean")
    with pytest.raises(NotImplementedError, match="method='weibull'"):
        fg.quantile(x, 0.5, method="weibull")
    with pytest.raises(NotImplementedError, match="xp"):
        xp = fg.tensor([0.0, 5.0], requires_grad=True)
        fg.sum(fg.interp(x, xp, [0.0, 1.0])).backward()
    # plain values keep NumPy's every mode
    np.testing.assert_array_equal(fnp.pad(np.arange(3.0), 1, mode="mean"),
                                  np.pad(np.arange(3.0), 1, mode="mean"))


def test_linspace_endpoints_are_differentiable_eager_static_and_traced():
    def f(a, b):
        return fg.sum(fg.linspace(a, b, 5) ** 2)
    g = fg.grad(f, argnums=(0, 1))(0.5, 2.0)
    t = np.linspace(0, 1, 5)
    samples = 0.5 + (2.0 - 0.5) * t
    np.testing.assert_allclose(g, (np.sum(2 * samples * (1 - t)), np.sum(2 * samples * t)))
    np.testing.assert_allclose(fg.function(fg.grad(f, argnums=(0, 1)))(0.5, 2.0), g)


# ---- cross of 2-element vectors: what the installed NumPy takes -------------------------------------
def test_cross_takes_2_vectors_exactly_where_numpy_does():
    from fastgraph.ops.products import CROSS_TAKES_2_VECTORS
    a, b = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([[7.0, 8.0], [9.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = np.cross(a, b)
        except ValueError:
            expected = None
    assert CROSS_TAKES_2_VECTORS == (expected is not None)
    if expected is None:
        with pytest.raises(ValueError, match="3 and 2 elements"):
            fg.cross(fg.tensor(a), fg.tensor(b))
        with pytest.raises(ValueError, match="3 and 2 elements"):
            fg.cross(fg.placeholder(fg.float64, (2, 3)), fg.placeholder(fg.float64, (2, 2)))
    else:
        np.testing.assert_array_equal(fg.cross(fg.tensor(a), fg.tensor(b)).numpy(), expected)


def test_a_tensor_is_an_index_only_when_it_holds_one_integer():
    assert [10, 11, 12][fg.tensor(np.int64(2))] == 12
    assert np.zeros(fg.tensor(np.int64(3))).shape == (3,)
    with pytest.raises(TypeError, match="not a float64 Tensor of shape"):
        [10, 11, 12][fg.tensor(2.0, requires_grad=True)]
