"""The NumPy functions added beyond the core vocabulary (log10 ... tensordot, linalg.norm).

The op table (``optable.py``) checks each like every other op: values against NumPy, gradients
against finite differences and PyTorch, second order, float32, eager against static.  Here: each
is NumPy's value bit for bit (eager, plain arrays, static and ``fg.function``), reachable as
``fg.X``, ``fastgraph.numpy.X`` and ``np.X(tensor)``, ``fg.function`` gives eager's gradients,
elementwise ones without a VM opcode stay unfused steps, and edge cases: ``axis=None``, negative
axes, ``keepdims``, broadcasting, unknown static dimensions, dtypes, non-differentiable points.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
from fastgraph.ops import PUBLIC
from fastgraph.static.passes.fuse import cost as fuse_cost

from optable import CASES, COVERED_OPS, NUMPY_EXTRA_OPS, as_list, case_params, make_inputs

EXTRA = [c for c in CASES if c.op in NUMPY_EXTRA_OPS]
DTYPES = [np.float64, np.float32]
UNARY = "log10 log2 exp2 arcsin arccos arcsinh arccosh arctanh deg2rad rad2deg".split()
BINARY = ["logaddexp", "hypot", "remainder"]


def test_every_added_op_has_cases_and_is_public():
    assert not sorted(set(NUMPY_EXTRA_OPS) - set(COVERED_OPS))
    for name in NUMPY_EXTRA_OPS:
        if name != "norm":
            assert name in PUBLIC and callable(getattr(fg, name)) and hasattr(fnp, name)
    assert fnp.linalg.norm is fg.linalg.norm and fg.mod is fg.remainder


# ---- values: NumPy's bits, eager, NumPy-in and static alike ----------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("case", case_params(EXTRA))
def test_values_are_numpys_bit_for_bit(case, dtype):
    arrays = make_inputs(case, dtype)
    want = as_list(case.ref(*arrays))
    eager = as_list(case.fn(*[fg.tensor(a, requires_grad=i in case.diff)
                               for i, a in enumerate(arrays)]))
    plain = as_list(case.fn(*arrays))
    g = fg.Graph()
    with g.as_default():
        phs = [fg.placeholder(a.dtype, a.shape) for a in arrays]
        outs = as_list(case.fn(*phs))
        static = fg.Session(g).run(outs, dict(zip(phs, arrays)))
        static_shapes = [o.shape for o in outs]
    for w, e, p, s, shape in zip(want, eager, plain, static, static_shapes):
        w = np.asarray(w)
        for got, how in ((e.data, "eager"), (np.asarray(p), "numpy"), (np.asarray(s), "static")):
            assert got.dtype == w.dtype, (how, got.dtype, w.dtype)
            np.testing.assert_array_equal(got, w, err_msg=how)
        assert tuple(shape) == w.shape, "static shape rule"


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("case", case_params([c for c in EXTRA if not c.zero_grad]))
def test_function_equals_eager_with_gradients(case, dtype, monkeypatch):
    """``@fg.function`` (every region fused however small) gives eager's values and gradients."""
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)
    arrays = make_inputs(case, dtype)
    outs = as_list(case.fn(*map(fg.tensor, arrays)))
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(o.shape).astype(dtype) for o in outs]

    def loss(*xs):
        total = 0.0
        for o, w in zip(as_list(case.fn(*xs)), ws):
            total = total + fg.sum(fg.tanh(o) * w)
        return total

    vg = fg.value_and_grad(loss, argnums=tuple(case.diff))
    v_eager, g_eager = vg(*arrays)
    v_fn, g_fn = fg.function(vg)(*arrays)
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(v_fn, v_eager, **tol)
    for a, b, x in zip(g_fn, g_eager, (arrays[i] for i in case.diff)):
        assert np.asarray(a).dtype == np.asarray(b).dtype == dtype
        assert np.shape(a) == x.shape
        np.testing.assert_allclose(a, b, **tol)


# ---- routing: fg.X, fastgraph.numpy.X, np.X(tensor) ----------------------------------------------
def test_numpy_ufuncs_on_tensors_are_recorded():
    x = fg.tensor([0.3, 0.6, 0.8], requires_grad=True)
    y = fg.tensor([0.7, 1.2, -0.9], requires_grad=True)
    for name in UNARY + ["radians", "degrees"]:
        arg = x + 2.0 if name == "arccosh" else x
        out = getattr(np, name)(arg)
        assert isinstance(out, fg.Tensor) and out.requires_grad, name
        np.testing.assert_array_equal(out.data, getattr(np, name)(arg.data))
    for name in BINARY + ["mod"]:
        out = getattr(np, name)(x, y)
        assert isinstance(out, fg.Tensor) and out.grad_fn is not None, name
        np.testing.assert_array_equal(out.data, getattr(np, name)(x.data, y.data))
    # and from fastgraph.numpy, where plain values get NumPy's own function
    a = np.array([0.25, 0.5])
    for name in UNARY[:-2] + ["radians", "degrees", "deg2rad"]:
        arg = a + 1.0 if name == "arccosh" else a
        np.testing.assert_array_equal(getattr(fnp, name)(arg), getattr(np, name)(arg))
        assert isinstance(getattr(fnp, name)(fg.tensor(arg)), fg.Tensor)


NUMPY_CALLS = [
    ("cumsum", lambda np_, t: np_.cumsum(t, axis=0)),
    ("diff", lambda np_, t: np_.diff(t, axis=-1)),
    ("flip", lambda np_, t: np_.flip(t, 0)),
    ("roll", lambda np_, t: np_.roll(t, 1, axis=1)),
    ("moveaxis", lambda np_, t: np_.moveaxis(t, 0, 1)),
    ("repeat", lambda np_, t: np_.repeat(t, 2, axis=0)),
    ("tile", lambda np_, t: np_.tile(t, (1, 2))),
    ("atleast_3d", lambda np_, t: np_.atleast_3d(t)),
    ("hstack", lambda np_, t: np_.hstack([t, t])),
    ("vstack", lambda np_, t: np_.vstack((t, t[0]))),
    ("dstack", lambda np_, t: np_.dstack([t, t])),
    ("column_stack", lambda np_, t: np_.column_stack([t[:, 0], t])),
    ("diagonal", lambda np_, t: np_.diagonal(t, 1)),
    ("diag", lambda np_, t: np_.diag(t[0])),
    ("trace", lambda np_, t: np_.trace(t)),
    ("triu", lambda np_, t: np_.triu(t, -1)),
    ("tril", lambda np_, t: np_.tril(t)),
    ("tensordot", lambda np_, t: np_.tensordot(t, t, ([0], [0]))),
    ("norm", lambda np_, t: np_.linalg.norm(t, axis=1, keepdims=True)),
    ("norm-ord", lambda np_, t: np_.linalg.norm(t, ord=np.inf)),
]


@pytest.mark.parametrize("name,call", NUMPY_CALLS, ids=[n for n, _ in NUMPY_CALLS])
def test_numpy_functions_on_tensors_are_recorded(name, call, rng):
    data = rng.standard_normal((3, 4))
    t = fg.tensor(data, requires_grad=True)
    out = call(np, t)
    assert isinstance(out, fg.Tensor) and out.grad_fn is not None
    want = call(np, data)
    np.testing.assert_array_equal(out.data, want)
    np.testing.assert_array_equal(call(fnp, data), want)        # plain values: NumPy's own
    fg.sum(out * out).backward()
    u = fg.tensor(data, requires_grad=True)
    ref = call(fnp, u)                                           # fastgraph.numpy, differentiable
    fg.sum(ref * ref).backward()
    np.testing.assert_array_equal(t.grad.data, u.grad.data)


def test_method_and_operator_forms():
    x = fg.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    np.testing.assert_array_equal(x.cumsum(1).data, np.arange(1.0, 7.0).reshape(2, 3).cumsum(1))
    assert x.repeat(2).shape == (12,) and x.diagonal().shape == (2,)
    assert x.trace().item() == 6.0
    y = (x % 4.0) + (10.0 % x) + (np.full(3, 5.0) % x)
    assert isinstance(y, fg.Tensor)
    y.sum().backward()
    d = x.data
    np.testing.assert_array_equal(x.grad.data, 1.0 - np.floor(10.0 / d) - np.floor(5.0 / d))
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(np.float64, (2, 3))
        out = fg.Session(g).run([p % 4.0, p.cumsum(), p.trace(), p.repeat(2, axis=0)],
                                {p: d})
    np.testing.assert_array_equal(out[0], d % 4.0)
    np.testing.assert_array_equal(out[1], d.cumsum())
    assert out[2] == d.trace()
    np.testing.assert_array_equal(out[3], d.repeat(2, axis=0))


def test_inplace_mod():
    a = fg.tensor([5.0, 7.0])
    a %= 3.0
    np.testing.assert_array_equal(a.data, [2.0, 1.0])
    leaf = fg.tensor([5.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf %= 3.0
    y = leaf * 2.0
    y %= 3.0                    # a non-leaf: recorded out of place
    y.backward()
    np.testing.assert_array_equal(leaf.grad.data, [2.0])


# ---- fusion: elementwise ops without a VM opcode stay steps of their own ---------------------
def test_new_elementwise_ops_stay_unfused_steps(monkeypatch, rng):
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)
    x = rng.uniform(0.2, 0.8, 2000)
    y = rng.uniform(1.0, 2.0, 2000)

    def f(a, b):
        u = fg.log10(a * 2.0 + 1.0) * 1.5 + fg.arcsin(a) * fg.hypot(a, b)
        v = fg.logaddexp(u, b) - fg.remainder(u, 0.3) + fg.exp2(fg.arctanh(a - 0.1))
        return fg.sum(fg.tanh(v) * fg.arccosh(b + 1.0) + fg.deg2rad(v) * fg.log2(b))

    vg = fg.value_and_grad(f, argnums=(0, 1))
    g = fg.Graph()
    with g.as_default():
        pa, pb = fg.placeholder(np.float64, (None,)), fg.placeholder(np.float64, (None,))
        val, (ga, gb) = vg(pa, pb)
        feed = {pa: x, pb: y}
        text = fg.Session(g).explain([val, ga, gb], feed)
        fused = fg.Session(g).run([val, ga, gb], feed)
        plain = fg.Session(g, disable=("fuse",)).run([val, ga, gb], feed)
    assert "fused kernel" in text
    plan = text[text.index("[plan]"):]
    for name in ("log10", "arcsin", "hypot", "logaddexp", "remainder", "exp2", "arctanh",
                 "arccosh", "deg2rad", "log2"):
        assert f"{name} = {name}(" in plan, name
    eager = vg(x, y)
    traced = fg.function(vg)(x, y)
    for a, b, c, d in zip(fused, plain, [eager[0], *eager[1]], [traced[0], *traced[1]]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(c, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(d, b, rtol=1e-12, atol=1e-13)


# ---- edge cases: axes, keepdims, broadcasting, dtypes --------------------------------------------
@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_broadcast_and_sum_gradients_back(name, rng):
    a = rng.uniform(0.5, 2.0, (2, 1, 4))
    b = rng.uniform(0.5, 2.0, (3, 1)) + 0.123
    x, y = fg.tensor(a, requires_grad=True), fg.tensor(b, requires_grad=True)
    out = getattr(fg, name)(x, y)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.data, getattr(np, name)(a, b))
    out.sum().backward()
    assert x.grad.shape == a.shape and y.grad.shape == b.shape
    eps = 1e-6
    num = (getattr(np, name)(a, b + eps).sum() - getattr(np, name)(a, b - eps).sum()) / (2 * eps)
    np.testing.assert_allclose(y.grad.data.sum(), num, rtol=1e-6)


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_float32_stays_float32_and_integers_follow_numpy(name):
    arity = 2 if name in BINARY else 1
    data = [1.5, 1.25] if name == "arccosh" else [0.5, 0.25]
    args = [fg.tensor(np.array(data, np.float32), requires_grad=True) for _ in range(arity)]
    out = getattr(fg, name)(*args)
    assert out.dtype == np.float32
    out.sum().backward()
    assert all(a.grad.dtype == np.float32 for a in args)
    # weak Python scalars keep float32; integer input gives NumPy's dtype, without a gradient
    if arity == 2:
        assert getattr(fg, name)(args[0], 2.0).dtype == np.float32
    idata = [0, 0] if name in ("arcsin", "arccos", "arctanh") else [2, 3]
    ints = [fg.tensor(np.array(idata)) for _ in range(arity)]
    want = getattr(np, name)(*[np.array(idata)] * arity)
    got = getattr(fg, name)(*ints)
    assert got.dtype == want.dtype and not got.requires_grad
    np.testing.assert_array_equal(got.data, want)


def test_remainder_follows_the_divisor_sign_and_its_gradient():
    x = fg.tensor([5.5, -5.5, 5.5, -5.5], requires_grad=True)
    y = fg.tensor([2.0, 2.0, -2.0, -2.0], requires_grad=True)
    r = x % y
    np.testing.assert_array_equal(r.data, [1.5, 0.5, -0.5, -1.5])  # Python's %, not fmod
    r.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(y.grad.data, [-2.0, 3.0, 3.0, -2.0])  # -floor(x / y)


def test_gradients_at_non_differentiable_points():
    # hypot and the 2-norm at the origin: 0 (PyTorch's choice for norms), not nan
    x, y = fg.tensor([0.0, 3.0], requires_grad=True), fg.tensor([0.0, 4.0], requires_grad=True)
    fg.hypot(x, y).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.6])
    np.testing.assert_array_equal(y.grad.data, [0.0, 0.8])
    for kw in ({}, {"ord": 2}, {"ord": 3}, {"ord": 0.5}, {"ord": 1}, {"ord": np.inf}):
        z = fg.tensor(np.zeros(3), requires_grad=True)
        with np.errstate(all="raise"):
            fg.linalg.norm(z, **kw).backward()
        np.testing.assert_array_equal(z.grad.data, np.zeros(3), err_msg=str(kw))
    m = fg.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    fg.linalg.norm(m, axis=1).sum().backward()          # one zero row, one ordinary row
    np.testing.assert_array_equal(m.grad.data, [[0.0, 0.0], [0.6, 0.8]])
    f = fg.tensor(np.zeros((2, 2)), requires_grad=True)
    fg.linalg.norm(f).backward()
    np.testing.assert_array_equal(f.grad.data, np.zeros((2, 2)))
    # ord=1: sign(x), 0 at 0 (as abs); ord=inf: ties share the gradient evenly
    v = fg.tensor([0.0, -2.0, 1.0], requires_grad=True)
    fg.linalg.norm(v, 1).backward()
    np.testing.assert_array_equal(v.grad.data, [0.0, -1.0, 1.0])
    w = fg.tensor([2.0, -2.0, 1.0], requires_grad=True)
    fg.linalg.norm(w, np.inf).backward()
    np.testing.assert_array_equal(w.grad.data, [0.5, -0.5, 0.0])
    # a p-norm with p < 1 at a zero entry: 0 there (the derivative is unbounded)
    p = fg.tensor([0.0, 1.0, 4.0], requires_grad=True)
    with np.errstate(all="raise"):
        fg.linalg.norm(p, 0.5).backward()
    assert p.grad.data[0] == 0.0 and np.all(np.isfinite(p.grad.data))
    # logaddexp with -inf on one side: all of the gradient to the other
    a = fg.tensor([-np.inf, 0.0], requires_grad=True)
    b = fg.tensor([0.0, -np.inf], requires_grad=True)
    fg.logaddexp(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [0.0, 1.0])
    np.testing.assert_array_equal(b.grad.data, [1.0, 0.0])


def test_norm_forms_and_errors(rng):
    x = rng.standard_normal((2, 3, 4))
    t = fg.tensor(x, requires_grad=True)
    for kw in ({}, {"keepdims": True}, {"axis": -1}, {"axis": (0, 2)}, {"axis": (2, 0)},
               {"axis": 1, "keepdims": True, "ord": 1}, {"axis": (-1, 1), "ord": -np.inf},
               {"axis": (1, 2), "ord": "fro", "keepdims": True}, {"axis": 0, "ord": -2}):
        out = fg.linalg.norm(t, **kw)
        want = np.linalg.norm(x, **kw)
        assert out.shape == np.shape(want), kw
        np.testing.assert_array_equal(out.data, want, err_msg=str(kw))
    for bad in ({"ord": 1}, {"axis": (0, 1, 2)}, {"axis": (1, 1)}, {"axis": 0, "ord": "fro"},
                {"axis": (0, 1), "ord": 3}):
        with pytest.raises(ValueError):
            fg.linalg.norm(t, **bad)
    # matrix 2-norm, -2-norm and nuclear norm: NumPy's value; gradients through the SVD
    u, _, vh = np.linalg.svd(x[0], full_matrices=False)
    for ord, want in ((2, np.outer(u[:, 0], vh[0])), (-2, np.outer(u[:, -1], vh[-1])),
                      ("nuc", u @ vh)):
        m = fg.tensor(x[0], requires_grad=True)
        out = fg.linalg.norm(m, ord)
        assert out.item() == np.linalg.norm(x[0], ord)
        out.backward()
        np.testing.assert_allclose(m.grad.data, want, atol=1e-12, err_msg=str(ord))
    assert fg.linalg.norm(np.array([3, 4])) == 5.0 and \
        fg.linalg.norm(np.array([3, 4])).dtype == np.float64
    assert fg.linalg.norm(fg.tensor(np.ones(3, np.float32))).dtype == np.float32


def test_cumsum_axes_and_dtypes():
    x = np.arange(12.0).reshape(3, 4)
    for axis in (None, 0, 1, -1, -2):
        np.testing.assert_array_equal(fg.cumsum(fg.tensor(x), axis).data, np.cumsum(x, axis))
    for data in (np.arange(4, dtype=np.int32), np.array([True, False, True])):
        out = fg.cumsum(fg.tensor(data))
        assert out.dtype == np.cumsum(data).dtype and not out.requires_grad
    assert fg.cumsum(fg.tensor(2.0), axis=0).shape == (1,)
    with pytest.raises(np.exceptions.AxisError):
        fg.cumsum(fg.tensor(x), 2)


def test_diff_forms():
    x = np.array([[1.0, 4.0, 9.0, 16.0], [2.0, 3.0, 5.0, 7.0]])
    t = fg.tensor(x, requires_grad=True)
    for kw in ({}, {"n": 2}, {"n": 0}, {"axis": 0}, {"n": 3, "axis": -1}, {"prepend": 0.0},
               {"append": np.ones((2, 1)), "n": 2}, {"prepend": x[:, :1], "axis": 1}):
        out = fg.diff(t, **kw)
        want = np.diff(x, **kw)
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out.data, want, err_msg=str(kw))
    # a Python float prepend promotes float32 to float64, as NumPy does
    f32 = fg.tensor(x.astype(np.float32))
    assert fg.diff(f32, prepend=0.0).dtype == np.diff(x.astype(np.float32), prepend=0.0).dtype
    assert fg.diff(f32).dtype == np.float32
    b = np.array([True, True, False])
    np.testing.assert_array_equal(fg.diff(fg.tensor(b)).data, np.diff(b))
    with pytest.raises(ValueError, match="non-negative"):
        fg.diff(t, -1)
    with pytest.raises(ValueError, match="at least one dimensional"):
        fg.diff(fg.tensor(1.0))


def test_repeat_and_tile_forms(rng):
    x = rng.standard_normal((2, 3))
    t = fg.tensor(x, requires_grad=True)
    out = fg.repeat(t, [2, 0, 1], axis=1) * np.arange(1.0, 4.0)
    np.testing.assert_array_equal(out.data, np.repeat(x, [2, 0, 1], axis=1) * np.arange(1, 4))
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.data, [[3.0, 0.0, 3.0]] * 2)  # (1 + 2), none, 3
    np.testing.assert_array_equal(fg.repeat(t, [2], axis=0).data, np.repeat(x, [2], axis=0))
    with pytest.raises(ValueError):
        fg.repeat(t, [1, 2], axis=1)
    with pytest.raises(ValueError):
        fg.repeat(t, -1)
    for reps in (1, (2,), (1, 1), (2, 1, 3), ()):
        np.testing.assert_array_equal(fg.tile(t, reps).data, np.tile(x, reps))


def test_roll_moveaxis_flip_forms(rng):
    x = rng.standard_normal((2, 3, 4))
    t = fg.tensor(x)
    for shift, axis in ((1, None), ((1, 2), None), (1, (0, 2)), ((1, -1), (0, 0)), (-5, -1)):
        np.testing.assert_array_equal(fg.roll(t, shift, axis).data, np.roll(x, shift, axis))
    for src, dst in ((0, 2), (-1, 0), ((0, 2), (1, 0))):
        np.testing.assert_array_equal(fg.moveaxis(t, src, dst).data, np.moveaxis(x, src, dst))
    for axis in (None, 0, -1, (0, 2), ()):
        np.testing.assert_array_equal(fg.flip(t, axis).data, np.flip(x, axis))
    with pytest.raises(ValueError, match="repeated"):
        fg.flip(t, (0, -3))


def test_stacks_and_atleast_of_plain_and_mixed_values():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    out = fg.vstack([a, [3.0, 4.0]])
    np.testing.assert_array_equal(out.data, [[1.0, 2.0], [3.0, 4.0]])
    fg.sum(out * np.array([[1.0, 2.0], [3.0, 4.0]])).backward()
    np.testing.assert_array_equal(a.grad.data, [1.0, 2.0])
    assert isinstance(fg.hstack([np.ones(2), np.zeros(1)]), np.ndarray)
    one, two = fg.atleast_2d(1.0, a)
    assert one.shape == (1, 1) and two.shape == (1, 2)
    assert fg.atleast_1d(a) is a
    np.testing.assert_array_equal(fg.atleast_3d(np.ones((2, 3))), np.atleast_3d(np.ones((2, 3))))
    with pytest.raises(ValueError):
        fg.hstack([])


def test_diagonal_diag_trace_tri_forms(rng):
    x = rng.standard_normal((3, 4, 5))
    t = fg.tensor(x, requires_grad=True)
    for args in ((), (1,), (-2,), (0, 2, 1), (1, -1, 0), (7,)):
        np.testing.assert_array_equal(fg.diagonal(t, *args).data, np.diagonal(x, *args))
        np.testing.assert_array_equal(fg.trace(t, *args).data, np.trace(x, *args))
    fg.trace(t, 1, 0, 2).sum().backward()
    np.testing.assert_array_equal(t.grad.data, np.broadcast_to(np.eye(3, 5, 1)[:, None], x.shape))
    assert fg.trace(fg.tensor(np.arange(4, dtype=np.int32).reshape(2, 2))).dtype == \
        np.trace(np.arange(4, dtype=np.int32).reshape(2, 2)).dtype
    for k in (-4, -1, 0, 2, 6):
        np.testing.assert_array_equal(fg.triu(t, k).data, np.triu(x, k))
        np.testing.assert_array_equal(fg.tril(t, k).data, np.tril(x, k))
        np.testing.assert_array_equal(fg.diag(t[0], k).data, np.diag(x[0], k))
        np.testing.assert_array_equal(fg.diag(t[0, 0], k).data, np.diag(x[0, 0], k))
    with pytest.raises(ValueError):
        fg.diagonal(t, 0, 1, -2)
    with pytest.raises(ValueError):
        fg.diag(t)
    with pytest.raises(ValueError):
        fg.triu(fg.tensor(1.0))


def test_tensordot_forms_and_errors(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 2))
    ta, tb = fg.tensor(a, requires_grad=True), fg.tensor(b, requires_grad=True)
    for axes in (0, 1, ([1, 2], [1, 0]), ((0, -1), (-1, 0)), [[2], [0]], (2, 0)):
        np.testing.assert_array_equal(fg.tensordot(ta, tb, axes).data, np.tensordot(a, b, axes))
    with pytest.raises(ValueError):
        fg.tensordot(ta, tb, 2)           # (3, 4) against (4, 3)
    with pytest.raises(ValueError):
        fg.tensordot(ta, tb, ([0], [0, 1]))


def test_static_shapes_with_unknown_dimensions(rng):
    x = rng.standard_normal((3, 4))
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(np.float64, (None, 4))
        outs = {
            "cumsum": (fg.cumsum(p, 1), (None, 4)), "cumsum_flat": (fg.cumsum(p), (None,)),
            "repeat": (fg.repeat(p, 2, axis=1), (None, 8)),
            "repeat_rows": (fg.repeat(p, 2, axis=0), (None, 4)),
            "repeat_counts": (fg.repeat(p, [1, 2, 0, 1], axis=1), (None, 4)),
            "tile": (fg.tile(p, (2, 1)), (None, 4)), "diagonal": (fg.diagonal(p), (None,)),
            "diag_of_row": (fg.diag(p[0]), (4, 4)), "triu": (fg.triu(p), (None, 4)),
            "trace": (fg.trace(p), ()), "roll": (fg.roll(p, 1), (None, 4)),
            "flip": (fg.flip(p, 0), (None, 4)), "norm": (fg.linalg.norm(p, axis=1), (None,)),
            "norm_keep": (fg.linalg.norm(p, keepdims=True), (1, 1)),
            "tensordot": (fg.tensordot(p, p, ([0], [0])), (4, 4)),
            "diff": (fg.diff(p, axis=0), (None, 4)), "hstack": (fg.hstack([p, p]), (None, 8)),
            "moveaxis": (fg.moveaxis(p, 0, 1), (4, None)),
        }
        for name, (node, shape) in outs.items():
            assert node.shape == shape, name
        loss = sum(fg.sum(n * n) for n, _ in outs.values())
        (gx,) = fg.gradients(loss, [p])
        vals = fg.Session(g).run([n for n, _ in outs.values()] + [gx], {p: x})
    t = fg.tensor(x, requires_grad=True)
    eager = {
        "cumsum": fg.cumsum(t, 1), "cumsum_flat": fg.cumsum(t), "repeat": fg.repeat(t, 2, axis=1),
        "repeat_rows": fg.repeat(t, 2, axis=0), "repeat_counts": fg.repeat(t, [1, 2, 0, 1], axis=1),
        "tile": fg.tile(t, (2, 1)), "diagonal": fg.diagonal(t), "diag_of_row": fg.diag(t[0]),
        "triu": fg.triu(t), "trace": fg.trace(t), "roll": fg.roll(t, 1), "flip": fg.flip(t, 0),
        "norm": fg.linalg.norm(t, axis=1), "norm_keep": fg.linalg.norm(t, keepdims=True),
        "tensordot": fg.tensordot(t, t, ([0], [0])), "diff": fg.diff(t, axis=0),
        "hstack": fg.hstack([t, t]), "moveaxis": fg.moveaxis(t, 0, 1),
    }
    sum(fg.sum(e * e) for e in eager.values()).backward()
    for (name, e), v in zip(eager.items(), vals):
        np.testing.assert_array_equal(v, e.data, err_msg=name)
    np.testing.assert_allclose(vals[-1], t.grad.data, rtol=1e-12, atol=1e-12)
