"""The ``fuse`` pass: fused plans equal unfused ones (``disable=("fuse",)``) for every
elementwise op, both float dtypes, contiguous/strided/broadcast inputs and awkward sizes;
multi-output regions (forward + gradients), absorbed reductions, thread-count independence,
``explain()``, convexity, ``@fg.function`` tracing, and steady-state page faults."""
from __future__ import annotations

import re
import resource

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.fused.opcodes import BY_NAME
from fastgraph._core import REGISTRY
from fastgraph.static import blas_threads
from fastgraph.static.passes.fuse import cost as fuse_cost, emit as fuse_emit

from optable import CASES, as_list, make_inputs

ELEMENTWISE = [c for c in CASES if c.op in REGISTRY and REGISTRY[c.op].elementwise
               and REGISTRY[c.op].opcode in BY_NAME]
BLOCK = 1024
DTYPES = [np.float64, np.float32]


@pytest.fixture
def always_fuse(monkeypatch):
    """Fuse every candidate region, however small (the cost model would skip tiny ones)."""
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)


def _tol(dtype):
    return dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=5e-6, atol=5e-6)


def _close(a, b, dtype):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, **_tol(dtype))
    else:
        np.testing.assert_array_equal(a, b)


def _both(build, feeds_np, fetch_grads=False):
    """Run ``build(*placeholders)`` fused and unfused; return (fused, unfused, explain)."""
    g = fg.Graph()
    with g.as_default():
        phs = [fg.placeholder(v.dtype, v.shape) for v in feeds_np]
        out = build(*phs)
        fetches = out if isinstance(out, (list, tuple)) else [out]
        feed = dict(zip(phs, feeds_np))
        fused = fg.Session(g).run(list(fetches), feed)
        plain = fg.Session(g, disable=("fuse",)).run(list(fetches), feed)
        text = fg.Session(g).explain(list(fetches), feed)
    return fused, plain, text


def _case_id(c):
    return c.name


# ---- every elementwise op -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("case", ELEMENTWISE, ids=_case_id)
def test_every_elementwise_op_fused_equals_unfused(case, dtype, always_fuse):
    xs = make_inputs(case, dtype)

    def build(*phs):
        y = case.fn(*phs)
        ys = as_list(y)
        # a two-op region at least: the op, then a use of its result
        return [fg.multiply(v, 1.5) if v.dtype.kind == "f" else v for v in ys]

    fused, plain, text = _both(build, xs)
    for a, b in zip(fused, plain):
        _close(a, b, dtype)
    assert "fused kernel" in text


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("case", [c for c in ELEMENTWISE if c.diff and not c.zero_grad],
                         ids=_case_id)
def test_every_elementwise_op_forward_and_gradients_in_one_plan(case, dtype, always_fuse):
    xs = make_inputs(case, dtype)

    def build(*phs):
        y = as_list(case.fn(*phs))[0]
        loss = fg.sum(fg.tanh(y) * 0.5 + y * y)
        grads = fg.gradients(loss, [phs[i] for i in case.diff])
        return [loss] + [g for g in grads if g is not None]

    fused, plain, _ = _both(build, xs)
    for a, b in zip(fused, plain):
        _close(a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("op", ["less", "less_equal", "greater", "greater_equal", "equal",
                                "not_equal"])
def test_comparisons_inside_and_as_outputs(op, dtype, always_fuse, rng):
    x = np.round(rng.standard_normal((5, 7)), 1).astype(dtype)
    y = np.round(rng.standard_normal((7,)), 1).astype(dtype)
    cmp = getattr(fg, op)

    def build(a, b):
        c = cmp(a * 2.0, b + 0.5)
        return [fg.where(c, a, b * 3.0), c]    # used inside (where) and fetched (bool)

    fused, plain, text = _both(build, [x, y])
    assert fused[1].dtype == np.bool_
    for a, b in zip(fused, plain):
        _close(a, b, dtype)
    assert "fused kernel" in text


# ---- layouts and sizes --------------------------------------------------------------------------
def _expr(a, b, c):
    t = fg.tanh(a * b + c)
    return [t * fg.sigmoid(b) + 0.5 * a * a, fg.exp(-t) / (1.0 + c * c)]


def _ref(a, b, c):
    t = np.tanh(a * b + c)
    s = 1.0 / (1.0 + np.exp(-b))
    return [t * s + 0.5 * a * a, np.exp(-t) / (1.0 + c * c)]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("n", [0, 1, BLOCK - 1, BLOCK + 1, 100_003])
def test_sizes(n, dtype, always_fuse, rng):
    a, b, c = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    fused, plain, text = _both(_expr, [a, b, c])
    for x, y, r in zip(fused, plain, _ref(a, b, c)):
        _close(x, y, dtype)
        np.testing.assert_allclose(x, r.astype(dtype), rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 if dtype == np.float32 else 1e-14)
    if n:
        assert "fused kernel" in text


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_strided_and_transposed_inputs(dtype, rng):
    big = rng.standard_normal((300, 400)).astype(dtype)
    a = big[::2, ::3]                        # strided
    b = rng.standard_normal((a.shape[1], a.shape[0])).astype(dtype).T   # transposed
    c = rng.standard_normal(a.shape).astype(dtype)
    fused, plain, text = _both(_expr, [a, b, c])
    for x, y in zip(fused, plain):
        _close(x, y, dtype)
    assert "fused kernel" in text


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_broadcast_inputs(dtype, rng):
    a = rng.standard_normal((64, 1, 50)).astype(dtype)
    b = rng.standard_normal((40, 1)).astype(dtype)
    c = rng.standard_normal(()).astype(dtype)
    fused, plain, text = _both(_expr, [a, b, c])
    for x, y in zip(fused, plain):
        assert x.shape == (64, 40, 50)
        _close(x, y, dtype)
    assert "fused kernel" in text


def test_mixed_dtypes_and_bool_inputs(always_fuse, rng):
    a = rng.standard_normal(2000).astype(np.float32)
    b = rng.standard_normal(2000)
    m = rng.standard_normal(2000) > 0
    fused, plain, _ = _both(lambda x, y, k: [fg.where(k, x * 2.0, x - 1.0) * 3.0,
                                            fg.tanh(x) * y + 1.0], [a, b, m])
    assert fused[0].dtype == np.float32 and fused[1].dtype == np.float64
    for x, y in zip(fused, plain):
        _close(x, y, np.float32)     # float32 tanh feeds the float64 output


# ---- multi-output regions and reductions ------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_forward_and_gradients_share_one_kernel(dtype, rng):
    n = 50_000
    xs = [rng.standard_normal(n).astype(dtype) for _ in range(4)]

    def build(a, b, c, d):
        y = fg.tanh(a * b + c) * fg.sigmoid(d) + 0.5 * a * a
        loss = fg.sum(y)
        return [loss, y] + list(fg.gradients(loss, [a, b, c, d]))

    fused, plain, text = _both(build, xs)
    for x, y in zip(fused, plain):
        _close(x, y, dtype)
    assert text.count("fused kernel") == 1
    m = re.search(r"fused kernel '\w+': 4 input\(s\), (\d+) output\(s\)", text)
    assert m and int(m.group(1)) == 6        # loss (reduced), y and 4 gradients
    assert "(sum over all axes)" in text
    steps = text.split("[plan]")[1]
    assert " = sum(" not in steps            # the reduction is inside the kernel


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions_absorbed(kind, axis, keepdims, rng):
    x = rng.standard_normal((30, 40, 50))
    y = rng.standard_normal((40, 1))
    red = getattr(fg, kind)
    fused, plain, text = _both(lambda a, b: red(fg.exp(a * b) - a, axis=axis,
                                                keepdims=keepdims), [x, y])
    _close(fused[0], plain[0], np.float64)
    steps = text.split("[plan]")[1]
    axes = range(3) if axis is None else [a % 3 for a in np.atleast_1d(axis)]
    if sorted(axes) == list(range(3 - len(axes), 3)):   # innermost axes: inside the kernel
        assert f" = {kind}(" not in steps
        assert f"({kind} over" in text
    else:  # leading axes: NumPy reduces them faster than the VM, so they stay a step
        assert f" = {kind}(" in steps


def test_reduction_of_a_value_also_used_elementwise(rng):
    x = rng.standard_normal((200, 300))
    fused, plain, text = _both(lambda a: [fg.sum(fg.tanh(a) * 2.0, axis=0), fg.tanh(a) * 2.0],
                               [x])
    for a, b in zip(fused, plain):
        _close(a, b, np.float64)
    assert text.count("fused kernel") == 1


def test_threads_give_identical_results(rng):
    x = rng.standard_normal(400_000)
    y = rng.standard_normal(400_000)
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(fg.float64, x.shape)
        b = fg.placeholder(fg.float64, y.shape)
        out = fg.tanh(a * b) + fg.exp(-a * a)
        fetch = [out, fg.sum(out), fg.mean(out * b)]
        old = fg.get_num_threads()
        try:
            fg.set_num_threads(1)
            one = fg.Session(g).run(fetch, {a: x, b: y})
            fg.set_num_threads(4)
            many = fg.Session(g).run(fetch, {a: x, b: y})
        finally:
            fg.set_num_threads(old)
    for p, q in zip(one, many):
        np.testing.assert_array_equal(p, q)


# ---- explain, switching off, convexity --------------------------------------------------------
def test_explain_lists_kernels_and_disable_switches_off(rng):
    x = rng.standard_normal(100_000)
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(fg.float64, x.shape)
        y = fg.tanh(a * 2.0 + 1.0) * fg.exp(a)
        text = fg.Session(g).explain(y, {a: x})
        off = fg.Session(g, disable=("fuse",)).explain(y, {a: x})
    assert "[fuse]" in text and "fused kernel" in text
    for op in ("tanh", "exp", "multiply"):
        assert op in text.split("[buffers]")[0]
    assert "fused kernel" not in off and "(disabled)" in off


def test_convexity_no_cycle_through_a_non_fusable_op(always_fuse, rng):
    # e = exp(x) -> m = e @ w (not fusable) -> z = e + m: fusing exp and add would need the
    # kernel both before and after the matmul
    x = rng.standard_normal((20, 20))
    w = rng.standard_normal((20, 20))

    def build(a, b):
        e = fg.exp(a * 0.1)
        m = fg.matmul(e, b)
        return [fg.tanh(e + m) * 2.0, e * 3.0]

    fused, plain, text = _both(build, [x, w])
    for a, b in zip(fused, plain):
        _close(a, b, np.float64)
    # the matmul sits between two kernels
    steps = text.split("[plan]")[1].splitlines()
    kinds = [ln for ln in steps if "fused_" in ln and "proj" not in ln or "matmul(" in ln]
    assert any("matmul(" in k for k in kinds) and sum("fused_" in k for k in kinds) >= 2


def test_linear_time_on_long_chains():
    def build_graph(n):
        g = fg.Graph()
        with g.as_default():
            x = fg.placeholder(fg.float64, (1000,))
            y, keep, i = x, x, 0
            while i < n:
                y = fg.tanh(y) * 0.5 + keep
                i += 3
                if i % 12 == 0:
                    keep = fg.sin(y)
                    i += 1
        return g, x, y

    # (compile time growing linearly is measured by fastgraph.bench.compile, not asserted here)
    xv = np.linspace(-1, 1, 1000)
    for n in (2_000, 8_000):
        g, x, y = build_graph(n)
        with g.as_default():
            sess = fg.Session(g)
            out = sess.run(y, {x: xv})
            ref = fg.Session(g, disable=("fuse",)).run(y, {x: xv})
            np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
            assert "fused kernel" in sess.explain(y, {x: xv})


# ---- @fg.function --------------------------------------------------------------------------------
def test_function_traces_once_per_signature_and_equals_eager(rng):
    def f(a, b):
        return fg.tanh(a * b + 1.0) * fg.sigmoid(b) + 0.5 * a * a

    ff = fg.function(f)
    x, y = rng.standard_normal(50_000), rng.standard_normal(50_000)
    ref = np.tanh(x * y + 1.0) / (1.0 + np.exp(-y)) + 0.5 * x * x
    eager = f(fg.tensor(x), fg.tensor(y))
    eager = np.asarray(getattr(eager, "data", eager))
    for _ in range(3):
        out = ff(x, y)
        np.testing.assert_allclose(out, eager, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)
    assert ff.trace_count == 1
    ff(x.astype(np.float32), y.astype(np.float32))
    assert ff.trace_count == 2
    ff(x[:1000], y[:1000])
    assert ff.trace_count == 3
    ff(x, y)
    assert ff.trace_count == 3
    assert "fused kernel" in ff.explain(x, y)


def test_results_are_not_overwritten_by_later_runs(rng):
    ff = fg.function(lambda a: [fg.exp(a) * 2.0 + a, fg.tanh(a) - 1.0])
    x1, x2 = rng.standard_normal(300_000), rng.standard_normal(300_000)
    r1 = ff(x1)
    keep = [np.array(r) for r in r1]
    ff(x2)
    ff(x2)
    for r, k in zip(r1, keep):
        np.testing.assert_array_equal(r, k)
    assert not np.may_share_memory(r1[0], r1[1])


def test_steady_state_has_no_page_faults(rng):
    n = 10_000_000
    a = rng.standard_normal(n)
    b = rng.standard_normal(n)
    ff = fg.function(lambda x, y: fg.tanh(x * y) * 0.5 + x)
    for _ in range(3):
        out = ff(a, b)
        del out
    faults = []
    for _ in range(5):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        out = ff(a, b)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        del out
    one_output_pages = n * 8 // 4096          # 19,531 4-KiB pages
    assert min(faults) < 1000 < one_output_pages, faults
    assert np.median(faults) < 1000, faults


def test_caching_allocator_semantics():
    from fastgraph.kernels import alloc as _alloc
    with _alloc.cached():
        z = np.zeros(2_000_000)
        assert not z.any()
        z[:] = 7.0
        del z
        z = np.zeros(2_000_000)         # a reused block is zeroed
        assert not z.any()
        r = np.ones(10)
        r.resize(500_000, refcheck=False)
        assert r[:10].sum() == 10.0 and not r[10:].any()
        small = np.arange(100.0)
        assert small.sum() == 4950.0
    st = _alloc.stats()
    assert st["hits"] >= 1 and st["bytes"] <= st["limit"]
    del z, r
    _alloc.trim()
    assert _alloc.stats()["blocks"] == 0


@pytest.mark.parametrize("make", [np.zeros, np.empty, np.ones])
@pytest.mark.parametrize("n", [3, 1000, 2 ** 18, 2 ** 20 + 7])
def test_caching_allocator_data_is_64_byte_aligned(make, n):
    from fastgraph.kernels import alloc as _alloc
    with _alloc.cached():
        for _ in range(2):          # a fresh block, then (for the large ones) a reused one
            a = make(n)
            assert a.ctypes.data % 64 == 0
            del a
    _alloc.trim()


def test_long_program_on_short_array_split_for_threads(monkeypatch, rng):
    monkeypatch.setattr(fuse_cost, "PARALLEL_WORK", 1)
    x = rng.standard_normal(3000)
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(fg.float64, x.shape)
        y = a
        for i in range(40):
            y = fg.tanh(y) * 0.9 + a
        fetch = [y, fg.sum(y)]
        old = fg.get_num_threads()
        try:
            fg.set_num_threads(1)
            one = fg.Session(g).run(fetch, {a: x})
            fg.set_num_threads(3)
            many = fg.Session(g).run(fetch, {a: x})
        finally:
            fg.set_num_threads(old)
        plain = fg.Session(g, disable=("fuse",)).run(fetch, {a: x})
        blocks = re.findall(r"block=(\d+)", fg.Session(g).explain(fetch, {a: x}))
        assert blocks and int(blocks[0]) < 1024       # 3,000 elements in several blocks
    for p, q, r in zip(one, many, plain):
        np.testing.assert_array_equal(p, q)
        np.testing.assert_allclose(p, r, rtol=1e-12, atol=1e-12)


def test_fused_intermediates_write_into_planned_buffers(rng):
    x = rng.standard_normal((200, 200))
    w = rng.standard_normal((200, 200))

    def build(a, b):
        t = fg.tanh(a * 2.0 + 1.0)
        s = fg.sigmoid(a) * t - a             # same kernel as t: two outputs, both intermediates
        m = fg.matmul(t, b) + fg.matmul(s, b)
        return [fg.exp(m * 0.01) * 2.0 + 1.0]

    fused, plain, text = _both(build, [x, w])
    _close(fused[0], plain[0], np.float64)
    steps = text.split("[plan]")[1]
    assert re.search(r"fused_\d+:\d+ = proj\(fused_\d+\).*-> buffer \d", steps), steps
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(fg.float64, x.shape)
        b = fg.placeholder(fg.float64, w.shape)
        out = build(a, b)[0]
        sess = fg.Session(g)
        first = sess.run(out, {a: x, b: w})
        again = sess.run(out, {a: x * 0.5, b: w})
        np.testing.assert_allclose(first, plain[0], rtol=1e-12)
        assert not np.allclose(first, again)


def test_two_reduction_geometries_stay_in_separate_kernels(rng):
    x = rng.standard_normal((300, 400))

    def build(a):
        t = fg.tanh(a) * 2.0
        u = fg.exp(-a * a) + 1.0
        s1 = fg.sum(t, axis=0)
        s2 = fg.max(u, axis=1, keepdims=True)
        return [s1, s2, fg.sum(t * u)]      # t * u would merge the two regions

    fused, plain, text = _both(build, [x])
    for a, b in zip(fused, plain):
        _close(a, b, np.float64)
    assert "fused kernel" in text


def test_function_disable_fuse(rng):
    x = rng.standard_normal(100_000)
    on = fg.function(lambda a: fg.tanh(a) * fg.exp(a) + 1.0)
    off = fg.function(lambda a: fg.tanh(a) * fg.exp(a) + 1.0, disable=("fuse",))
    np.testing.assert_allclose(on(x), off(x), rtol=1e-12, atol=1e-14)
    assert "fused kernel" in on.explain(x) and "fused kernel" not in off.explain(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_mlp_gradients_comparison_passed_between_kernels(dtype, rng, monkeypatch):
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)  # the structure, not the cost model, is tested
    x = rng.standard_normal((64, 30)).astype(dtype)
    w1 = (rng.standard_normal((30, 200)) * 0.3).astype(dtype)
    b1 = rng.standard_normal(200).astype(dtype)
    w2 = (rng.standard_normal((200, 5)) * 0.3).astype(dtype)

    def build(xx, a, b, c):
        h = fg.relu(fg.matmul(xx, a) + b)         # relu mask: a comparison in this kernel ...
        out = fg.matmul(h, c)
        loss = fg.sum(fg.tanh(out) * out)
        return [loss] + list(fg.gradients(loss, [a, b, c]))   # ... read by the backward one

    fused, plain, text = _both(build, [x, w1, b1, w2])
    for a, b in zip(fused, plain):
        # float32: a few-ulp tanh difference, summed by matmuls over entries of ~50
        scale = 1.0 if dtype == np.float64 else float(np.max(np.abs(b)))
        np.testing.assert_allclose(a, b, rtol=_tol(dtype)["rtol"],
                                   atol=_tol(dtype)["atol"] * scale)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    assert text.count("fused kernel") >= 2
    assert "astype(" not in text.split("[plan]")[1]


def test_thread_split_follows_estimated_work():
    """A region is split for threads by its work per element (transcendentals weigh more than
    adds), so 1,000 elements through 300 tanh split and the same count of adds does not."""
    from fastgraph.fused.opcodes import work_units
    assert work_units("tanh") > work_units("add") == 1

    def blocks(op):
        g = fg.Graph()
        with g.as_default():
            a = fg.placeholder(fg.float64, (1000,))
            y = a
            for _ in range(300):
                y = op(y)
            text = fg.Session(g).explain(y, {a: np.zeros(1000)})
        return int(re.findall(r"block=(\d+)", text)[0])

    assert blocks(fg.tanh) < 1000 <= blocks(lambda y: y + 1.0)


def test_long_program_on_small_array_keeps_vectorised_transcendentals():
    """Small light regions use NumPy's own loops (exactly the unfused results); a heavy one on
    as few elements keeps the VM's vectorised kernels, which are ~10x faster there."""
    def strategy(n_ops):
        g = fg.Graph()
        with g.as_default():
            a = fg.placeholder(fg.float64, (1000,))
            y = a
            for _ in range(n_ops):
                y = fg.tanh(y) * 0.5 + a
            text = fg.Session(g).explain(y, {a: np.zeros(1000)})
        return re.findall(r"strategy=(\w+)", text)[0]

    assert strategy(2) == "ufunc"
    assert strategy(500) == "auto"


# ---- thread policy of plans that run threaded BLAS ------------------------------------------
def _blas_plan(k, rows=512, cols=512):
    """``tanh(a @ b) * sigmoid(c) + 0.5 * c``: a product of ``rows * cols * k`` multiply-adds
    feeding a kernel of ``rows * cols`` elements (heavy enough per element to use threads)."""
    rng = np.random.default_rng(5)
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(np.float32, (rows, k))
        b = fg.placeholder(np.float32, (k, cols))
        c = fg.placeholder(np.float32, (rows, cols))
        y = fg.tanh(fg.matmul(a, b)) * fg.sigmoid(c) + c * 0.5
    feed = {a: rng.standard_normal((rows, k)).astype(np.float32),
            b: rng.standard_normal((k, cols)).astype(np.float32),
            c: rng.standard_normal((rows, cols)).astype(np.float32)}
    return g, y, feed


def _held(g, y, feed):
    sess = fg.Session(g)
    return "one thread (the plan runs threaded BLAS)" in sess.explain(y, feed), sess.run(y, feed)


def test_plans_with_threaded_blas_keep_their_kernels_on_one_thread(monkeypatch):
    held, value = _held(*_blas_plan(k=64))               # 512 * 512 * 64 multiply-adds
    assert held
    monkeypatch.setattr(blas_threads, "BLAS_PLANS_ONE_THREAD", False)
    held_off, value_off = _held(*_blas_plan(k=64))
    assert not held_off
    np.testing.assert_array_equal(value, value_off)     # threads never change results


def test_small_products_and_heavy_kernels_keep_the_threads(monkeypatch):
    # OpenBLAS runs a product of at most BLAS_THREADED_MNK multiply-adds on the calling thread
    assert 512 * 512 * 1 <= blas_threads.BLAS_THREADED_MNK
    assert not _held(*_blas_plan(k=1))[0]
    # kernels with more work than BLAS_HOLD_WORK pay for their threads even so
    monkeypatch.setattr(blas_threads, "BLAS_HOLD_WORK", 512 * 512)
    assert not _held(*_blas_plan(k=64))[0]


def test_runs_threaded_blas_sees_every_blas_op():
    """Every op that runs BLAS or LAPACK counts (their sizes are not estimated); elementwise
    work alone does not."""
    from fastgraph.static.plan import PNode
    m = np.eye(3)
    for name in sorted(blas_threads.BLAS_OPS):
        p = PNode("op", None, REGISTRY[name], [], {}, (3, 3), m.dtype, name=name)
        if name != "matmul":
            assert blas_threads.runs_threaded_blas([p]), name
    for name in ("exp", "einsum"):           # np.einsum without optimize= runs no BLAS
        assert not blas_threads.runs_threaded_blas(
            [PNode("op", None, REGISTRY[name], [], {}, (3, 3), m.dtype, name=name)])


@pytest.mark.parametrize("opt", ["momentum", "adam"])
def test_slot_variable_terms_join_their_update_kernel(opt, rng):
    """``beta1 * m`` reads only a constant and a variable, so it comes first in the order; it is
    computed inside the kernel that reads it (one pass over ``m``), not as a step of its own."""
    def build(disable):
        g = fg.Graph()
        with g.as_default():
            x = fg.placeholder(np.float64, (16, 8))
            w = fg.Variable(np.linspace(-1, 1, 8 * 4).reshape(8, 4))
            loss = fg.sum(fg.tanh(fg.matmul(x, w)))
            o = (fg.train.MomentumOptimizer(0.1, 0.9) if opt == "momentum"
                 else fg.train.AdamOptimizer(0.01))
            train = o.minimize(loss)
            sess = fg.Session(g, disable=disable)
            sess.run(fg.global_variables_initializer())
        return sess, train, w, x
    xv = rng.standard_normal((16, 8))
    fused, t1, w1, x1 = build(())
    plain, t2, w2, x2 = build(("fuse",))
    for _ in range(3):
        fused.run(t1, {x1: xv})
        plain.run(t2, {x2: xv})
    np.testing.assert_allclose(fused.run(w1), plain.run(w2), rtol=1e-13)
    plan = fused.explain(t1, {x1: xv}).split("[plan]")[1]
    # e.g. "multiply(Const_2, .../m)"; (Adam's step size, lr * sqrt(1 - beta2^t), is a scalar
    # step of its own, as in TensorFlow: not a pass over a slot)
    standalone = [line for line in plan.splitlines()
                  if re.search(r"= multiply\(Const_\d+, ", line) and "shape=()" not in line]
    assert not standalone, standalone


@pytest.mark.parametrize("shape", [(3, 5), (128, 256), (70, 1000)])
def test_a_folded_uniform_constant_is_a_kernel_constant(shape, rng):
    """The MSE's gradient folds its seed ``2 / N`` into a constant of the input's shape; the
    kernel takes that one value as a constant rather than reading an array of it (one input
    stream less), at every size up to ``SPLAT_CHECK_MAX``."""
    x = rng.standard_normal(shape).astype(np.float32)
    t = rng.standard_normal(shape).astype(np.float32)
    g = fg.grad(lambda a, b: fg.mean(fg.square(a - b)))
    fused, plain = fg.function(g), fg.function(g, disable=("fuse",))
    assert fused(x, t).tobytes() == plain(x, t).tobytes()
    assert "fused_0(arg0, arg1)" in fused.explain(x, t)


def test_splat_detection():
    splat = fuse_emit._splat
    assert splat(np.full((300, 300), 0.25))
    assert splat(np.broadcast_to(np.float32(2.0), (10**7,)))
    assert not splat(np.arange(10.0))
    assert not splat(np.array([0.0, -0.0]))         # different bits
    assert splat(np.full(7, np.nan))
    assert not splat(np.full(fuse_emit.SPLAT_CHECK_MAX + 1, 1.0, np.float32))   # not checked
