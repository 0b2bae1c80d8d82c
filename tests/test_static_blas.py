"""The ``blas`` pass: ``v - c * (a @ b)`` becomes a gemm scaled by BLAS's ``alpha`` and an
``axpy`` update, computing NumPy's values bit for bit; and the two calls (``fastgraph.kernels.blas``)
behind it, which refuse every layout NumPy would not hand to BLAS as it is."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import fastgraph as fg
from fastgraph import _numpy_blas
from fastgraph.kernels import blas as _blas
from fastgraph.static import blas_threads

blas_pass = importlib.import_module("fastgraph.static.passes.blas")

needs_blas = pytest.mark.skipif(not _numpy_blas.load(),
                                reason="NumPy is not built on scipy-openblas here")
FLOATS = [np.float32, np.float64]


# ---- the two calls ------------------------------------------------------------------------------
def _operands(rng, dtype, m, k, n, ta, tb):
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    return (a.T if ta else a), (b.T if tb else b)


@needs_blas
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("mkn", [(2, 1, 2), (37, 64, 19), (300, 128, 260)])
def test_scaled_matmul_is_numpys_product_times_alpha(dtype, ta, tb, mkn, rng):
    a, b = _operands(rng, dtype, *mkn, ta, tb)
    alpha = dtype(0.01)
    out = np.full((mkn[0], mkn[2]), np.nan, dtype)
    assert _blas.scaled_matmul(a, b, alpha, out, ta, tb) == _blas.DONE
    np.testing.assert_array_equal(out, np.multiply(np.matmul(a, b), alpha))


@needs_blas
def test_scaled_matmul_refuses_what_numpy_would_not_hand_blas(rng):
    a, b = _operands(rng, np.float32, 8, 5, 6, False, False)
    out = np.zeros((8, 6), np.float32)

    def refused(*args):
        before = out.copy()
        assert _blas.scaled_matmul(*args) == _blas.REFUSED
        np.testing.assert_array_equal(out, before)      # nothing written

    refused(a, b, 2.0, out, True, False)                  # not the layout it was told
    refused(a, b, 2.0, out, False, True)
    refused(a.astype(np.float64), b, 2.0, out, False, False)          # mixed dtypes
    refused(a.astype(np.int32), b.astype(np.int32), 2.0, out.astype(np.int32), False, False)
    refused(a[:, :4], b, 2.0, out, False, False)          # inner dimensions differ
    refused(a, b, 2.0, np.zeros((8, 7), np.float32), False, False)
    refused(a, b, 2.0, np.zeros((6, 8), np.float32).T, False, False)  # out not C-contiguous
    refused(a[::2], b, 2.0, out[::2], False, False)
    refused(a[:, ::2], b[::2], 2.0, out, False, False)    # strided operand: NumPy copies it
    refused(a[0], b, 2.0, out[0], False, False)           # a vector: NumPy's gemv
    ro = np.zeros((8, 6), np.float32)
    ro.flags.writeable = False
    refused(a, b, 2.0, ro, False, False)
    sq = rng.standard_normal((6, 6)).astype(np.float32)
    o6 = np.zeros((6, 6), np.float32)
    assert _blas.scaled_matmul(sq, sq.T, 2.0, o6, False, True) == 0      # NumPy's syrk
    assert _blas.scaled_matmul(sq, sq, 2.0, sq, False, False) == 0       # out is an operand
    big = np.zeros(8 * 5 + 8 * 6, np.float32)             # an operand and out in one array,
    lo, hi = big[:40].reshape(8, 5), big[40:].reshape(8, 6)   # not overlapping
    lo[:] = a
    assert _blas.scaled_matmul(lo, b, 2.0, hi, False, False) == _blas.DONE
    np.testing.assert_array_equal(hi, np.multiply(np.matmul(a, b), np.float32(2)))
    assert _blas.scaled_matmul(big[:40].reshape(8, 5), b, 2.0, big[2:50].reshape(8, 6),
                               False, False) == _blas.REFUSED


@needs_blas
@pytest.mark.parametrize("dtype", FLOATS)
def test_sub_inplace_is_numpys_subtract(dtype, rng):
    v = rng.standard_normal((50, 33)).astype(dtype)
    s = rng.standard_normal((50, 33)).astype(dtype)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, np.finfo(dtype).max], dtype)
    v.flat[:7] = special
    s.flat[:7] = special[::-1]
    v.flat[7:14] = special
    s.flat[7:14] = special
    with np.errstate(invalid="ignore"):
        ref = np.subtract(v, s)
    assert _blas.sub_inplace(v, s)
    np.testing.assert_array_equal(v, ref)
    assert np.array_equal(np.signbit(v), np.signbit(ref))        # signed zeros too
    assert _blas.sub_inplace(np.zeros((0, 3), dtype), np.zeros((0, 3), dtype))


@needs_blas
def test_sub_inplace_refuses_and_leaves_v_alone(rng):
    v = rng.standard_normal((6, 4))
    before = v.copy()
    for args in [(v, np.ones((4, 6))), (v, np.ones((6, 4), np.float32)), (v, np.ones(24)),
                 (v, np.ones((6, 8))[:, ::2]), (v[:, ::2], np.ones((6, 2))),
                 (v.astype(np.int64), np.ones((6, 4), np.int64)), (v, v[::-1])]:
        assert _blas.sub_inplace(*args) is False
    ro = v.copy()
    ro.flags.writeable = False
    assert _blas.sub_inplace(ro, np.ones((6, 4))) is False
    np.testing.assert_array_equal(v, before)


def test_calls_fall_back_to_numpy_without_blas(monkeypatch, rng):
    """With no BLAS configured the calls refuse, and the plan's steps compute NumPy's way."""
    a, b = _operands(rng, np.float32, 4, 3, 5, True, False)
    was = _blas.available()
    try:
        _blas.configure(0, 0, 0, 0)
        assert not _blas.available()
        assert _blas.scaled_matmul(a, b, 1.0, np.empty((4, 5), np.float32), True, False) == 0
        fn = blas_pass.BlasMatmul(True, False, True, np.float32(0.5), 60)
        np.testing.assert_array_equal(fn(a.T, b), np.multiply(np.matmul(a, b), np.float32(0.5)))
        v = np.ones((4, 5), np.float32)
        assert blas_pass.AxpySubtract()(v, fn(a.T, b), out=v) is v
        np.testing.assert_array_equal(v, 1 - np.multiply(np.matmul(a, b), np.float32(0.5)))
    finally:
        if was:
            _numpy_blas._loaded = None
            assert _numpy_blas.load()


# ---- the pass -----------------------------------------------------------------------------------
def _train_step_fn(dtype, sizes, lr, disable=()):
    """An MLP training step through ``fg.function`` with donated parameters (bench_mlp's)."""
    def loss_fn(W1, b1, W2, b2, x, labels):
        h = fg.relu(fg.matmul(x, W1) + b1)
        return fg.cross_entropy(fg.matmul(h, W2) + b2, labels)

    def train_step(W1, b1, W2, b2, x, labels):
        params = (W1, b1, W2, b2)
        loss, grads = fg.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))(*params, x, labels)
        return loss, [p - lr * g for p, g in zip(params, grads)]

    return fg.function(train_step, donate_argnums=(0, 1, 2, 3), disable=disable)


def _mlp_data(rng, dtype, sizes, batch):
    x = rng.standard_normal((batch, sizes[0])).astype(dtype)
    labels = rng.integers(0, sizes[2], batch)
    params = [(rng.standard_normal((sizes[0], sizes[1])) * 0.05).astype(dtype),
              np.zeros(sizes[1], dtype),
              (rng.standard_normal((sizes[1], sizes[2])) * 0.05).astype(dtype),
              np.zeros(sizes[2], dtype)]
    return x, labels, params


@needs_blas
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch", [128, 3])
def test_mlp_step_updates_by_blas_with_numpys_bits(dtype, batch, rng):
    sizes = (784, 256, 10)
    x, labels, params = _mlp_data(rng, dtype, sizes, batch)
    runs = {}
    for disable in [(), ("blas",), ("blas", "fuse")]:
        step = _train_step_fn(dtype, sizes, 0.01, disable)
        ps = [p.copy() for p in params]
        losses = []
        for _ in range(3):
            loss, ps = step(*ps, x, labels)
            losses.append(loss)
        runs[disable] = (losses, ps, step.explain(*ps, x, labels))
    losses, ps, text = runs[()]
    assert "axpy_subtract(" in text and "scaled_matmul(" in text and "in place into" in text
    assert "axpy_subtract(" not in runs[("blas",)][2]
    for other in (("blas",), ("blas", "fuse")):
        assert losses == runs[other][0]
        for p, q in zip(ps, runs[other][1]):
            np.testing.assert_array_equal(p, q)
    # the same step by hand in NumPy: the product, the multiply, the subtract
    ps_eager = [fg.tensor(p.copy(), requires_grad=True) for p in params]
    for _ in range(3):
        h = fg.relu(fg.matmul(x, ps_eager[0]) + ps_eager[1])
        loss = fg.cross_entropy(fg.matmul(h, ps_eager[2]) + ps_eager[3], labels)
        loss.backward()
        ps_eager = [fg.tensor(p.data - dtype(0.01) * p.grad.data, requires_grad=True)
                    for p in ps_eager]
    np.testing.assert_array_equal(ps[0], ps_eager[0].data)


@needs_blas
def test_session_gradient_descent_uses_it_with_the_same_bits(rng):
    x = rng.standard_normal((64, 600)).astype(np.float32)
    w0 = (rng.standard_normal((600, 300)) * 0.05).astype(np.float32)
    results = {}
    for disable in [(), ("blas",)]:
        g = fg.Graph()
        with g.as_default():
            xp = fg.placeholder(np.float32, (None, 600))
            w = fg.Variable(w0.copy())
            loss = fg.mean(fg.tanh(fg.matmul(xp, w)))
            train = fg.train.GradientDescentOptimizer(0.1).minimize(loss)
            sess = fg.Session(g, disable=disable)
            sess.run(fg.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {xp: x})
            results[disable] = (sess.run(w), sess.explain(train, {xp: x}))
    assert "axpy_subtract(" in results[()][1]
    np.testing.assert_array_equal(results[()][0], results[("blas",)][0])


@needs_blas
@pytest.mark.parametrize("k", [1, 4096])
def test_long_or_short_sums_keep_numpys_bits(k, rng):
    """A sum over many ``k`` may be split by BLAS into panels, each scaled by alpha: the pass
    checks on the shape itself and keeps NumPy's steps where that would change the bits."""
    a = rng.standard_normal((k, 400)).astype(np.float32)
    d = rng.standard_normal((k, 400)).astype(np.float32)
    v0 = rng.standard_normal((400, 400)).astype(np.float32)

    def upd(v, a, d):
        return v - 0.37 * fg.matmul(fg.transpose(a), d)

    out = {}
    for disable in [(), ("blas",)]:
        f = fg.function(upd, donate_argnums=(0,), disable=disable)
        out[disable] = (f(v0.copy(), a, d), f.explain(v0.copy(), a, d))
    np.testing.assert_array_equal(out[()][0], out[("blas",)][0])
    np.testing.assert_array_equal(out[()][0], v0 - np.float32(0.37) * np.matmul(a.T, d))
    exact = blas_pass.gemm_exact(np.dtype(np.float32), (k, 400), (k, 400), True, False)
    assert ("axpy_subtract(" in out[()][1]) == exact
    if not exact:
        assert "kept (BLAS's call differs from NumPy's steps" in out[()][1]


@needs_blas
def test_pass_leaves_other_shapes_of_the_pattern_alone(rng):
    a = rng.standard_normal((64, 512)).astype(np.float32)
    d = rng.standard_normal((64, 512)).astype(np.float32)
    v = rng.standard_normal((512, 512)).astype(np.float32)
    small = rng.standard_normal((64, 100)).astype(np.float32)
    small2 = rng.standard_normal((64, 100)).astype(np.float32)
    cases = {
        # fewer elements than MIN_ELEMENTS: the fused kernel is as fast
        "small": (lambda v, a, d: v[:100, :100] - 0.1 * fg.matmul(fg.transpose(small),
                                                                     small2),
                  False),
        # the product is also returned: it must be NumPy's product, unscaled
        "product used twice": (lambda v, a, d: (v - 0.1 * (p := fg.matmul(fg.transpose(a), d)),
                                                p), False),
        # a non-scalar multiplier
        "array multiplier": (lambda v, a, d: v - v * fg.matmul(fg.transpose(a), d), False),
        # float64 scalar constant promotes the product: not the same dtype
        "promoting constant": (lambda v, a, d: v - np.float64(0.1) * fg.matmul(
            fg.transpose(a), d), False),
        # v + c * (a @ b), c * (a @ b) - v: not an update of v by the product
        "add": (lambda v, a, d: v + 0.1 * fg.matmul(fg.transpose(a), d), False),
        "reversed": (lambda v, a, d: 0.1 * fg.matmul(fg.transpose(a), d) - v, False),
        "update": (lambda v, a, d: v - fg.matmul(fg.transpose(a), d) * 0.1, True),
    }
    for name, (fun, applies) in cases.items():
        f = fg.function(fun)
        g = fg.function(fun, disable=("blas",))
        r, r0 = f(v, a, d), g(v, a, d)
        for x, y in zip(r if isinstance(r, tuple) else [r], r0 if isinstance(r0, tuple) else [r0]):
            assert x.dtype == y.dtype, name
            np.testing.assert_array_equal(x, y, err_msg=name)
        assert ("axpy_subtract(" in f.explain(v, a, d)) == applies, name


@needs_blas
def test_runtime_layout_other_than_compiled_falls_back(rng):
    """A feed laid out otherwise than when the plan was built (Fortran order) takes NumPy's
    two steps in the scaled product: the same values."""
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(np.float64, (100, 500))
        d = fg.placeholder(np.float64, (100, 500))
        v = fg.Variable(np.zeros((500, 500)))
        upd = fg.assign(v, v - 0.3 * fg.matmul(fg.transpose(a), d))
        sess = fg.Session(g)
        sess.run(fg.global_variables_initializer())
        av = rng.standard_normal((100, 500))
        dv = rng.standard_normal((100, 500))
        assert "scaled_matmul(" in sess.explain(upd, {a: av, d: dv})
        sess.run(upd, {a: av, d: dv})
        sess.run(upd, {a: np.asfortranarray(av), d: dv})
        ref = np.zeros((500, 500))
        for _ in range(2):
            ref = ref - 0.3 * np.matmul(av.T, dv)
        np.testing.assert_array_equal(sess.run(v), ref)


@needs_blas
def test_floating_point_errors_as_without_the_pass(rng):
    """Under ``np.errstate(all="raise")`` a product that overflows raises as NumPy's matmul
    step would (the scaled product hands the call back to NumPy), and the update leaves the
    variable as it was."""
    big = np.full((64, 512), 1e30, np.float32)
    other = big.copy()
    outcomes = []
    for disable in [(), ("blas",)]:
        g = fg.Graph()
        with g.as_default():
            a = fg.placeholder(np.float32, (64, 512))
            b = fg.placeholder(np.float32, (64, 512))
            v = fg.Variable(np.full((512, 512), np.inf, np.float32))
            upd = fg.assign(v, v - 2.0 * fg.matmul(fg.transpose(a), b))
            sess = fg.Session(g, disable=disable)
            sess.run(fg.global_variables_initializer())
            feed = {a: big, b: other}       # the product overflows to inf: inf - inf
            assert ("axpy_subtract(" in sess.explain(upd, feed)) == (disable == ())
            with np.errstate(all="raise"):
                try:
                    sess.run(upd, feed)
                    err = None
                except FloatingPointError as e:
                    err = type(e)
            outcomes.append((err, sess.run(v)))
    assert outcomes[0][0] is outcomes[1][0] is FloatingPointError
    np.testing.assert_array_equal(outcomes[0][1], outcomes[1][1])
    np.testing.assert_array_equal(outcomes[0][1], np.inf)


@needs_blas
def test_scaled_matmul_reports_floating_point_exceptions(rng):
    a = np.full((4, 3), 1e30, np.float32)
    out = np.empty((4, 4), np.float32)
    assert _blas.scaled_matmul(a, a.T.copy(), 1.0, out, False, False) == _blas.FP_EXCEPTION
    assert _blas.scaled_matmul(a / 1e30, (a / 1e30).T.copy(), 1.0, out, False, False) == 1
    with np.errstate(over="warn"):
        with pytest.warns(RuntimeWarning, match="overflow"):
            blas_pass.BlasMatmul(False, False, True, np.float32(2), 48)(a, a.T.copy())


def test_without_numpys_blas_the_pass_does_nothing(monkeypatch, rng):
    monkeypatch.setattr(_numpy_blas, "_loaded", False)
    x, labels, params = _mlp_data(rng, np.float32, (784, 256, 10), 16)
    step = _train_step_fn(np.float32, (784, 256, 10), 0.01)
    text = step.explain(*[p.copy() for p in params], x, labels)
    assert "NumPy's BLAS is not scipy-openblas" in text and "axpy_subtract(" not in text
    ref = _train_step_fn(np.float32, (784, 256, 10), 0.01, disable=("blas",))
    got, want = step(*[p.copy() for p in params], x, labels), ref(*[p.copy() for p in params],
                                                                   x, labels)
    assert got[0] == want[0]
    for p, q in zip(got[1], want[1]):
        np.testing.assert_array_equal(p, q)


def test_the_blas_calls_count_as_threaded_blas_for_the_fuse_pass():
    from fastgraph.static.plan import PNode
    p = PNode("call")
    p.fn = blas_pass.AxpySubtract()
    assert blas_threads.runs_threaded_blas([p])
    p.fn = blas_pass.BlasMatmul(False, False, True, np.float32(1), 10)
    assert not blas_threads.runs_threaded_blas([p])
    p.fn = blas_pass.BlasMatmul(False, False, True, np.float32(1), 1 << 20)
    assert blas_threads.runs_threaded_blas([p])


@needs_blas
@pytest.mark.parametrize("threads", [1, 2])
def test_any_blas_thread_count_gives_numpys_bits(threads, rng):
    """OpenBLAS's own bits depend on its thread count (it partitions a product differently:
    docs/architecture.md); at each count the pass gives what NumPy's steps give."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    x, labels, params = _mlp_data(rng, np.float32, (784, 256, 10), 128)
    out = []
    with threadpoolctl.threadpool_limits(limits=threads):
        for disable in [(), ("blas",)]:
            step = _train_step_fn(np.float32, (784, 256, 10), 0.01, disable)
            out.append(step(*[p.copy() for p in params], x, labels))
    assert out[0][0] == out[1][0]
    for p, q in zip(out[0][1], out[1][1]):
        np.testing.assert_array_equal(p, q)


@needs_blas
def test_products_too_large_to_check_are_kept(monkeypatch, rng):
    monkeypatch.setattr(blas_pass, "MAX_CHECKED_MNK", 1000)
    a = rng.standard_normal((8, 400)).astype(np.float32)
    d = rng.standard_normal((8, 400)).astype(np.float32)
    v = rng.standard_normal((400, 400)).astype(np.float32)
    f = fg.function(lambda v, a, d: v - 0.5 * fg.matmul(fg.transpose(a), d))
    text = f.explain(v, a, d)
    assert "too large to check" in text and "axpy_subtract(" not in text
    np.testing.assert_array_equal(f(v, a, d), v - np.float32(0.5) * np.matmul(a.T, d))


# ---- plain products: NumPy's own call, made directly (the ``lower`` pass) -----------------------
lower_mod = importlib.import_module("fastgraph.static.passes.lower")


@needs_blas
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("build,shapes", [
    (lambda a, b: fg.matmul(a, b), [(7, 5), (5, 9)]),
    (lambda a, b: fg.matmul(fg.transpose(a), b), [(5, 7), (5, 9)]),
    (lambda a, b: fg.matmul(a, fg.transpose(b)), [(7, 5), (9, 5)]),
    (lambda a, b: fg.matmul(fg.transpose(a), fg.transpose(b)), [(5, 7), (9, 5)]),
    (lambda a, b: a @ b, [(300, 700), (700, 2)]),
])
def test_direct_products_are_numpys(dtype, build, shapes, rng):
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    f = fg.function(build)
    text = f.explain(a, b)
    assert "direct BLAS call" in text
    want = build(fg.tensor(a), fg.tensor(b)).data         # eager: np.matmul
    np.testing.assert_array_equal(f(a, b), want)
    # another layout at run time than at compile time: np.matmul, the same values
    np.testing.assert_array_equal(f(np.asfortranarray(a), b),
                                  build(fg.tensor(np.asfortranarray(a)), fg.tensor(b)).data)
    np.testing.assert_array_equal(f(a[::1], b.copy()), want)


@needs_blas
def test_direct_products_leave_numpys_special_cases_to_numpy(rng):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    f = fg.function(lambda x: fg.matmul(x, fg.transpose(x)))      # NumPy: syrk
    np.testing.assert_array_equal(f(x), np.matmul(x, x.T))
    g = fg.function(lambda x, v: fg.matmul(x, v))                 # a matrix-vector product
    v = rng.standard_normal((4, 1)).astype(np.float32)
    np.testing.assert_array_equal(g(x, v), np.matmul(x, v))


@needs_blas
def test_direct_products_warn_as_numpy_does(rng):
    a = np.full((4, 3), 1e30, np.float32)
    b = np.full((3, 5), 1e30, np.float32)
    f = fg.function(lambda a, b: fg.matmul(a, b))
    assert "direct BLAS call" in f.explain(a, b)
    with pytest.warns(RuntimeWarning, match="overflow"):
        r = f(a, b)
    np.testing.assert_array_equal(r, np.inf)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        f(a, b)


@needs_blas
def test_large_products_stay_with_numpy(monkeypatch, rng):
    """Past DIRECT_MAX_MNK the saved microseconds are nothing next to the product, and the
    compile-time check would cost two products: np.matmul it is."""
    monkeypatch.setattr(lower_mod, "DIRECT_MAX_MNK", 7 * 5 * 9 - 1)
    a, b = rng.standard_normal((7, 5)), rng.standard_normal((5, 9))
    f = fg.function(lambda a, b: fg.matmul(a, b))
    assert "direct BLAS call" not in f.explain(a, b)
    np.testing.assert_array_equal(f(a, b), np.matmul(a, b))


def test_direct_products_can_be_switched_off(monkeypatch, rng):
    monkeypatch.setattr(lower_mod, "DIRECT_GEMM", False)
    a = rng.standard_normal((7, 5))
    f = fg.function(lambda a: fg.matmul(a, fg.transpose(a[:4])))
    assert "direct BLAS call" not in f.explain(a)
    np.testing.assert_array_equal(f(a), np.matmul(a, a[:4].T))


@pytest.mark.parametrize("blas_name,paths", [("mkl", None), ("", None),
                                             ("scipy-openblas", []),
                                             ("scipy-openblas", ["/nonexistent/a.so", "/b.so"]),
                                             ("scipy-openblas", ["/nonexistent/libscipy_openblas.so"])])
def test_numpy_blas_is_used_only_when_it_is_surely_numpys(monkeypatch, blas_name, paths):
    """Another BLAS, no library file or several (no way to tell which NumPy loaded), or one
    that cannot be opened: ``load`` is false and nothing is configured."""
    monkeypatch.setattr(_numpy_blas, "_loaded", None)
    monkeypatch.setattr(_numpy_blas, "_numpy_blas_name", lambda: blas_name)
    if paths is not None:
        monkeypatch.setattr(_numpy_blas, "_library_paths", lambda: paths)
    configured = []
    monkeypatch.setattr(_blas, "configure", lambda *a: configured.append(a))
    assert _numpy_blas.load() is False
    assert configured == []


@needs_blas
def test_plans_calling_blas_from_several_threads_agree(rng):
    """Two compiled steps (their own plans) run at once from four Python threads, each on
    its own parameters: BLAS is called concurrently, the results are the sequential ones."""
    import threading
    x, labels, params = _mlp_data(rng, np.float32, (784, 256, 10), 64)
    steps = [_train_step_fn(np.float32, (784, 256, 10), 0.01) for _ in range(2)]

    def run(step, out, k):
        ps = [p.copy() for p in params]
        for _ in range(5):
            _, ps = step(*ps, x, labels)
        out[k] = ps

    want: dict = {}
    run(steps[0], want, 0)
    got: dict = {}
    threads = [threading.Thread(target=run, args=(steps[k % 2], got, k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [0, 1, 2, 3]
    for k in range(4):
        for p, q in zip(got[k], want[0]):
            np.testing.assert_array_equal(p, q)
