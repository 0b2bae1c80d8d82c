"""The tape's compiled elementwise kernels (``OpDef.set_kernel``) and compiled VJPs
(``OpDef.set_eager_vjps``): same results as NumPy bit for bit, same dtypes, same warnings, and the
NumPy path wherever the kernels do not apply."""
import warnings

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.kernels import elementwise as _kernels
from fastgraph import ops as F
from fastgraph._core import G, Kernel, X1

KERNEL_OPS = sorted(name for name, op in F.REGISTRY.items() if op.has_kernel)
VJP_OPS = sorted(name for name, op in F.REGISTRY.items()
                 if op.eager_vjps is not None and op.elementwise)
DTYPES = [np.float64, np.float32]


def _data(rng, name, shape, dtype):
    # inside every op's domain (log, sqrt, power, ...; arcsin/arccos/arctanh and arccosh)
    lo, hi = ((-0.9, 0.9) if name in ("arcsin", "arccos", "arctanh") else
              (1.2, 3.0) if name == "arccosh" else (0.3, 2.0))
    x = rng.uniform(lo, hi, size=shape)
    return x.astype(dtype)


def _fn(name):
    return getattr(F, name)


def test_expected_ops_have_kernels():
    for name in ("add", "subtract", "multiply", "divide", "negative", "exp", "log", "tanh",
                 "tanh_grad", "sigmoid_grad"):
        assert name in KERNEL_OPS
    # a gufunc and SciPy's ufuncs keep the ufunc machinery
    assert not F.REGISTRY["matmul"].has_kernel
    assert not F.REGISTRY["sigmoid"].has_kernel
    assert not F.REGISTRY["erf"].has_kernel


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64,), (3, 5)])
@pytest.mark.parametrize("name", KERNEL_OPS)
def test_kernel_matches_numpy_bit_for_bit(name, shape, dtype, rng):
    op = F.REGISTRY[name]
    nin = 2 if name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                        "floor_divide", "tanh_grad", "sigmoid_grad") \
        or getattr(op.forward, "nin", 1) == 2 else 1
    xs = [_data(rng, name, shape, dtype) for _ in range(nin)]
    want = op.forward(*xs)
    for got in (_fn(name)(*xs),                                        # plain arrays
                _fn(name)(*[fg.tensor(x, requires_grad=True) for x in xs]).data):  # the tape
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [0.3, 3, np.float64(1.7), np.float32(1.7), -2.5])
def test_array_with_scalar_operand(dtype, scalar, rng):
    x = _data(rng, "multiply", (64,), dtype)
    t = fg.tensor(x, requires_grad=True)
    for name in ("add", "subtract", "multiply", "divide", "maximum"):
        f = _fn(name)
        for got, want in ((f(t, scalar).data, F.REGISTRY[name].forward(x, scalar)),
                          (f(scalar, t).data, F.REGISTRY[name].forward(scalar, x))):
            assert got.dtype == want.dtype  # float32 * np.float64 promotes, as in NumPy
            np.testing.assert_array_equal(got, want)


def test_paths_the_kernels_leave_to_numpy(rng):
    x = rng.standard_normal((4, 6))
    cases = [
        (x[:, ::2], x[:, 1::2]),                 # not contiguous
        (x, x[0]),                               # broadcasting
        (x.astype(np.float32), x),               # mixed dtypes
        (x.astype(np.int64), x.astype(np.int64)),  # integers
        (x.T, x.T),                              # Fortran order
        (x.astype(">f8"), x.astype(">f8")),      # byte-swapped
        (x, 10 ** 30),                           # a Python int beyond float32's exact range
        (x.astype(np.float32), 1e300),           # a float beyond float32's range
    ]
    with np.errstate(over="ignore"):
        for a, b in cases:
            t = fg.tensor(a, requires_grad=a.dtype.kind == "f")
            got = (t * b).data
            want = a * b
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_zero_d_results_stay_numpy_scalars_for_plain_values():
    got = fg.add(np.array(1.5), np.array(2.0))
    assert type(got) is type(np.add(np.array(1.5), np.array(2.0)))


def test_floating_point_errors_warn_and_raise_as_numpy_says():
    x = np.array([0.0, 1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        y = fg.log(fg.tensor(x, requires_grad=True))
    assert y.data[0] == -np.inf
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        fg.log(fg.tensor(x))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        fg.log(x)  # plain arrays too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="ignore"):
            assert np.isinf(fg.exp(fg.tensor(np.full(8, 1000.0))).data).all()
    with pytest.warns(RuntimeWarning, match="overflow"):
        fg.exp(fg.tensor(np.full(8, 1000.0)))


def test_flags_left_set_before_an_op_are_not_blamed_on_it():
    big = float("1e308")
    assert big * 10.0 == float("inf")  # Python float math leaves the CPU's overflow flag set
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = fg.tensor(np.ones(4)) * 2.0
    np.testing.assert_array_equal(y.data, np.full(4, 2.0))


# ---- compiled VJPs against the rules they replace ---------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64,), ()])  # () runs on NumPy scalars
@pytest.mark.parametrize("name", VJP_OPS)
def test_eager_vjps_match_the_rules_bit_for_bit(name, shape, dtype, rng):
    op = F.REGISTRY[name]
    n = len(op.vjps)
    xs = [_data(rng, name, shape, dtype) for _ in range(n)]
    g = np.asarray(rng.standard_normal(shape), dtype=dtype)
    ts = [fg.tensor(x, requires_grad=True) for x in xs]
    out = _fn(name)(*ts)
    got = fg.autograd.grad(out, ts, grad_outputs=fg.tensor(g))
    vals = [x[()] for x in xs]  # the tape computes 0-d values as NumPy scalars
    ans = op.forward(*vals)
    for i in range(n):
        want = op.vjps[i](g[()], ans, *vals)
        assert got[i].dtype == dtype
        np.testing.assert_array_equal(got[i].data, np.asarray(want, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_values_keep_numpy_types(dtype):
    x, y = dtype(1.5), dtype(0.25)
    for name in ("add", "multiply", "divide", "tanh_grad"):
        got, want = _fn(name)(x, y), F.REGISTRY[name].forward(x, y)
        assert type(got) is type(want) and got == want
    got = fg.tanh(x)
    assert type(got) is type(np.tanh(x)) and got == np.tanh(x)
    assert type(fg.multiply(x, 2.0)) is dtype
    assert type(fg.multiply(np.float32(1.5), np.float64(2.0))) is np.float64


def test_eager_vjps_keep_create_graph_differentiable():
    x = fg.tensor(np.linspace(0.1, 1.0, 8), requires_grad=True)
    y = fg.tanh(x * x).sum()
    (g,) = fg.autograd.grad(y, x, create_graph=True)
    (gg,) = fg.autograd.grad(g.sum(), x)
    xd = x.data
    t = np.tanh(xd * xd)
    # d/dx [2x (1 - t^2)] = 2 (1 - t^2) - 8 x^2 t (1 - t^2)
    np.testing.assert_allclose(gg.data, 2 * (1 - t * t) - 8 * xd * xd * t * (1 - t * t),
                               rtol=1e-12)


# 2-D recipes (matmul): the rules' np.matmul on transposed views, without their frames
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((5, 3), (3, 4)), ((1, 7), (7, 1)), ((4, 6), (6,)),
                                    ((6,), (6, 4)), ((6,), (6,)), ((2, 4, 3), (3, 5)),
                                    ((3, 4), (2, 4, 5))])
def test_matmul_eager_vjps_match_the_rules_bit_for_bit(shapes, dtype, rng):
    op = F.REGISTRY["matmul"]
    assert op.eager_vjps is not None
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    ans = np.matmul(a, b)
    g = rng.standard_normal(ans.shape).astype(dtype)
    ta, tb = fg.tensor(a, requires_grad=True), fg.tensor(b, requires_grad=True)
    got = fg.autograd.grad(fg.matmul(ta, tb), [ta, tb], grad_outputs=fg.tensor(g))
    for i, x in enumerate((a, b)):
        want = op.vjps[i](g, ans, a, b)
        want = F.sum_to_like(want, x) if np.shape(want) != x.shape else want
        assert got[i].dtype == dtype and got[i].shape == x.shape
        np.testing.assert_array_equal(got[i].data, want)


def test_matmul_eager_vjps_on_views_and_mixed_dtypes(rng):
    a = rng.standard_normal((6, 5))
    b = rng.standard_normal((6, 4)).astype(np.float32)
    ta = fg.tensor(a.T, requires_grad=True)        # a transposed (Fortran-order) view
    tb = fg.tensor(b, requires_grad=True)
    (fg.matmul(ta, tb) * 2.0).sum().backward()
    g = np.full((5, 4), 2.0)
    np.testing.assert_array_equal(ta.grad.data, g @ b.T)
    assert tb.grad.dtype == np.float32             # cast back to the input's dtype
    np.testing.assert_array_equal(tb.grad.data, (a.T.T @ g).astype(np.float32))
    # the gradients are new arrays: never the inputs, never each other
    for t in (ta, tb):
        assert not np.shares_memory(t.grad.data, a) and not np.shares_memory(t.grad.data, b)


def test_matmul_gradients_accumulate_and_create_graph_uses_the_rules(rng):
    w = fg.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = rng.standard_normal((4, 3))
    fg.matmul(fg.matmul(x, w), w).sum().backward()  # w reached twice: the sums add up
    ones = np.ones((4, 3))
    want = (x @ w.data).T @ ones + x.T @ (ones @ w.data.T)
    np.testing.assert_allclose(w.grad.data, want, rtol=1e-13)
    w.grad = None
    (g,) = fg.autograd.grad(fg.matmul(fg.matmul(x, w), w).sum(), w, create_graph=True)
    (gg,) = fg.autograd.grad((g * g).sum(), w)
    assert gg.shape == (3, 3) and np.isfinite(gg.data).all()


def test_bias_gradients_sum_over_broadcast_axes_like_sum_to_like(rng):
    for gshape, xshape in [((128, 10), (10,)), ((4, 3, 5), (3, 1)), ((2, 3, 4), (1, 4)),
                           ((2, 3), (1, 1)), ((5,), (1,)), ((3, 4), ())]:
        x = rng.standard_normal(xshape).astype(np.float32)
        g = rng.standard_normal(gshape).astype(np.float32)
        tx = fg.tensor(x, requires_grad=True)
        (out,) = fg.autograd.grad(tx + np.zeros(gshape, np.float32), tx, grad_outputs=fg.tensor(g))
        want = g                                   # the reference, written out
        while want.ndim > x.ndim:
            want = want.sum(axis=0)
        for ax, d in enumerate(xshape):
            if d == 1:
                want = want.sum(axis=ax, keepdims=True)
        assert out.shape == np.shape(x) and out.dtype == np.float32
        np.testing.assert_allclose(out.data, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(out.data, F.sum_to_like(g, x))   # the op: the same code


def test_sum_to_like_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"sum_to_like.*\(4, 3\).*\(2,\)"):
        F.sum_to_like(np.ones((4, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="sum_to_like"):
        F.sum_to_like(np.ones(3), np.zeros((2, 3)))


def test_eager_vjp_recipes_are_checked():
    with pytest.raises(ValueError, match="kernel"):
        F.REGISTRY["add"].set_eager_vjps([Kernel(F.REGISTRY["sigmoid"], G), None])
    with pytest.raises(ValueError, match="2-D"):
        F.REGISTRY["add"].set_eager_vjps([Kernel(F.REGISTRY["multiply"], G, X1.T), None])
    with pytest.raises(ValueError, match="two 2-D"):
        F.REGISTRY["add"].set_eager_vjps([Kernel(F.REGISTRY["matmul"], G), None])
    with pytest.raises(ValueError, match="built-in kernel"):
        F.REGISTRY["add"].set_kernel("no_such_loop")


# ---- gradient buffers the walk overwrites (in-place sums, a dead gradient reused) -------------
def _chain(a, b, n=6):
    z = a
    for _ in range(n):
        z = fg.tanh(z * a + b) - z * 0.5
    return z.sum()


@pytest.mark.parametrize("shape", [(64,), ()])
def test_in_place_gradient_buffers_match_the_create_graph_path(shape):
    rng = np.random.default_rng(5)
    a0, b0 = rng.uniform(0.2, 0.8, shape), rng.uniform(-0.5, 0.5, shape)
    a, b = fg.tensor(a0, requires_grad=True), fg.tensor(b0, requires_grad=True)
    _chain(a, b).backward()
    # with create_graph the gradients are Tensors: nothing is overwritten in place
    a2, b2 = fg.tensor(a0, requires_grad=True), fg.tensor(b0, requires_grad=True)
    ga, gb = fg.autograd.grad(_chain(a2, b2), [a2, b2], create_graph=True)
    np.testing.assert_array_equal(a.grad.data, ga.data)
    np.testing.assert_array_equal(b.grad.data, gb.data)


def test_gradients_seen_by_hooks_and_retain_grad_are_not_overwritten():
    x = fg.tensor(np.linspace(0.1, 1.0, 16), requires_grad=True)
    seen = {}
    m = x * 3.0
    m.register_hook(lambda g: seen.setdefault("m", g.data))
    u = -m                     # a fresh gradient reaches m through negative's VJP
    u.retain_grad()
    w = u * x                  # u's gradient is w's gradient times x, a fresh array
    y = (w * 2.0).sum()
    y.backward()
    xd = x.data
    np.testing.assert_array_equal(u.grad.data, 2.0 * xd)
    np.testing.assert_array_equal(seen["m"], -(2.0 * xd))
    np.testing.assert_array_equal(x.grad.data, 2.0 * -(3.0 * xd) + -(2.0 * xd) * 3.0)


def test_seed_gradient_is_not_overwritten():
    x = fg.tensor(np.ones(8), requires_grad=True)
    y = (x * 2.0) * 3.0 + x * 1.0
    seed = np.full(8, 0.5)
    y.backward(seed)
    np.testing.assert_array_equal(seed, np.full(8, 0.5))
    np.testing.assert_array_equal(x.grad.data, np.full(8, 3.5))


def test_floating_point_error_in_an_in_place_sum_leaves_numpy_to_report_it():
    def summed_gradients_overflow():
        x = fg.tensor(np.full(4, 1e-300), requires_grad=True)
        y = (x * 1e308 + x * 1e308 + x * 1e308).sum()  # forward: finite; x's gradient: inf
        return x, y

    x, y = summed_gradients_overflow()
    with pytest.warns(RuntimeWarning, match="overflow encountered in add"):
        y.backward()
    assert np.isinf(x.grad.data).all()
    x, y = summed_gradients_overflow()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        y.backward()


# ---- relu: np.maximum's loop against zeros, and g * (x > 0) in one pass, at every size ----------
_SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1e-310, -1e-310, 5e-324,
            3.0, -2.0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 13, 1024, 1025, 32768, 70001])
def test_relu_kernels_match_numpy_bit_for_bit(n, dtype):
    rng = np.random.default_rng(n)
    with np.errstate(all="ignore"):
        x = np.concatenate([_SPECIAL, rng.standard_normal(n)]).astype(dtype)
        want = np.maximum(x, 0)
    g = rng.standard_normal(x.shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no flag the NumPy ops would not raise
        got = fg.relu(fg.tensor(x)).data
        t = fg.tensor(x, requires_grad=True)
        fg.relu(t).backward(fg.tensor(g))
    assert got.dtype == dtype and t.grad.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(t.grad.data.view(np.uint8), (g * (x > 0)).view(np.uint8))
    np.testing.assert_array_equal(F.relu(x).view(np.uint8), want.view(np.uint8))  # plain arrays


def test_relu_kernels_leave_other_cases_to_numpy():
    # an infinite gradient where the mask is 0: NumPy's "invalid value" warning, as before
    x = fg.tensor(np.array([-1.0, 2.0] * 20000), requires_grad=True)
    with pytest.warns(RuntimeWarning, match="invalid"):
        fg.relu(x).backward(fg.tensor(np.full(40000, np.inf)))
    np.testing.assert_array_equal(x.grad.data[:2], [np.nan, np.inf])
    # views, other dtypes and mixed dtypes keep NumPy's path and results
    v = np.arange(-20.0, 20.0).reshape(8, 5).T
    np.testing.assert_array_equal(fg.relu(fg.tensor(v)).data, np.maximum(v, 0))
    i = np.arange(-3, 3)
    np.testing.assert_array_equal(fg.relu(fg.tensor(i)).data, np.maximum(i, 0))
    t = fg.tensor(np.linspace(-1, 1, 9, dtype=np.float32), requires_grad=True)
    fg.relu(t).backward(fg.tensor(np.ones(9)))  # a float64 gradient for a float32 input
    assert t.grad.dtype == np.float32
    np.testing.assert_array_equal(t.grad.data, (t.data > 0).astype(np.float32))
    # create_graph=True runs the rule: the gradient is itself differentiable
    t = fg.tensor(np.array([-1.0, 0.5, 2.0]), requires_grad=True)
    (gx,) = fg.autograd.grad((fg.relu(t) * t).sum(), t, create_graph=True)
    np.testing.assert_array_equal(gx.data, [0.0, 1.0, 4.0])
    assert gx.requires_grad


# ---- the column sum (bias gradients): kernels.elementwise.sum_leading / sum_to_shape_of -------------------
COLSUM_SHAPES = [((128, 256), 1), ((128, 10), 1), ((2, 2), 1), ((1, 5), 1), ((1000, 3), 1),
                 ((3, 10007), 1), ((7, 9, 33), 2), ((7, 9, 33), 1), ((4, 3, 2, 5), 3)]


def _colsum_data(shape, dtype, rng):
    # magnitudes spread over 1e-3..1e3 so that the order of the additions shows in the bits
    return (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3], size=shape)).astype(dtype)


@pytest.mark.parametrize("baseline", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, lead", COLSUM_SHAPES)
def test_column_sum_is_numpys_reduce_bit_for_bit(shape, lead, dtype, baseline, rng):
    g = _colsum_data(shape, dtype, rng)
    want = np.add.reduce(g, axis=tuple(range(lead)))
    _kernels._colsum_baseline(baseline)
    try:
        out = np.empty(shape[lead:], dtype)
        assert _kernels.sum_leading(g, lead, out) is out
        assert out.tobytes() == want.tobytes()
        like = np.zeros(shape[lead:], dtype)
        got = _kernels.sum_to_shape_of(g, like)
        assert got.shape == like.shape and got.tobytes() == want.tobytes()
    finally:
        _kernels._colsum_baseline(False)


@pytest.mark.parametrize("case", ["one_column", "no_rows", "strided", "float16", "int64",
                                  "overlap", "nan_inf", "negative_zero"])
def test_column_sum_fallbacks_and_special_values(case, rng):
    """Where the C pass does not apply NumPy computes; either way the values are NumPy's."""
    g = _colsum_data((64, 8), np.float64, rng)
    lead, out = 1, np.empty(8)
    if case == "one_column":            # NumPy sums a single column pairwise
        g, out = _colsum_data((5000, 1), np.float32, rng), np.empty(1, np.float32)
    elif case == "no_rows":
        g = np.empty((0, 8))
    elif case == "strided":
        g = _colsum_data((64, 16), np.float64, rng)[:, ::2]
    elif case == "float16":
        g, out = g.astype(np.float16), np.empty(8, np.float16)
    elif case == "int64":
        g, out = (g * 100).astype(np.int64), np.empty(8, np.int64)
    elif case == "overlap":
        g = np.ones((64, 8))
        out = g[0]
    elif case == "nan_inf":
        g[3, 0], g[5, 1], g[7, 1] = np.nan, np.inf, np.inf
    elif case == "negative_zero":
        g = np.full((4, 8), -0.0)
    want = np.add.reduce(g, axis=0)
    got = _kernels.sum_leading(g, lead, out)
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got).tolist() == np.signbit(want).tolist()


def test_column_sum_overflow_warns_and_raises_as_numpy_says():
    g = np.full((4, 3), np.finfo(np.float32).max, np.float32)
    out = np.empty(3, np.float32)
    with pytest.warns(RuntimeWarning, match="overflow"):
        _kernels.sum_leading(g, 1, out)
    assert np.isinf(out).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        _kernels.sum_leading(g, 1, out)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        _kernels.sum_to_shape_of(g, np.zeros(3, np.float32))


# ---- a weight's gradient summed over the steps of a loop: gemm with beta = 1 -------------------
from fastgraph import _numpy_blas                   # noqa: E402
from fastgraph.kernels import blas as _blas         # noqa: E402


def _loop_gradient(xs, w, b, accumulate, linear=False):
    """W's gradient of sum_t sum(tanh(x_t @ W) * b) (without the tanh when ``linear``): one
    product x_t.T @ g_t per step summed into W's gradient, by BLAS's beta = 1 (``accumulate``)
    or fresh and added (the check told to refuse every shape)."""
    _blas.configure_accumulate(_numpy_blas.accumulate_exact if accumulate else None)
    try:
        W = fg.tensor(w, requires_grad=True)
        total = 0.0
        for x in xs:
            y = x @ W
            total = total + ((y if linear else fg.tanh(y)) * b).sum()
        total.backward()
        return W.grad.data
    finally:
        _blas.configure_accumulate(_numpy_blas.accumulate_exact)


@pytest.mark.skipif(not _numpy_blas.load(), reason="NumPy is not on scipy-openblas")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(32, 32, 128), (32, 128, 128), (7, 5, 3), (2000, 64, 48)])
def test_weight_gradients_summed_by_gemm_are_numpys_sums(shape, dtype, rng):
    batch, n_in, n_out = shape
    xs = [rng.standard_normal((batch, n_in)).astype(dtype) for _ in range(6)]
    w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)
    b = rng.standard_normal(n_out).astype(dtype)
    got = _loop_gradient(xs, w, b, True)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _loop_gradient(xs, w, b, False))
    # the shape was asked (a sum OpenBLAS splits over k, batch 2000 here, is refused, and the
    # gradient is the same either way)
    assert (np.dtype(dtype), n_in, batch, n_out, True, False) in _numpy_blas._accumulate_cache


@pytest.mark.skipif(not _numpy_blas.load(), reason="NumPy is not on scipy-openblas")
def test_accumulate_matmul_refuses_what_numpy_would_not_hand_to_gemm(rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3, 5)).astype(np.float32)
    acc = rng.standard_normal((4, 5)).astype(np.float32)
    want = acc + a @ b
    for args in ((a, b, acc.astype(np.float64)),            # mixed dtypes
                 (a, b, np.asfortranarray(acc)),           # acc not C-contiguous
                 (a[:, ::2], b[:2], acc),                   # a strided operand
                 (a, b[:, :4], acc),                        # shapes that do not match
                 (a[:1], b, acc[:1]),                       # a matrix-vector product
                 (a, b, a)):                                # acc overlapping an operand
        before = [x.copy() for x in args]
        assert _blas.accumulate_matmul(*args) == _blas.REFUSED
        for x, y in zip(args, before):
            np.testing.assert_array_equal(x, y)
    assert _blas.accumulate_matmul(a, b, acc) == _blas.DONE
    np.testing.assert_array_equal(acc, want)


@pytest.mark.skipif(not _numpy_blas.load(), reason="NumPy is not on scipy-openblas")
@pytest.mark.parametrize("batch", [4, 2])     # each step's product overflows; their sum does
def test_overflow_in_a_gemm_summed_gradient_warns_and_raises_as_numpy_says(batch):
    xs = [np.full((batch, 3), 1e37, np.float32) for _ in range(3)]
    w = np.full((3, 2), 1e-30, np.float32)
    b = np.full(2, 10.0, np.float32)

    def messages(accumulate):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = _loop_gradient(xs, w, b, accumulate, linear=True)
        return got, sorted(str(s.message) for s in seen)

    got, seen = messages(True)
    want, want_seen = messages(False)
    assert np.isinf(want).all()
    np.testing.assert_array_equal(got, want)
    assert seen == want_seen and seen
    for accumulate in (True, False):
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            _loop_gradient(xs, w, b, accumulate, linear=True)
