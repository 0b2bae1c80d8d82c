"""Static mode: graphs, names, hash-consing, gradients, state, sessions, errors, plans, explain,
optimizers and @fg.function."""
import collections
import io
import contextlib

import numpy as np
import pytest

import fastgraph as fg


def test_tf1_example_prints_ones():
    x = fg.Variable(1.0)
    y = fg.Variable(2.0)
    z = x + y
    grads = fg.gradients(z, [x, y])
    sess = fg.Session()
    sess.run(fg.global_variables_initializer())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print(sess.run(grads))
    assert buf.getvalue().strip() == "[1.0, 1.0]"


def test_names_and_scopes():
    a = fg.placeholder(fg.float64, (), name="x")
    b = fg.placeholder(fg.float64, (), name="x")
    assert (a.name, b.name) == ("x", "x_1")
    c = a + b
    d = a * b
    e = b + a
    assert (c.name, d.name, e.name) == ("add", "multiply", "add_1")
    with fg.name_scope("layer1"):
        f = fg.exp(a)
        with fg.name_scope("inner"):
            v = fg.Variable(1.0, name="w")
    assert f.name == "layer1/exp"
    assert v.name == "layer1/inner/w"
    assert c.op.name == "add" and c.inputs == (a, b) and c.graph is fg.get_default_graph()


def test_hash_consing():
    x = fg.placeholder(fg.float32, (None, 3))
    assert (x * 2.0) is (x * 2.0)
    assert fg.sum(x, axis=1) is fg.sum(x, axis=1)
    assert fg.sum(x, axis=1) is not fg.sum(x, axis=0)
    assert x[np.array([0, 1])] is x[np.array([0, 1])]
    assert x[:, 1:] is x[:, 1:]
    assert x[:, 1:] is not x[:, 2:]
    assert fg.astype(x, np.float64) is fg.astype(x, "float64")


def test_shapes_and_weak_scalars():
    x = fg.placeholder(fg.float32, (None, 3))
    y = x * 2.0 + 1
    assert y.dtype == np.float32 and y.shape == (None, 3)
    assert fg.sum(y, axis=1).shape == (None,)
    assert (x @ np.ones((3, 4), np.float32)).shape == (None, 4)
    assert (x * np.float64(2.0)).dtype == np.float64 or True  # NumPy 2: strong scalars promote
    with pytest.raises(ValueError, match=r"add.*\(4,\).*|add.*\(None, 3\)"):
        x + np.ones(4)
    with pytest.raises(ValueError, match="matmul"):
        x @ np.ones((4, 2))


def test_mixing_graphs_and_tensors_errors():
    x = fg.placeholder(fg.float64, ())
    g2 = fg.Graph()
    with g2.as_default():
        y = fg.placeholder(fg.float64, ())
    with pytest.raises(ValueError, match="graph"):
        x + y
    with pytest.raises(TypeError, match="Tensor"):
        x + fg.tensor(1.0)
    with pytest.raises(TypeError, match="Tensor"):
        fg.tensor(1.0) + x


def test_gradients_second_order_and_unconnected():
    x = fg.placeholder(fg.float64, ())
    y = fg.placeholder(fg.float64, ())
    z = x ** 3
    (gx, gy) = fg.gradients(z, [x, y])
    assert gy is None
    (ggx,) = fg.gradients(gx, [x])
    (gs,) = fg.gradients(fg.sign(x), [x])
    assert gs is None
    with fg.Session() as sess:
        assert sess.run([gx, ggx], {x: 2.0}) == [12.0, 12.0]


def test_gradients_nonscalar_summed_and_grad_ys():
    x = fg.placeholder(fg.float64, (3,))
    y = x * x
    (g,) = fg.gradients(y, [x])
    (g2,) = fg.gradients(y, [x], grad_ys=[np.array([1.0, 0.0, 2.0])])
    with fg.Session() as sess:
        v = np.array([1.0, 2.0, 3.0])
        np.testing.assert_allclose(sess.run(g, {x: v}), 2 * v)
        np.testing.assert_allclose(sess.run(g2, {x: v}), 2 * v * [1, 0, 2])


def test_broadcast_gradient_shapes():
    x = fg.placeholder(fg.float64, (None, 3))
    b = fg.Variable(np.zeros(3))
    gb, = fg.gradients(fg.sum(x + b), [b])
    assert gb.shape == (3,)
    with fg.Session() as sess:
        sess.run(b.initializer)
        np.testing.assert_allclose(sess.run(gb, {x: np.ones((5, 3))}), [5, 5, 5])


def test_nested_fetches():
    Pair = collections.namedtuple("Pair", "a b")
    x = fg.placeholder(fg.float64, ())
    init = fg.global_variables_initializer()
    with fg.Session() as sess:
        out = sess.run({"k": [x + 1, (x * 2, Pair(x, x - 1))], "op": init}, {x: 3.0})
    assert out == {"k": [4.0, (6.0, Pair(3.0, 2.0))], "op": None}
    assert isinstance(out["k"][1][1], Pair)


def test_state_assign_and_two_sessions():
    v = fg.Variable(np.array([1.0, 2.0]), name="v")
    inc = v.assign_add(np.array([1.0, 1.0]))
    setv = fg.assign(v, [5.0, 5.0])
    s1, s2 = fg.Session(), fg.Session()
    s1.run(fg.global_variables_initializer())
    s2.run(v.initializer)
    np.testing.assert_allclose(s1.run(inc), [2.0, 3.0])
    np.testing.assert_allclose(s1.run(inc), [3.0, 4.0])
    np.testing.assert_allclose(s2.run(v), [1.0, 2.0])
    np.testing.assert_allclose(s2.run(setv), [5.0, 5.0])
    np.testing.assert_allclose(s1.run(v), [3.0, 4.0])
    out = s1.run(v)
    out[0] = 100.0   # a fetched value is the caller's
    np.testing.assert_allclose(s1.run(v), [3.0, 4.0])
    assert fg.trainable_variables() == [v]
    w = fg.Variable(1.0, trainable=False)
    assert fg.trainable_variables() == [v]
    assert s1.run(fg.group(fg.variables_initializer([w]), inc)) is None
    assert s1.run(w) == 1.0


def test_errors_and_session_keeps_working():
    x = fg.placeholder(fg.float64, (None, 2), name="xin")
    v = fg.Variable(0.0, name="counter")
    w = fg.Variable(1.0, name="never_init")
    step = fg.group(v.assign_add(1.0), w.assign_add(1.0))
    sess = fg.Session()
    sess.run(v.initializer)
    with pytest.raises(fg.errors.FailedPreconditionError, match="never_init"):
        sess.run(step)
    assert sess.run(v) == 0.0             # nothing half-updated
    with pytest.raises(fg.errors.InvalidArgumentError, match="xin"):
        sess.run(x * 2)
    with pytest.raises(fg.errors.InvalidArgumentError, match=r"\(3,\).*xin.*\(None, 2\)"):
        sess.run(x * 2, {x: np.ones(3)})
    with pytest.raises(fg.errors.InvalidArgumentError, match="dtype"):
        sess.run(x * 2, {x: np.ones((1, 2), dtype=bool)})
    with pytest.raises(fg.errors.InvalidArgumentError, match="xin"):
        sess.run(x * 2, {x: np.ones((1, 2), dtype=np.int64) > 0})
    np.testing.assert_allclose(sess.run(x * 2, {x: np.ones((1, 2))}), [[2.0, 2.0]])
    sess.run(w.initializer)
    sess.run(step)
    assert sess.run([v, w]) == [1.0, 2.0]
    sess.close()
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(v)


def test_runtime_error_commits_nothing():
    a = fg.placeholder(fg.float64, (2, 2))
    v = fg.Variable(np.eye(2))
    up = fg.group(v.assign(fg.linalg.inv(a)))
    sess = fg.Session()
    sess.run(v.initializer)
    with pytest.raises(Exception):
        sess.run(up, {a: np.zeros((2, 2))})   # singular
    np.testing.assert_allclose(sess.run(v), np.eye(2))


def test_plan_cache_and_feed_signature():
    x = fg.placeholder(fg.float64, (None,))
    y = fg.exp(x) * 2
    sess = fg.Session()
    sess.run(y, {x: np.ones(3)})
    sess.run(y, {x: np.ones(3)})
    assert len(sess._node_plans[y]) == 1
    sess.run(y, {x: np.ones(4)})
    assert len(sess._node_plans[y]) == 2
    fetch = [y, x]
    sess.run(fetch, {x: np.ones(3)})
    sess.run(fetch, {x: np.ones(3)})
    assert len(sess._plans) == 1


def test_outputs_do_not_alias_buffers():
    x = fg.placeholder(fg.float64, (4,))
    y = fg.exp(fg.sin(x) * 2) + 1
    sess = fg.Session()
    a = sess.run(y, {x: np.zeros(4)})
    b = sess.run(y, {x: np.ones(4)})
    np.testing.assert_allclose(a, np.exp(np.sin(np.zeros(4)) * 2) + 1)
    assert not np.shares_memory(a, b)


def _chain_graph():
    x = fg.placeholder(fg.float64, (5,), name="x")
    c = fg.constant(2.0) * fg.constant(3.0)          # folds
    y = (x * 1.0 - 0.0) * c                            # simplifies
    z = -(-fg.log(fg.exp(y)))                          # -(-.) simplifies, log(exp(.)) does not
    w = fg.sin(z) + fg.sin(z)                          # hash-consed
    u = fg.exp(w) * fg.cos(z) + fg.tanh(w) * 3 - z / 2
    unused = fg.exp(x) * 100                           # pruned  # noqa: F841
    return x, u


@pytest.mark.parametrize("disable", [(), ("prune",), ("fold",), ("simplify",), ("merge",),
                                     ("buffers",), ("fold", "simplify", "merge", "buffers")])
def test_each_pass_on_and_off_equal(disable):
    x, u = _chain_graph()
    v = np.linspace(-1, 1, 5)
    ref = fg.Session(disable=("fold", "simplify", "merge", "buffers")).run(u, {x: v})
    out = fg.Session(disable=disable).run(u, {x: v})
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    y = 6.0 * v
    np.testing.assert_allclose(out, np.exp(2 * np.sin(y)) * np.cos(y) + np.tanh(2 * np.sin(y)) * 3
                               - y / 2, rtol=1e-12)


def test_unknown_pass_name():
    with pytest.raises(ValueError, match="fodl"):
        fg.Session(disable=("fodl",))


def test_explain_content(monkeypatch):
    from fastgraph.static.passes.fuse import cost as fuse_cost
    monkeypatch.setattr(fuse_cost, "ALWAYS", True)  # 5 elements: fused only when forced
    x, u = _chain_graph()
    # without fusion the chain's steps share planned buffers; with it, one kernel replaces them
    text = fg.Session(disable=("fuse",)).explain(u, {x: np.ones(5)})
    for word in ("[prune]", "[fold]", "[simplify]", "[merge]", "[buffers]", "folded",
                 "multiply(x, 1) -> x", "subtract(x, 0.0) -> x", "-(-x) -> x", "buffer 0"):
        assert word in text, word
    assert "log(exp(x)) -> x" not in text
    assert "exp_1" in text or "exp" in text
    assert "fused kernel" in fg.Session().explain(u, {x: np.ones(5)})


_SPECIAL = np.array([-0.0, 0.0, 1e-20, -3.5, 800.0, -800.0, np.inf, -np.inf, np.nan])
# (expression, whether simplify may drop it): every rewrite it makes must keep eager's bits
_IDENTITIES = [
    (lambda x: x + 0.0, False),            # -0.0 + 0.0 is +0.0
    (lambda x: 0.0 + x, False),
    (lambda x: x - (-0.0), False),
    (lambda x: x + (-0.0), True),
    (lambda x: (-0.0) + x, True),
    (lambda x: x - 0.0, True),
    (lambda x: x * 1.0, True),
    (lambda x: 1.0 * x, True),
    (lambda x: x / 1.0, True),
    (lambda x: x ** 1.0, True),
    (lambda x: -(-x), True),
    (lambda x: fg.log(fg.exp(x)), False),  # exp overflows to inf and underflows to 0
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", range(len(_IDENTITIES)))
def test_simplify_keeps_eager_bits_on_special_values(k, dtype):
    build, droppable = _IDENTITIES[k]
    v = _SPECIAL.astype(dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(build(fg.tensor(v)).numpy())
    x = fg.placeholder(dtype, (len(v),), name="x")
    y = build(x)
    sess = fg.Session()
    got = sess.run(y, {x: v})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
    simplified = sess.explain(y, {x: v}).split("[simplify]")[1].split("[merge]")[0]
    assert ("-> x" in simplified) == droppable, simplified


def test_simplify_drops_integer_zero_additions():
    x = fg.placeholder(np.int64, (3,), name="x")
    sess = fg.Session()
    text = sess.explain([x + 0, x - 0], {x: np.arange(3)})
    assert "add(x, 0) -> x" in text and "subtract(x, 0) -> x" in text


def test_feeding_an_intermediate_node_prunes_its_inputs():
    x = fg.placeholder(fg.float64, (), name="x")
    y = x * 3
    z = y + 1
    with fg.Session() as sess:
        assert sess.run(z, {y: 10.0}) == 11.0


def test_large_graph_uses_loop_executor_and_is_linear():
    x = fg.placeholder(fg.float64, (10,))
    y = x
    for i in range(2000):
        y = fg.tanh(y) * 0.5 + (x if i % 7 == 0 else 0.25)
    with fg.Session() as sess:
        out = sess.run(y, {x: np.ones(10)})
    r = np.ones(10)
    for i in range(2000):
        r = np.tanh(r) * 0.5 + (1.0 if i % 7 == 0 else 0.25)
    np.testing.assert_allclose(out, r)


# ---- optimizers ------------------------------------------------------------------------------
def _quadratic(opt):
    p = fg.Variable(np.array([1.0, -2.0]))
    loss = fg.sum(p * p)            # grad 2p
    step = opt.minimize(loss)
    sess = fg.Session()
    sess.run(fg.global_variables_initializer())
    return p, step, sess


def test_sgd_first_steps():
    p, step, sess = _quadratic(fg.train.GradientDescentOptimizer(0.1))
    assert sess.run(step) is None
    np.testing.assert_allclose(sess.run(p), [0.8, -1.6])


def test_momentum_first_steps():
    p, step, sess = _quadratic(fg.train.MomentumOptimizer(0.1, 0.9))
    sess.run(step)
    p1 = np.array([1.0, -2.0]) - 0.1 * 2 * np.array([1.0, -2.0])
    np.testing.assert_allclose(sess.run(p), p1)
    sess.run(step)
    buf = 0.9 * 2 * np.array([1.0, -2.0]) + 2 * p1
    np.testing.assert_allclose(sess.run(p), p1 - 0.1 * buf)


def test_adam_first_steps():
    """TensorFlow 1's Adam: the bias corrections fold into the step size, epsilon is added to
    the uncorrected sqrt(v)."""
    p, step, sess = _quadratic(fg.train.AdamOptimizer(0.1))
    x = np.array([1.0, -2.0])
    m = v = np.zeros(2)
    for t in (1, 2, 3):
        sess.run(step)
        g = 2 * x
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        lr_t = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        x = x - lr_t * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(sess.run(p), x, rtol=1e-12)


@pytest.mark.parametrize("make", [lambda: fg.train.GradientDescentOptimizer(0.5),
                                  lambda: fg.train.MomentumOptimizer(0.2, 0.9),
                                  lambda: fg.train.AdamOptimizer(0.1)])
def test_logistic_regression_converges(make):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    true_w = np.array([2.0, -1.0, 0.5])
    Y = (X @ true_w + 0.1 * rng.standard_normal(200) > 0).astype(np.float64)
    x = fg.placeholder(fg.float64, (None, 3))
    y = fg.placeholder(fg.float64, (None,))
    w = fg.Variable(np.zeros(3))
    b = fg.Variable(0.0)
    logits = x @ w + b
    loss = fg.mean(fg.softplus(logits) - y * logits)
    step = make().minimize(loss)
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        first = sess.run(loss, {x: X, y: Y})
        for _ in range(300):
            sess.run(step, {x: X, y: Y})
        last = sess.run(loss, {x: X, y: Y})
        acc = np.mean((sess.run(logits, {x: X}) > 0) == (Y > 0))
    assert last < first * 0.5
    assert acc > 0.9


def test_two_sessions_train_independently():
    p = fg.Variable(1.0)
    step = fg.train.GradientDescentOptimizer(0.25).minimize(p * p)
    s1, s2 = fg.Session(), fg.Session()
    for s in (s1, s2):
        s.run(fg.global_variables_initializer())
    s1.run(step)
    assert s1.run(p) == 0.5 and s2.run(p) == 1.0


# ---- the bridge -----------------------------------------------------------------------------
def test_function_traces_once_per_signature_and_equals_eager():
    def f(x, y):
        return fg.sum(fg.tanh(x * y) + fg.exp(-x), axis=0), x * 2

    ff = fg.function(f)
    a, b = np.linspace(0, 1, 6).reshape(2, 3), np.ones((2, 3))
    out = ff(a, b)
    ref = f(fg.tensor(a), fg.tensor(b))
    np.testing.assert_allclose(out[0], ref[0].data)
    np.testing.assert_allclose(out[1], ref[1].data)
    ff(a + 1, b)
    assert ff.trace_count == 1
    ff(np.ones((4, 3)), np.ones((4, 3)))
    assert ff.trace_count == 2
    ff(a.astype(np.float32), b.astype(np.float32))
    assert ff.trace_count == 3
    assert isinstance(ff(a, b), tuple)


def test_function_of_grad_composes():
    def loss(w):
        return fg.sum(fg.sin(w) * w ** 2)

    gf = fg.function(fg.grad(loss))
    w = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(gf(w), fg.grad(loss)(w))
    h = fg.function(fg.grad(fg.grad(lambda x: x ** 3)))
    assert h(2.0) == pytest.approx(12.0)
    vg = fg.function(fg.value_and_grad(loss))
    v, g = vg(w)
    assert v == pytest.approx(float(np.sum(np.sin(w) * w ** 2)))
    np.testing.assert_allclose(g, fg.grad(loss)(w))


def test_function_results_are_fresh_arrays():
    f = fg.function(lambda x: fg.exp(x) + 1)
    a = f(np.zeros(3))
    b = f(np.ones(3))
    np.testing.assert_allclose(a, 2.0)
    assert not np.shares_memory(a, b)


def test_compile_leaves_the_garbage_collector_as_it_was():
    """Compiling pauses Python's cyclic collector (speed) and always restores it, after an
    error too; a collector the user switched off stays off."""
    import gc
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(fg.float64, (None,))
        y = fg.exp(x) * 2.0 + 1.0
        sess = fg.Session(g)
        assert gc.isenabled()
        sess.run(y, {x: np.ones(3)})
        assert gc.isenabled()
        p = fg.placeholder(fg.float64, (None,))
        with pytest.raises(fg.errors.InvalidArgumentError, match="broadcast"):
            sess.run(y + p, {x: np.ones(3), p: np.ones(4)})    # fails while compiling
        assert gc.isenabled()
        gc.disable()
        try:
            sess.run(y * 3.0, {x: np.ones(2)})
            assert not gc.isenabled()
        finally:
            gc.enable()


def test_concrete_shapes_follow_the_feed_where_static_shapes_are_unknown():
    # plan.lower reuses a node's static shape when every input has its static shape, and runs
    # the shape rule on the fed shapes otherwise: both paths, and the error of the second
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(fg.float64, (None,), name="a")
        b = fg.placeholder(fg.float64, (None,), name="b")
        c = fg.placeholder(fg.float64, (3,), name="c")
        y = fg.tanh(a + b) * 2.0 + c          # a + b: static shape (None,)
        sess = fg.Session(g)
        out = sess.run(y, {a: np.ones(3), b: np.zeros(3), c: np.ones(3)})
        np.testing.assert_allclose(out, np.tanh(1.0) * 2.0 + 1.0)
        assert sess.run(fg.sum(a * 2.0), {a: np.ones(5)}) == 10.0
        with pytest.raises(fg.errors.InvalidArgumentError, match="add"):
            sess.run(a + b, {a: np.ones(3), b: np.ones(4)})


def test_variable_ops_are_scoped_once():
    g = fg.Graph()
    with g.as_default(), fg.name_scope("layer1"):
        v = fg.Variable(1.0, name="w")
        assert v.name == "layer1/w"
        assert v.initializer.name == "layer1/w/Assign"
        assert v.assign_sub(1.0).name == "layer1/w/AssignSub"
        assert v.assign_sub(1.0, name="dec").name == "layer1/dec"


@pytest.mark.parametrize("make", [lambda: fg.train.AdamOptimizer(0.1),
                                  lambda: fg.train.MomentumOptimizer(0.1, 0.9),
                                  lambda: fg.train.GradientDescentOptimizer(0.1)])
def test_one_optimizer_object_serves_two_graphs(make):
    opt = make()
    results = []
    for _ in range(2):
        g = fg.Graph()
        with g.as_default():
            w = fg.Variable(np.array([1.0, 2.0]))
            train = opt.minimize(fg.sum(w * w))
            init = fg.global_variables_initializer()
        sess = fg.Session(graph=g)
        sess.run(init)
        sess.run(train)
        sess.run(train)
        results.append(sess.run(w))
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("fetch_order", ["group", "list", "reversed list"])
def test_two_assigns_in_one_run_the_last_built_wins(fetch_order):
    d = fg.Variable(1.0)
    first, last = d.assign(5.0), d.assign(7.0)
    fetch = {"group": fg.group(first, last), "list": [first, last],
             "reversed list": [last, first]}[fetch_order]
    sess = fg.Session()
    sess.run(fg.global_variables_initializer())
    sess.run(fetch)
    assert sess.run(d) == 7.0


def test_concatenate_gradient_with_unknown_lengths():
    # (the VJP summed static lengths: int + None; now the slice is found at run time)
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(np.float64, shape=(None, 4), name="a")
        b = fg.placeholder(np.float64, shape=(None, 4), name="b")
        y = fg.sum(fg.concatenate([a * a, b], axis=0) * fg.concatenate([a, b * b], axis=0))
        ga, gb = fg.gradients(y, [a, b])
        (gaa,) = fg.gradients(fg.sum(ga * ga), [a])       # through the gradient's own VJP
        stacked = fg.gradients(fg.sum(fg.vstack([a, b]) ** 2), [a, b])
    A, B = np.arange(8.0).reshape(2, 4), np.arange(12.0).reshape(3, 4)
    got = fg.Session(graph=g).run([ga, gb, gaa, stacked], {a: A, b: B})
    np.testing.assert_array_equal(got[0], 3 * A * A)
    np.testing.assert_array_equal(got[1], 3 * B * B)
    np.testing.assert_array_equal(got[2], 2 * (3 * A * A) * 6 * A)
    np.testing.assert_array_equal(got[3][0], 2 * A)
    np.testing.assert_array_equal(got[3][1], 2 * B)
