"""The VM's C broadcast path (``FusedKernel.broadcast_call``) and its use by the ``fuse`` pass:
bias rows, per-row values and scalars against a full operand, in place, with fallbacks; bias +
ReLU fused in the forward pass and ReLU's mask recomputed in the backward kernel."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.fused import Expr, compile_kernel

SHAPES = [((128, 256), 256), ((7, 10), 10), ((3, 5, 7), 7), ((3, 5, 7), 35), ((1000, 33), 33),
          ((4, 1024), 1024), ((2, 2048), 2048), ((5,), 5)]


def _kernel():
    x, b = Expr.input(0), Expr.input(1)
    return compile_kernel([Expr.op("relu", Expr.op("add", x, b))])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,cols", SHAPES)
def test_modes_match_numpy(shape, cols, dtype, rng):
    k = _kernel()
    a = rng.standard_normal(shape).astype(dtype)
    rows = a.size // cols
    row = rng.standard_normal(cols).astype(dtype)
    col = rng.standard_normal(rows).astype(dtype)
    full_row = np.broadcast_to(row, (rows, cols)).reshape(shape)
    full_col = np.broadcast_to(col[:, None], (rows, cols)).reshape(shape)
    for modes, other, ref_other in [("FR", row, full_row), ("FC", col, full_col),
                                    ("FS", np.array(0.25, dtype), 0.25), ("FF", a[::-1].copy(),
                                                                            a[::-1])]:
        f = k.broadcast_call(shape, cols, modes)
        ref = np.maximum(a + ref_other, 0)
        np.testing.assert_array_equal(f(a, other), ref)
        out = np.empty_like(a)
        assert f(a, other, out=out) is out
        np.testing.assert_array_equal(out, ref)
        inplace = a.copy()
        f(inplace, other, out=inplace)
        np.testing.assert_array_equal(inplace, ref)
        # the broadcast operand may come first too
        g = k.broadcast_call(shape, cols, modes[::-1])
        np.testing.assert_array_equal(g(other, a), ref)


def test_falls_back_on_other_operands(rng):
    k = _kernel()
    f = k.broadcast_call((6, 4), 4, "FR")
    a = rng.standard_normal((6, 4)).astype(np.float32)
    row64 = rng.standard_normal(4)
    np.testing.assert_array_equal(f(a, row64), np.maximum(a + row64, 0))   # mixed dtypes
    strided = rng.standard_normal((6, 8))[:, ::2]
    np.testing.assert_array_equal(f(strided, row64), np.maximum(strided + row64, 0))
    row = rng.standard_normal(4).astype(np.float32)
    out = np.empty((6, 4), np.float32)
    # an output overlapping a broadcast input: the general path copies first
    buf = np.zeros(24, np.float32)
    b = buf[:4]
    b[:] = row
    o = buf.reshape(6, 4)
    f(a, b, out=o)
    np.testing.assert_array_equal(o, np.maximum(a + row, 0))
    with pytest.raises(ValueError):
        k.broadcast_call((6, 4), 4, "FX")
    f(a, row, out=out)
    np.testing.assert_array_equal(out, np.maximum(a + row, 0))


@pytest.mark.parametrize("nt", [1, 2])
def test_thread_count_does_not_change_results(nt, rng):
    k = _kernel()
    a = rng.standard_normal((512, 300))
    row = rng.standard_normal(300)
    f = k.broadcast_call(a.shape, 300, "FR")
    prev = fg.get_num_threads()
    try:
        fg.set_num_threads(nt)
        np.testing.assert_array_equal(f(a, row), np.maximum(a + row, 0))
    finally:
        fg.set_num_threads(prev)


def _mlp_plan(dtype, rng, disable=()):
    x = rng.standard_normal((64, 20)).astype(dtype)
    w1 = rng.standard_normal((20, 32)).astype(dtype)
    b1 = rng.standard_normal(32).astype(dtype)
    w2 = rng.standard_normal((32, 5)).astype(dtype)
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(dtype, x.shape)
        vs = [fg.constant(v) for v in (w1, b1, w2)]
        h = fg.relu(fg.matmul(xp, vs[0]) + vs[1])
        loss = fg.sum(fg.tanh(fg.matmul(h, vs[2])))
        fetches = [loss] + list(fg.gradients(loss, [xp] + vs))
        sess = fg.Session(g, disable=disable)
        return sess.run(fetches, {xp: x}), sess.explain(fetches, {xp: x})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_relu_and_mask_fuse(dtype):
    got, text = _mlp_plan(dtype, np.random.default_rng(1))
    ref, _ = _mlp_plan(dtype, np.random.default_rng(1), disable=("fuse",))
    steps = text.split("[plan]")[1]
    assert "add relu, broadcast FR over rows of 32" in steps
    assert "greater multiply" in steps           # the mask is recomputed where it is used
    assert "astype(" not in steps                # no 0/1 output cast back to bool
    assert "greater(relu" in text.split("[simplify]")[1]
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=5e-6, atol=5e-6)
    for a, b in zip(got, ref):     # the VM's tanh may differ from NumPy's in the last bit
        np.testing.assert_allclose(a, b, **tol)


class _NoGeneralPath:
    def __init__(self, k):
        self.k, self.name = k, k.name

    def __call__(self, *args, **kwargs):
        raise AssertionError("the general path ran")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_scalar_operands_take_the_c_path(dtype, rng):
    """A plan feeds 0-d values (a learning rate, a loss scale) as NumPy scalars: in an ``S``
    slot they run on the C path, as 0-d arrays of their own dtype, with NumPy's values."""
    x, s = Expr.input(0), Expr.input(1)
    k = compile_kernel([Expr.op("subtract", x, Expr.op("multiply", s, x))])
    f = k.broadcast_call((7, 10), 10, "FS")
    f.k = _NoGeneralPath(k)
    a = rng.standard_normal((7, 10)).astype(dtype)
    scalar = dtype(0.3)
    np.testing.assert_array_equal(f(a, scalar), a - scalar * a)
    out = np.empty_like(a)
    assert f(a, scalar, out=out) is out
    np.testing.assert_array_equal(out, a - scalar * a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_and_row_registers_are_refilled_for_every_call(dtype, rng):
    """A short call fills only the part of a scalar's (or a tiled row's) register it reads:
    calls of growing and shrinking sizes, with a new scalar and row each time, never see an
    earlier call's values -- special values included."""
    x, s, r = Expr.input(0), Expr.input(1), Expr.input(2)
    k = compile_kernel([x * s + r])
    for rows, value in ((3, -0.0), (500, np.inf), (2, 0.25), (300, np.nan), (1, -3.5)):
        f = k.broadcast_call((rows, 8), 8, "FSR")
        f.k = _NoGeneralPath(k)
        a = rng.standard_normal((rows, 8)).astype(dtype)
        row = rng.standard_normal(8).astype(dtype)
        with np.errstate(invalid="ignore"):
            want = a * dtype(value) + row
        got = f(a, dtype(value), row)
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))


def test_numpy_scalar_of_another_dtype_still_promotes():
    """A float64 scalar with float32 arrays is no ``S`` operand of the C path's one dtype: the
    general path computes it, promoting as NumPy does."""
    x, s = Expr.input(0), Expr.input(1)
    k = compile_kernel([Expr.op("multiply", s, x)])
    f = k.broadcast_call((3, 4), 4, "FS")
    a = np.ones((3, 4), np.float32)
    got = f(a, np.float64(0.1))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.float64(0.1) * a)


def test_training_step_with_a_scalar_feed_runs_its_updates_on_the_c_path(monkeypatch):
    """TF1 style: a placeholder learning-rate scale, one update kernel per variable."""
    from fastgraph.fused import runtime as K
    g = fg.Graph()
    with g.as_default():
        scale = fg.placeholder(fg.float64, ())
        variables = [fg.Variable(np.full(i + 2, 1.5)) for i in range(3)]
        loss = fg.sum(variables[0] * variables[0])
        for v in variables[1:]:
            loss = loss + fg.sum(v * v)
        train = fg.train.GradientDescentOptimizer(0.1).minimize(loss * scale)
        sess = fg.Session(g)
        sess.run(fg.global_variables_initializer())
        sess.run(train, {scale: 1.0})           # compiles
        monkeypatch.setattr(K.FusedKernel, "__call__", _NoGeneralPath.__call__)
        sess.run(train, {scale: 0.5})
        got = sess.run(variables)
    want = 1.5 - 0.1 * (2 * 1.5 * 1.0)
    want = want - 0.1 * (2 * want * 0.5)
    for v in got:
        np.testing.assert_allclose(v, want, rtol=1e-15)
