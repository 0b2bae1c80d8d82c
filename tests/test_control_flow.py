"""Control flow (fg.scan, fg.while_loop, fg.fori_loop, fg.cond): one table of programs, each
against the same program unrolled by Python (values, gradients, second order) in eager mode,
a Session and fg.function, in float32 and float64; finite differences; the one-branch rule;
the RNN in all three modes; the error messages."""
from __future__ import annotations

import re

import numpy as np
import pytest

import fastgraph as fg
from fastgraph.extend import defvjp, primitive

RNG = np.random.default_rng(7)
W = RNG.standard_normal((3, 3)) * 0.4
XS = RNG.standard_normal((5, 3))


# ---- the table: (control-flow program, the same program unrolled), each x -> scalar ----------
def scan_rnn(x):
    c, ys = fg.scan(lambda h, xt: (fg.tanh(h @ _w(x) + xt * x), fg.sum(h)), x * 0.0,
                    _xs(x))
    return fg.mean(c ** 2) + fg.sum(ys)


def scan_rnn_ref(x):
    h, s = x * 0.0, 0.0
    for xt in _xs(x):
        h, s = fg.tanh(h @ _w(x) + xt * x), s + fg.sum(h)
    return fg.mean(h ** 2) + s


def scan_captured_matrix(x):
    # a matrix of the enclosing graph, read transposed by the gradient's product
    M = _w(x) * x[0] + fg.reshape(x, (3, 1))
    c, _ = fg.scan(lambda h, xt: (fg.tanh(h @ M + xt), None), x, _xs(x))
    return fg.sum(c ** 2)


def scan_captured_matrix_ref(x):
    M = _w(x) * x[0] + fg.reshape(x, (3, 1))
    h = x
    for xt in _xs(x):
        h = fg.tanh(h @ M + xt)
    return fg.sum(h ** 2)


def scan_reverse_tree(x):
    def f(c, xt):
        return {"a": c["a"] * fg.cos(xt[0]) + x, "b": c["b"] + c["a"]}, (c["a"] * x, xt[1])
    c, (ya, yb) = fg.scan(f, {"a": x, "b": x * 0.5}, (_xs(x, 0.5), _xs(x)), reverse=True)
    return fg.sum(c["a"] * c["b"]) + fg.sum(ya ** 2) + fg.sum(yb)


def scan_reverse_tree_ref(x):
    c = {"a": x, "b": x * 0.5}
    s = 0.0
    for t in reversed(range(len(XS))):
        s = s + fg.sum((c["a"] * x) ** 2) + fg.sum(_xs(x)[t])
        c = {"a": c["a"] * fg.cos(_xs(x, 0.5)[t]) + x, "b": c["b"] + c["a"]}
    return fg.sum(c["a"] * c["b"]) + s


def scan_length(x):
    c, _ = fg.scan(lambda c, _: (fg.sin(c) * x, None), x, length=4)
    return fg.sum(c)


def scan_length_ref(x):
    c = x
    for _ in range(4):
        c = fg.sin(c) * x
    return fg.sum(c)


def scan_nested(x):
    def outer(c, xt):
        inner, _ = fg.scan(lambda d, z: (d * fg.cos(z + c), None), c, xt[:2])
        return inner + x, fg.sum(inner)
    c, ys = fg.scan(outer, x, _xs(x))
    return fg.sum(c) + fg.sum(ys)


def scan_nested_ref(x):
    c, s = x, 0.0
    for xt in _xs(x):
        d = c
        for z in xt[:2]:
            d = d * fg.cos(z + c)
        c, s = d + x, s + fg.sum(d)
    return fg.sum(c) + s


def while_data(x):
    _, y = fg.while_loop(lambda i, y: fg.sum(y * y) < 40.0,
                         lambda i, y: (i + 1, y * 1.5 + fg.sin(y) * x), (0, x))
    return fg.sum(y)


def while_data_ref(x):
    y = x
    while float(np.sum(np.asarray(_value(y)) ** 2)) < 40.0:
        y = y * 1.5 + fg.sin(y) * x
    return fg.sum(y)


def while_max(x):
    (y,) = fg.while_loop(lambda y: fg.sum(y) < 1e9, lambda y: [fg.exp(y * 0.3) * x],
                         [x], maximum_iterations=3)
    return fg.sum(y)


def while_max_ref(x):
    y = x
    for _ in range(3):
        y = fg.exp(y * 0.3) * x
    return fg.sum(y)


def fori(x):
    return fg.sum(fg.fori_loop(1, 4, lambda i, v: fg.sin(v) * i + x, x))


def fori_ref(x):
    v = x
    for i in range(1, 4):
        v = fg.sin(v) * i + x
    return fg.sum(v)


def cond_pos(x):
    out = fg.cond(fg.sum(x) > 0, lambda a, b: fg.sin(a) * b, lambda a, b: a * a * b, x, x + 1)
    return fg.sum(out)


def cond_pos_ref(x):
    return fg.sum(fg.sin(x) * (x + 1) if float(np.sum(_value(x))) > 0 else x * x * (x + 1))


def cond_in_scan(x):
    def f(c, xt):
        c = fg.cond(xt[0] > 0, lambda: c * fg.cos(xt), lambda: c + xt * x)
        return c, None
    return fg.sum(fg.scan(f, x, _xs(x))[0] ** 2)


def cond_in_scan_ref(x):
    c = x
    for xt in _xs(x):
        c = c * fg.cos(xt) if xt[0] > 0 else c + xt * x
    return fg.sum(c ** 2)


def _w(x):
    return W.astype(x.dtype)


def _xs(x, scale=1.0):
    return (XS * scale).astype(x.dtype)


def _value(v):
    return v.data if isinstance(v, fg.Tensor) else v


PROGRAMS = {
    "scan_rnn": (scan_rnn, scan_rnn_ref),
    "scan_captured_matrix": (scan_captured_matrix, scan_captured_matrix_ref),
    "scan_reverse_tree": (scan_reverse_tree, scan_reverse_tree_ref),
    "scan_length": (scan_length, scan_length_ref),
    "scan_nested": (scan_nested, scan_nested_ref),
    "while_data_dependent": (while_data, while_data_ref),
    "while_maximum_iterations": (while_max, while_max_ref),
    "fori_loop": (fori, fori_ref),
    "cond_both_branches": (cond_pos, cond_pos_ref),
    "cond_in_scan": (cond_in_scan, cond_in_scan_ref),
}
POINTS = [np.array([0.3, -0.2, 0.5]), np.array([-0.6, 0.1, -0.4])]
TOL = {np.float64: 1e-10, np.float32: 2e-4}


def _session(fn, x, order):
    """``fn``'s value and gradient (``order`` 1) or Hessian (2) with fg.gradients in a
    Session."""
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(x.dtype, x.shape)
        y = fn(p)
        grad = fg.gradients(y, p)[0]
        fetch = [y, grad] if order == 1 else [fg.gradients(grad[i], p)[0] for i in range(3)]
        with fg.Session() as sess:
            return sess.run(fetch, {p: x})


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("point", range(len(POINTS)))
@pytest.mark.parametrize("name", PROGRAMS)
def test_values_and_gradients_match_unrolled(name, point, dtype):
    fn, ref = PROGRAMS[name]
    x = POINTS[point].astype(dtype)
    want, want_g = fg.value_and_grad(ref)(x)
    tol = TOL[dtype]
    for got, got_g in [fg.value_and_grad(fn)(x),                       # eager: Python loops
                       fg.function(fg.value_and_grad(fn))(x),           # traced: graph ops
                       _session(fn, x, 1)]:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        np.testing.assert_allclose(got_g, want_g, rtol=tol, atol=tol)
        assert np.asarray(got_g).dtype == dtype


@pytest.mark.parametrize("name", PROGRAMS)
def test_second_order_matches_unrolled(name):
    fn, ref = PROGRAMS[name]
    x = POINTS[0]
    want = fg.hessian(ref)(x)
    np.testing.assert_allclose(fg.function(fg.hessian(fn))(x), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.array(_session(fn, x, 2)), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fg.hessian(fn)(x), want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", PROGRAMS)
def test_gradients_match_finite_differences(name):
    fn, _ = PROGRAMS[name]
    x = POINTS[1]
    f = fg.function(fn)
    eps = 1e-6
    fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(fg.function(fg.grad(fn))(x), fd, rtol=1e-6, atol=1e-7)


def test_while_gradient_with_data_dependent_trip_count():
    f = fg.function(fg.value_and_grad(while_data))
    trips = []
    for scale in (0.2, 1.0, 3.0):       # 1 to many iterations, one trace
        x = POINTS[0] * scale
        (v, g), (rv, rg) = f(x), fg.value_and_grad(while_data_ref)(x)
        np.testing.assert_allclose(v, rv, rtol=1e-12)
        np.testing.assert_allclose(g, rg, rtol=1e-10)
        trips_now, _ = fg.function(lambda x: fg.while_loop(
            lambda i, y: fg.sum(y * y) < 40.0, lambda i, y: (i + 1, y * 1.5 + fg.sin(y) * x),
            (0, x)))(x)
        trips.append(int(trips_now))
    assert len(set(trips)) == 3


# ---- NumPy loops, eager numbers --------------------------------------------------------------
def test_scan_matches_a_numpy_loop_and_keeps_y_order_when_reversed():
    xs = np.arange(1.0, 6.0)
    for reverse in (False, True):
        c, ys = fg.function(lambda xs: fg.scan(lambda c, x: (c * 0.5 + x, c), 1.0, xs,
                                               reverse=reverse))(xs)
        want_c, want_ys = 1.0, np.zeros(5)
        for t in (reversed(range(5)) if reverse else range(5)):
            want_ys[t] = want_c
            want_c = want_c * 0.5 + xs[t]
        np.testing.assert_allclose(c, want_c)
        np.testing.assert_allclose(ys, want_ys)


def test_plain_values_run_python():
    assert fg.fori_loop(0, 5, lambda i, v: v + i, 0) == 10
    assert fg.while_loop(lambda i: i < 3, lambda i: i + 1, [0]) == [3]
    assert fg.cond(False, lambda a: a + 1, lambda a: a - 1, 5) == 4
    c, ys = fg.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(4.0))
    assert c == 6.0 and ys.tolist() == [0.0, 0.0, 2.0, 9.0]


# ---- cond runs one branch ----------------------------------------------------------------
def _counting_op():
    calls = {"n": 0}

    @primitive
    def counted(a):
        calls["n"] += 1
        return a * 2.0

    defvjp(counted, lambda ans, a: lambda g: g * 2.0)
    return counted, calls


@pytest.mark.parametrize("x, branch", [(1.0, "true"), (-1.0, "false")])
def test_cond_runs_only_the_branch_taken(x, branch):
    counted_t, calls_t = _counting_op()
    counted_f, calls_f = _counting_op()
    f = fg.function(lambda x: fg.cond(x > 0, lambda: counted_t(x), lambda: counted_f(x) + 1.0))
    f(x)
    before = (calls_t["n"], calls_f["n"])
    for _ in range(3):
        f(x)
    ran = (calls_t["n"] - before[0], calls_f["n"] - before[1])
    assert ran == ((3, 0) if branch == "true" else (0, 3))


# ---- the RNN in three modes ----------------------------------------------------------------------
def _rnn_loss(Wx, Wh, b, xs):
    def step(h, x):
        h = fg.tanh(x @ Wx + h @ Wh + b)
        return h, None
    h, _ = fg.scan(step, np.zeros((xs.shape[1], Wh.shape[0]), Wx.dtype), xs)
    return fg.mean(h ** 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rnn_scan_eager_static_function_agree(dtype):
    rng = np.random.default_rng(0)
    Wx, Wh = [(rng.standard_normal(s) * 0.3).astype(dtype) for s in ((4, 8), (8, 8))]
    b = (rng.standard_normal(8) * 0.1).astype(dtype)
    xs = rng.standard_normal((6, 2, 4)).astype(dtype)
    vg = fg.value_and_grad(_rnn_loss, argnums=(0, 1, 2))
    eager = vg(Wx, Wh, b, xs)
    traced = fg.function(vg)(Wx, Wh, b, xs)
    g = fg.Graph()
    with g.as_default():
        vs = [fg.Variable(v) for v in (Wx, Wh, b)]
        X = fg.placeholder(dtype, (None, 2, 4))
        loss = _rnn_loss(*vs, X)
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            static = sess.run([loss, fg.gradients(loss, vs)], {X: xs})
            text = sess.explain(fg.gradients(loss, vs), {X: xs})
    tol = TOL[dtype]
    for v, gs in (traced, static):
        np.testing.assert_allclose(v, eager[0], rtol=tol)
        for a, e in zip(gs, eager[1]):
            np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
            assert a.dtype == dtype
    assert "[sub-plan scan/body]" in text and "[sub-plan scan/body/grad]" in text
    # the backward product dz @ Wh.T reads a transpose made once per run, not a view per step
    assert re.search(r"matmul\(tanh_grad\w*, grad/transposed\w*\) \[direct BLAS call\]", text)


# ---- errors ------------------------------------------------------------------------------------
def _trace_error(fn, x=np.ones(3)):
    with pytest.raises((TypeError, ValueError)) as e:
        fg.function(fn)(x)
    return str(e.value)


ERRORS = [
    ("python if", lambda x: x * 2 if fg.sum(x) > 0 else x, ["fg.cond", "fg.while_loop"]),
    ("python while", lambda x: _while_python(x), ["fg.while_loop", "fg.scan"]),
    ("cond shapes", lambda x: fg.cond(x[0] > 0, lambda: x, lambda: x[:2]),
     ["cond", "true_fun", "(3,)", "false_fun", "(2,)"]),
    ("cond dtypes", lambda x: fg.cond(x[0] > 0, lambda: x, lambda: x.astype(np.float32)),
     ["true_fun", "float64", "false_fun", "float32"]),
    ("cond structure", lambda x: fg.cond(x[0] > 0, lambda: (x, x), lambda: x),
     ["same structure"]),
    ("cond float pred", lambda x: fg.cond(x[0], lambda: x, lambda: x), ["boolean", "float64"]),
    ("cond vector pred", lambda x: fg.cond(x > 0, lambda: x, lambda: x), ["scalar", "(3,)"]),
    ("scan carry shape", lambda x: fg.scan(lambda c, t: (c[:2], t), x, x),
     ["carry", "(3,)", "(2,)"]),
    ("scan pair", lambda x: fg.scan(lambda c, t: c, x, x), ["pair (carry, y)"]),
    ("scan no length", lambda x: fg.scan(lambda c, t: (c, t), x), ["length"]),
    ("while body arity", lambda x: fg.while_loop(lambda a, b: a[0] < 1, lambda a, b: a,
                                                 (x, x)), ["2 loop variable(s)"]),
]


def _while_python(x):
    while fg.sum(x) < 10:
        x = x * 2
    return x


@pytest.mark.parametrize("name, fn, words", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_messages(name, fn, words):
    msg = _trace_error(fn)
    for w in words:
        assert w in msg, msg


# ---- a body reading graph values with plain init and xs: still one graph node ----------------
def test_scan_and_while_over_plain_values_reading_graph_values_are_graph_nodes():
    g = fg.Graph()
    with g.as_default():
        w = fg.placeholder(fg.float64, (3,))
        c, _ = fg.scan(lambda c, x: (fg.sin(c * w + x), None), np.zeros(3), XS)
        (v,) = fg.while_loop(lambda v: fg.sum(v * w) < 10.0, lambda v: [v * 2.0], [np.ones(3)])
        ops = {n.op.name for n in g.nodes}
        assert {"scan", "while_loop"} <= ops and sum(n.op.name == "sin" for n in g.nodes) <= 2
        with fg.Session() as sess:
            got_c, got_v = sess.run([c, v], {w: np.array([0.5, 1.0, 2.0])})
    want = np.zeros(3)
    for x in XS:
        want = np.sin(want * np.array([0.5, 1.0, 2.0]) + x)
    np.testing.assert_allclose(got_c, want)
    np.testing.assert_allclose(got_v, [4.0, 4.0, 4.0])


# ---- TensorFlow 1's forms (fg.compat.v1) -------------------------------------------------------
def _tf1_programs(tf):
    xs = tf.constant([1.0, 2.0, 3.0])
    x = tf.placeholder(tf.float32, ())
    return [
        (tf.scan(lambda a, e: a + e, xs), [1.0, 3.0, 6.0]),
        (tf.scan(lambda a, e: a + e, xs, reverse=True), [6.0, 5.0, 3.0]),
        (tf.scan(lambda a, e: a * e, xs, initializer=tf.constant(2.0)), [2.0, 4.0, 12.0]),
        (tf.cond(x > 0, lambda: x * 2.0, lambda: -x), 4.0),
        (tf.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * 2.0), [0, 1.0])[1],
         1024.0),
        (tf.gradients(tf.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, x), x)[0], 81.0),
        (tf.gradients(tf.reduce_sum(tf.scan(lambda a, e: a * e, xs, initializer=x)), x)[0],
         1.0 + 2.0 + 6.0),
    ], x


def test_tf1_control_flow_forms():
    import fastgraph.compat.v1 as tf
    g = tf.Graph()
    with g.as_default():
        programs, x = _tf1_programs(tf)
        with tf.Session() as sess:
            got = sess.run([p for p, _ in programs], {x: 2.0})
    for value, (_, want) in zip(got, programs):
        np.testing.assert_allclose(value, want, rtol=1e-6)
        assert np.asarray(value).dtype in (np.float32, np.int32)


# ---- maximum_iterations as a value: Python int, NumPy 0-d, eager Tensor, graph node ------------
def _doubling(limit, x):
    return fg.while_loop(lambda i, y: fg.sum(y) < 1e9, lambda i, y: (i + 1, y * x),
                         (0, x), maximum_iterations=limit)


LIMITS = [("int", lambda n: n), ("numpy int64", np.int64), ("0-d array", np.array),
          ("0-d int32 array", lambda n: np.array(n, np.int32)),
          ("eager Tensor", lambda n: fg.tensor(np.array(n)))]


@pytest.mark.parametrize("kind, make", LIMITS, ids=[k for k, _ in LIMITS])
@pytest.mark.parametrize("n", [0, 3])
def test_maximum_iterations_as_a_value(kind, make, n):
    want = (n, 2.0 ** (n + 1), (n + 1) * 2.0 ** n)      # trips, x ** (n + 1), its derivative
    i, y = _doubling(make(n), 2.0)                                       # eager
    assert (int(i), float(y)) == want[:2]
    traced = fg.function(lambda x: _doubling(make(n), x))(2.0)
    assert (int(traced[0]), float(traced[1])) == want[:2]
    assert float(fg.function(fg.grad(lambda x: _doubling(make(n), x)[1]))(2.0)) == want[2]


def test_maximum_iterations_as_a_graph_value():
    g = fg.Graph()
    with g.as_default():
        n = fg.placeholder(fg.int32, ())
        x = fg.placeholder(fg.float64, ())
        i, y = _doubling(n, x)
        (gx,) = fg.gradients(y, x)
        with fg.Session() as sess:
            for limit in (0, 1, 4):     # one graph, the trip count fed
                got = sess.run([i, y, gx], {n: limit, x: 2.0})
                assert got == [limit, 2.0 ** (limit + 1), (limit + 1) * 2.0 ** limit]
            with pytest.raises(fg.errors.InvalidArgumentError, match="non-negative, got -1"):
                sess.run(y, {n: -1, x: 2.0})
    # fg.function: a 0-d integer array argument is a graph value, one trace for every limit
    f = fg.function(lambda x, n: _doubling(n, x)[1])
    assert [float(f(2.0, np.array(k))) for k in (0, 2, 5)] == [2.0, 8.0, 64.0]
    assert f.trace_count == 1
    # TensorFlow 1's form takes a tensor
    import fastgraph.compat.v1 as tf
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, ())
        out = tf.while_loop(lambda v: v < 1e9, lambda v: v * 3.0, [tf.constant(1.0)],
                            maximum_iterations=n)
        with tf.Session() as sess:
            assert sess.run(out, {n: 4}) == 81.0


@pytest.mark.parametrize("bad, words", [
    (1.5, ["maximum_iterations", "non-negative int", "1.5"]),
    (-2, ["maximum_iterations", "value -2"]),
    (np.array([3]), ["maximum_iterations", "shape (1,)"]),
    (np.array(2.0), ["maximum_iterations", "float64"]),
    (True, ["maximum_iterations", "True"]),
])
def test_maximum_iterations_refused(bad, words):
    with pytest.raises(TypeError) as e:
        _doubling(bad, 2.0)
    for w in words:
        assert w in str(e.value), str(e.value)
    g = fg.Graph()
    with g.as_default(), pytest.raises(TypeError, match="0-d integer, got a node of shape"):
        _doubling(fg.placeholder(fg.float32, ()), 2.0)


# ---- scan of length 0 on eager values: the init carry and empty ys, as JAX ---------------------
def test_scan_of_length_zero_eager_returns_init_and_empty_ys():
    jax = pytest.importorskip("jax")
    W = np.ones((3, 2), np.float32)
    h0 = np.zeros(2, np.float32)
    xs = np.zeros((0, 3), np.float32)

    def step(h, x):
        return np.tanh(x @ W + h) if isinstance(h, np.ndarray) else fg.tanh(x @ W + h), \
            {"h": h * 2, "total": fg.sum(h)}

    for reverse in (False, True):
        c, ys = fg.scan(step, h0, xs, reverse=reverse)
        jc, jys = jax.lax.scan(lambda h, x: (jax.numpy.tanh(x @ W + h),
                                             {"h": h * 2, "total": h.sum()}), h0, xs)
        assert c is h0
        for k in ("h", "total"):
            assert ys[k].shape == jys[k].shape and ys[k].dtype == jys[k].dtype
    c, ys = fg.scan(lambda c, _: (c + 1.0, (c, None)), 0.0, length=0)
    assert c == 0.0 and ys[0].shape == (0,) and ys[1] is None
    # a body reading an eager Tensor: it runs once, unrecorded, to learn the ys' shapes
    Wt = fg.tensor(W, requires_grad=True)
    h = fg.tensor(h0, requires_grad=True)
    c, ys = fg.scan(lambda h, x: (fg.tanh(x @ Wt + h), h[:1] * 2.0), h, xs)
    assert c is h and ys.shape == (0, 1) and ys.dtype == np.float32
    assert Wt.grad is None
    fg.sum(c * 3.0).backward()                  # the carry keeps its gradient
    np.testing.assert_allclose(h.grad.data, [3.0, 3.0])


def test_scan_of_length_zero_eager_unknown_shape_is_an_error():
    with pytest.raises(ValueError, match="length 0 on eager values.*y output 0"):
        fg.scan(lambda c, x: (c, fg.argwhere(x)), 0.0, np.zeros((0, 4)))


# ---- saving and restoring a graph with control flow (fg.train.Saver) ------------------------
def _cf_model(tf):
    Wh = tf.Variable(W * 0.5, name="Wh")
    scale = tf.Variable(1.5, name="scale")
    X = tf.placeholder(tf.float64, (None, 3))
    h, _ = fg.scan(lambda h, x: (fg.tanh(h @ Wh + x), None), np.zeros(3), X)
    (v,) = fg.while_loop(lambda v: fg.sum(v * v) < 30.0, lambda v: [v * scale + 0.1], [h])
    out = fg.cond(fg.sum(v) > 0, lambda: fg.sum(v ** 2), lambda: fg.sum(fg.sin(v)))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(out)
    return X, out, train


def test_graph_with_control_flow_saved_and_restored(tmp_path):
    import fastgraph.compat.v1 as tf
    prefix = str(tmp_path / "model")
    g = tf.Graph()
    with g.as_default():
        X, out, train = _cf_model(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):          # variables the loops read are trained
                sess.run(train, {X: XS})
            want = sess.run(out, {X: XS})
            tf.train.Saver().save(sess, prefix)
            sess.run(train, {X: XS})    # moves on past the checkpoint
            assert sess.run(out, {X: XS}) != want
            tf.train.Saver().restore(sess, prefix)
            assert sess.run(out, {X: XS}) == want
    g2 = tf.Graph()                     # the graph built again, as a TF1 program restores
    with g2.as_default():
        X, out, train = _cf_model(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(out, {X: XS}) != want
            tf.train.Saver().restore(sess, prefix)
            assert sess.run(out, {X: XS}) == want
            before = sess.run(out, {X: XS})
            sess.run(train, {X: XS})    # and trains on from there, through the loops
            assert sess.run(out, {X: XS}) < before


# ---- fg.function's retracing rules for a body closing over Python values --------------------
def test_function_retracing_for_a_scan_body_closing_over_python_values():
    setting = {"scale": 2.0}

    def run(x, shift=0.0):
        c, _ = fg.scan(lambda c, t: (c * setting["scale"] + t + shift, None), x, XS[:, 0])
        return c

    def want(x, scale, shift=0.0):
        for t in XS[:, 0]:
            x = x * scale + t + shift
        return x

    f = fg.function(run)
    assert np.isclose(f(1.0), want(1.0, 2.0))
    setting["scale"] = 3.0          # a closure is read when traced: the plan keeps 2.0
    assert np.isclose(f(1.0), want(1.0, 2.0)) and f.trace_count == 1
    assert np.isclose(f(5.0), want(5.0, 2.0)) and f.trace_count == 1   # weak float: no retrace
    f.clear_cache()                 # a new trace reads the closure again
    assert np.isclose(f(1.0), want(1.0, 3.0)) and f.trace_count == 2
    assert np.isclose(f(np.float64(1.0)), want(1.0, 3.0))   # a NumPy scalar: a new signature
    assert f.trace_count == 3
    # a keyword argument is static: one trace per value, each right
    assert np.isclose(f(1.0, shift=0.5), want(1.0, 3.0, 0.5)) and f.trace_count == 4
    assert np.isclose(f(1.0, shift=0.25), want(1.0, 3.0, 0.25)) and f.trace_count == 5
    assert np.isclose(f(1.0, shift=0.5), want(1.0, 3.0, 0.5)) and f.trace_count == 5
    # passed positionally it is a weak graph value the body captures: no retrace
    g = fg.function(lambda x, shift: run(x, shift))
    assert [np.isclose(g(1.0, s), want(1.0, 3.0, s)) for s in (0.5, 0.25)] == [True, True]
    assert g.trace_count == 1


# ---- an eager loop reusing a weight: the backward's contiguous transposes --------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_loop_sharing_a_weight_matches_pytorch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    Wh0 = (rng.standard_normal((16, 16)) * 0.3).astype(dtype)
    xs = rng.standard_normal((6, 4, 16)).astype(dtype)
    Wh = fg.tensor(Wh0, requires_grad=True)
    tW = torch.tensor(Wh0, requires_grad=True)
    h, th = fg.tensor(np.zeros((4, 16), dtype)), torch.zeros((4, 16), dtype=tW.dtype)
    for x in xs:        # Wh read transposed by every step's backward product
        h = fg.tanh(x + h @ Wh)
        th = torch.tanh(torch.from_numpy(x) + th @ tW)
    (fg.sum(h ** 2) + fg.sum(h @ Wh)).backward()
    ((th ** 2).sum() + (th @ tW).sum()).backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(Wh.grad.data, tW.grad.numpy(), rtol=tol, atol=tol)
    # a second backward over a changed weight sees the new values (nothing kept between walks)
    Wh.data[...] *= 0.5
    Wh.grad = None
    h = fg.tensor(np.zeros((4, 16), dtype))
    for x in xs:
        h = fg.tanh(x + h @ Wh)
    fg.sum(h ** 2).backward()
    with torch.no_grad():
        tW.mul_(0.5)
    tW.grad = None
    th = torch.zeros((4, 16), dtype=tW.dtype)
    for x in xs:
        th = torch.tanh(torch.from_numpy(x) + th @ tW)
    (th ** 2).sum().backward()
    np.testing.assert_allclose(Wh.grad.data, tW.grad.numpy(), rtol=tol, atol=tol)
