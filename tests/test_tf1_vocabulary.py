"""TensorFlow 1's vocabulary (``tests/tf1_cases.py``'s table): each name against TensorFlow's
documented semantics, its gradients against finite differences, and -- where TensorFlow is
installed, run in a process of its own -- values, gradients, optimizer steps and the classic
tutorial programs against TensorFlow itself."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.compat.v1 as tfv1
from tf1_cases import (CASES, DTYPE_NAMES, OPT_STEPS, OPTIMIZERS, PROGRAMS, as_list,
                       dtype_program, optimizer_program, run_case)

CASES_FILE = Path(__file__).with_name("tf1_cases.py")
FACES = {"compat.v1": tfv1, "fastgraph": fg}


def _faces(case):
    return ["compat.v1", "fastgraph"] if case.top else ["compat.v1"]


def _check(got, want, tol, what, same_dtype=True):
    assert len(got) == len(want), what
    for k, (a, b) in enumerate(zip(got, want)):
        b = np.asarray(b)
        assert a.shape == b.shape, f"{what}[{k}]: shape {a.shape} != {b.shape}"
        if same_dtype:
            assert a.dtype == b.dtype, f"{what}[{k}]: dtype {a.dtype} != {b.dtype}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{what}[{k}]")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what}[{k}]")


# a case runs in fastgraph's top level too where the name means the same there (``top``)
@pytest.mark.parametrize("case, face", [(c, f) for c in CASES for f in _faces(c)],
                         ids=lambda v: v if isinstance(v, str) else v.name)
def test_values_follow_the_documentation(case, face):
    values, _ = run_case(FACES[face], case, grads=False)
    _check(values, as_list(case.ref(*case.inputs)), case.tol, case.name)


def _numeric_gradient(case, index, h=1e-6):
    g = fg.Graph()
    with g.as_default():
        shapes = case.shapes or tuple(np.shape(a) for a in case.inputs)
        phs = [tfv1.placeholder(np.asarray(a).dtype, s) for a, s in zip(case.inputs, shapes)]
        loss = tfv1.reduce_sum(as_list(case.build(tfv1, *phs))[0])
        sess = fg.Session(graph=g)
    x = np.array(case.inputs[index], dtype=np.float64)
    out = np.zeros_like(x)
    feed = dict(zip(phs, case.inputs))
    for i in np.ndindex(x.shape):
        vals = []
        for step in (h, -h):
            xp = x.copy()
            xp[i] += step
            feed[phs[index]] = xp
            vals.append(float(sess.run(loss, feed)))
        out[i] = (vals[0] - vals[1]) / (2 * h)
    return out


# (finite differences cannot see stop_gradient: those cases are compared with TensorFlow's
# gradients only)
@pytest.mark.parametrize("case", [c for c in CASES if c.grad and c.fd], ids=lambda c: c.name)
def test_gradients_match_finite_differences(case):
    values, grads = run_case(tfv1, case)
    # (a float32 output, a cast's, is differenced with a larger step and tolerance)
    h, tol = (1e-6, 1e-5) if values[0].dtype == np.float64 else (1e-2, 1e-2)
    for i, g in zip(case.grad, grads):
        assert g is not None, f"{case.name}: no gradient for input {i}"
        np.testing.assert_allclose(g, _numeric_gradient(case, i, h), rtol=tol, atol=tol / 10,
                                   err_msg=f"{case.name}: input {i}")


def test_labels_of_the_v1_softmax_cross_entropy_get_no_gradient():
    y = tfv1.placeholder(tfv1.float64, (3, 4))
    x = tfv1.placeholder(tfv1.float64, (3, 4))
    v1 = tfv1.nn.softmax_cross_entropy_with_logits(labels=y, logits=x)
    v2 = tfv1.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x)
    assert tfv1.gradients(v1, [y, x])[0] is None
    assert tfv1.gradients(v2, [y, x])[0] is not None


# ---- dtypes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("face", ["compat.v1", "fastgraph"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_every_tensorflow_dtype_is_fed_fetched_and_compared(name, face):
    got, same = dtype_program(FACES[face], name)
    from tf1_cases import _dtype_value
    want = _dtype_value(name)
    assert got.dtype.kind == want.dtype.kind and got.dtype.itemsize == want.dtype.itemsize
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(same, [True, False])


def test_string_constants_are_bytes_and_python_strings_can_be_fed():
    hello = fg.constant("Hello, TensorFlow!")
    words = fg.placeholder(fg.string, [None])
    hit = fg.equal(words, "héllo")
    with fg.Session() as sess:
        assert sess.run(hello) == b"Hello, TensorFlow!"
        assert sess.run(hit, {words: ["héllo", "x"]}).tolist() == [True, False]
        assert sess.run(words, {words: [b"a", b"bcd"]}).tolist() == [b"a", b"bcd"]
    assert fg.gradients(fg.cast(fg.equal(words, "a"), fg.float32), [words]) == [None]


def test_integer_placeholders_have_no_gradient_but_compute():
    i = fg.placeholder(fg.int32, [None])
    f = fg.placeholder(fg.float32, [None])
    y = fg.reduce_sum(fg.cast(i, fg.float32) * f)
    gi, gf = fg.gradients(y, [i, f])
    assert gi is None
    with fg.Session() as sess:
        np.testing.assert_array_equal(sess.run(gf, {i: [2, 3], f: [1.0, 1.0]}), [2.0, 3.0])


def test_python_numbers_are_tensorflows_dtypes_in_compat_and_numpys_at_the_top():
    assert tfv1.constant(1.5).dtype == np.float32 and tfv1.constant(2).dtype == np.int32
    assert tfv1.constant(2 ** 40).dtype == np.int64
    assert tfv1.Variable(0.5).dtype == np.float32 and tfv1.zeros([2]).dtype == np.float32
    assert fg.constant(1.5).dtype == np.float64 and fg.constant(2).dtype == np.int64
    assert tfv1.constant(np.float64(1.5)).dtype == np.float64       # NumPy data keeps its own
    assert tfv1.constant([1, 2], dtype=tfv1.float64).dtype == np.float64
    assert isinstance(tfv1.Variable(1.0), fg.Variable)


def test_compat_operations_of_plain_data_are_graph_constants():
    s = tfv1.reduce_sum([1.0, 2.0])
    hot = tfv1.one_hot([0, 2], 3)
    pieces = tfv1.split(np.arange(6.0), [2, 4])
    assert isinstance(s, fg.Node) and s.dtype == np.float32
    assert isinstance(fg.reduce_sum([1.0, 2.0]), np.floating)    # the top level: NumPy's
    with tfv1.Session() as sess:
        assert sess.run(s) == 3.0
        np.testing.assert_array_equal(sess.run(hot), [[1, 0, 0], [0, 0, 1]])
        got = sess.run(pieces)
    assert [p.tolist() for p in got] == [[0.0, 1.0], [2.0, 3.0, 4.0, 5.0]]


def test_name_is_the_nodes_name():
    x = tfv1.placeholder(tfv1.float32, [None, 2], name="x")
    with tfv1.name_scope("layer"):
        y = tfv1.reduce_sum(x, 1, name="total")
        z = tfv1.add(x, 1.0, name="shifted")
    assert y.name == "layer/total" and z.name == "layer/shifted"
    g = tfv1.get_default_graph()
    assert g.get_tensor_by_name("layer/total:0") is y
    with tfv1.Session() as sess:
        np.testing.assert_array_equal(sess.run("layer/total:0", {x: [[1, 2]]}), [3.0])


# ---- NumPy's meaning at the top level, TensorFlow's in compat.v1 ---------------------------------
def test_clashing_names_keep_numpys_meaning_at_the_top_level():
    m = np.array([[1, 9], [7, 2]])
    assert fg.argmax(m) == 1 and fg.argmin(m) == 0                  # flattened, as NumPy
    x = fg.placeholder(fg.int64, (2, 2))
    with fg.Session() as sess:
        assert sess.run(fg.argmax(x), {x: m}) == 1
        np.testing.assert_array_equal(sess.run(tfv1.argmax(x), {x: m}), [1, 0])   # axis 0
    a = np.arange(6.0)
    assert [p.shape for p in fg.split(a, [2, 4])] == [(2,), (2,), (2,)]   # indices
    assert fg.range(3).dtype == np.int64
    with pytest.raises(TypeError):
        fg.matmul(np.eye(2), np.eye(2), transpose_b=True)
    assert not hasattr(fg, "shape") and not hasattr(fg, "size") and not hasattr(fg, "identity")


@pytest.mark.parametrize("call,err,match", [
    (lambda: tfv1.reduce_sum(np.ones(3), axis=0, reduction_indices=0), ValueError, "not both"),
    (lambda: tfv1.nn.softmax_cross_entropy_with_logits(np.ones(3), np.ones(3)), ValueError,
     "named arguments"),
    (lambda: tfv1.split(np.ones(5), [2, 2]), ValueError, "do not add up"),
    (lambda: tfv1.split(np.ones(5), 2), ValueError, "2 equal pieces"),
    (lambda: tfv1.add_n([np.ones(2), np.ones(3)]), ValueError, r"\(2,\), \(3,\)"),
    (lambda: tfv1.nn.bias_add(np.ones((2, 3)), np.ones(4)), ValueError, "3 channels"),
    (lambda: tfv1.argmax(np.ones(3), output_type=tfv1.float32), TypeError, "int32 or int64"),
    (lambda: tfv1.one_hot(np.array([1]), -1), ValueError, "non-negative"),
    (lambda: tfv1.losses.mean_squared_error(np.ones(3), np.ones(4)), ValueError,
     r"\(3,\) and predictions of shape \(4,\)"),
])
def test_bad_arguments_are_named(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_sparse_labels_out_of_range_raise_instead_of_wrapping():
    y = tfv1.placeholder(tfv1.int64, [None])
    x = tfv1.placeholder(tfv1.float32, [None, 3])
    loss = tfv1.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)
    with tfv1.Session() as sess:
        for bad in (3, -1):
            with pytest.raises(ValueError, match=f"label value of {bad} .* range of \\[0, 3\\)"):
                sess.run(loss, {y: [0, bad], x: np.zeros((2, 3))})


# ---- random ops ---------------------------------------------------------------------------------
def test_random_ops_draw_anew_on_every_run_in_their_shape_and_dtype():
    a = fg.random_normal([2, 3])
    b = fg.random_uniform([2, 3], dtype=fg.float64)
    c = fg.truncated_normal([4])
    d = fg.random_uniform([5], 0, 10, dtype=fg.int32)
    assert (a.shape, a.dtype, b.dtype, c.dtype, d.dtype) == (
        (2, 3), np.float32, np.float64, np.float32, np.int32)
    with fg.Session() as sess:
        first, second = sess.run(a), sess.run(a)
        pair = sess.run([a, a])        # one run draws once: both fetches agree
    assert first.shape == (2, 3) and not np.array_equal(first, second)
    np.testing.assert_array_equal(pair[0], pair[1])


def test_two_random_ops_alike_are_two_values_and_never_folded():
    a = fg.random_normal([3], seed=1)
    b = fg.random_normal([3], seed=2)
    s = fg.random_normal(fg.compat.v1.shape(np.zeros((2, 2))))   # a shape the fold knows
    with fg.Session() as sess:
        x, y = sess.run([a, b])
        assert not np.array_equal(x, y)
        assert not np.array_equal(sess.run(s), sess.run(s))
        assert "folded" not in sess.explain(s).split("[plan]")[1].split("\n")[-1]


def _program(seed=None, op_seed=None):
    g = fg.Graph()
    with g.as_default():
        if seed is not None:
            fg.set_random_seed(seed)
        return g, fg.random_normal([4], seed=op_seed), fg.random_uniform([2], seed=op_seed)


def test_seeds_make_draws_reproducible_per_session_as_in_tensorflow():
    g, a, b = _program(seed=7)
    s1 = fg.Session(graph=g)
    seq1 = [s1.run([a, b]) for _ in range(3)]
    s2 = fg.Session(graph=g)                  # a new session starts the same sequence
    seq2 = [s2.run([a, b]) for _ in range(3)]
    g2, a2, b2 = _program(seed=7)             # the same program rebuilt: the same draws
    seq3 = [fg.Session(graph=g2).run([a2, b2])]
    for x, y in zip(seq1, seq2):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])
    np.testing.assert_array_equal(seq1[0][0], seq3[0][0])
    assert not np.array_equal(seq1[0][0], seq1[1][0])
    g4, a4, _ = _program(seed=8)
    assert not np.array_equal(fg.Session(graph=g4).run(a4), seq1[0][0])
    g5, a5, _ = _program(op_seed=3)           # an op seed alone is reproducible too
    g6, a6, _ = _program(op_seed=3)
    np.testing.assert_array_equal(fg.Session(graph=g5).run(a5), fg.Session(graph=g6).run(a6))


def test_random_draws_have_their_distributions():
    fg.set_random_seed(0)
    n = 20000
    z = fg.random_normal([n], mean=2.0, stddev=3.0, dtype=fg.float64)
    u = fg.random_uniform([n], -1.0, 3.0, dtype=fg.float64)
    t = fg.truncated_normal([n], stddev=2.0, dtype=fg.float64)
    k = fg.random_uniform([n], 3, 7, dtype=fg.int64)
    with fg.Session() as sess:
        z, u, t, k = sess.run([z, u, t, k])
    assert abs(z.mean() - 2) < 0.1 and abs(z.std() - 3) < 0.1
    assert -1 <= u.min() and u.max() < 3 and abs(u.mean() - 1) < 0.05
    assert np.abs(t).max() <= 4 and abs(t.std() - 2 * 0.8796) < 0.05   # truncated at 2 sigma
    assert set(np.unique(k)) == {3, 4, 5, 6}


def test_random_initial_values_are_drawn_by_the_initializer():
    fg.set_random_seed(1)
    w = fg.Variable(fg.random_normal([3, 2], stddev=0.1))
    assert w.shape == (3, 2)
    with fg.Session() as sess:
        sess.run(w.initializer)
        first = sess.run(w)
        np.testing.assert_array_equal(sess.run(w), first)       # a variable holds its value
        sess.run(w.initializer)
        assert not np.array_equal(sess.run(w), first)


def test_random_mean_and_stddev_may_be_graph_values_with_gradients():
    mu = fg.placeholder(fg.float32, ())
    sigma = fg.placeholder(fg.float32, ())
    z = fg.random_normal([1000], mean=mu, stddev=sigma, seed=4)
    gmu, gsigma = fg.gradients(fg.reduce_sum(z), [mu, sigma])
    with fg.Session() as sess:
        dz, ds = sess.run([gmu, gsigma], {mu: 1.0, sigma: 2.0})
    assert dz == 1000.0 and abs(ds) < 200      # d/dsigma = sum of the standard draws


def test_dropout_keeps_the_expected_share_and_scales_it():
    fg.set_random_seed(3)
    x = fg.placeholder(fg.float32, [None, 1000])
    h = fg.nn.dropout(x, keep_prob=0.25)
    h2 = fg.nn.dropout(x, rate=0.5, noise_shape=[1, 1000])
    with fg.Session() as sess:
        a = sess.run(h, {x: np.ones((4, 1000))})
        b = sess.run(h, {x: np.ones((4, 1000))})
        c = sess.run(h2, {x: np.ones((4, 1000))})
    assert set(np.unique(a)) == {0.0, 4.0} and abs((a > 0).mean() - 0.25) < 0.03
    assert not np.array_equal(a, b)
    assert set(np.unique(c)) == {0.0, 2.0} and (c == c[0]).all()   # one mask for every row
    eager = fg.nn.dropout(fg.tensor(np.ones(1000)), rate=0.5, seed=0)
    assert set(np.unique(eager.data)) == {0.0, 2.0}
    with pytest.raises(ValueError, match="exactly one"):
        fg.nn.dropout(x)


# ---- optimizers and the global step ----------------------------------------------------------------
def _least_squares_reference(name):
    """The optimizers' formulas spelt out in NumPy, for the problem of ``optimizer_program``."""
    from tf1_cases import _OPT_B, _OPT_W, _OPT_X, _OPT_Y
    params = [_OPT_W.copy(), _OPT_B.copy()]
    state: dict = {}
    out = []

    def grads(w, b):
        r = 2 * (_OPT_X @ w + b - _OPT_Y) / _OPT_Y.size
        return [_OPT_X.T @ r, r.sum(0)]

    for t in range(1, OPT_STEPS + 1):
        gs = grads(*params)
        for k, (p, g) in enumerate(zip(params, gs)):
            s = state.setdefault(k, {})
            if name == "GradientDescent":
                p -= 0.1 * g
            elif name == "Momentum":
                s["a"] = s.get("a", 0) * 0.9 + g
                p -= 0.05 * s["a"]
            elif name == "Adam":
                s["m"] = s.get("m", 0) + (g - s.get("m", 0)) * 0.1
                s["v"] = s.get("v", 0) + (g * g - s.get("v", 0)) * 0.001
                lr = 0.05 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
                p -= s["m"] * lr / (np.sqrt(s["v"]) + 1e-8)
            elif name == "RMSProp":
                s["ms"] = s.get("ms", 1.0) + (g * g - s.get("ms", 1.0)) * 0.1
                s["mom"] = s.get("mom", 0) * 0.0 + 0.01 * g / np.sqrt(s["ms"] + 1e-10)
                p -= s["mom"]
            elif name == "Adagrad":
                s["acc"] = s.get("acc", 0.1) + g * g
                p -= 0.1 * g / np.sqrt(s["acc"])
            elif name == "Adadelta":
                s["acc"] = s.get("acc", 0) * 0.9 + g * g * 0.1
                up = np.sqrt(s.get("up", 0) + 1e-6) / np.sqrt(s["acc"] + 1e-6) * g
                p -= up
                s["up"] = s.get("up", 0) * 0.9 + up * up * 0.1
        out += [p.copy() for p in params]
    return out + [np.int64(OPT_STEPS)]


@pytest.mark.parametrize("name", ["GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad",
                                  "Adadelta"])
def test_optimizers_follow_tensorflow_1s_formulas(name):
    got = optimizer_program(fg, name)
    want = _least_squares_reference(name)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"{name}[{k}]")
    assert got[-1] == OPT_STEPS and got[-1].dtype == np.int64


def test_compute_and_apply_gradients_with_clipping_and_a_global_step():
    w = fg.Variable(np.array([3.0, -4.0]))
    loss = fg.reduce_sum(w * w)
    step = fg.train.get_or_create_global_step()
    assert fg.train.get_or_create_global_step() is step and step.dtype == np.int64
    opt = fg.train.GradientDescentOptimizer(0.5)
    gvs = opt.compute_gradients(loss)
    assert [v for _, v in gvs] == [w]
    capped = [(fg.clip_by_value(g, -1.0, 1.0), v) for g, v in gvs]
    train = opt.apply_gradients(capped, global_step=step)
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        np.testing.assert_array_equal(sess.run(w), [2.0, -3.0])
        assert sess.run(step) == 2
    with pytest.raises(ValueError, match="already exists"):
        fg.train.create_global_step()
    with pytest.raises(TypeError, match="integer scalar"):
        opt.minimize(loss, global_step=w)


def test_slots_are_tensorflows():
    w = fg.Variable(np.ones(2), name="w")
    opt = fg.train.RMSPropOptimizer(0.1, momentum=0.5)
    opt.minimize(fg.reduce_sum(w))
    assert opt.get_slot_names() == ["momentum", "rms"]
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "rms")), [1.0, 1.0])
    ada = fg.train.AdagradOptimizer(0.1)
    ada.minimize(fg.reduce_sum(w))
    with fg.Session() as sess:
        sess.run(fg.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(ada.get_slot(w, "accumulator")), [0.1, 0.1])


def test_exponential_decay():
    step = fg.train.get_or_create_global_step()
    lr = fg.train.exponential_decay(0.1, step, 10, 0.5, staircase=True)
    smooth = fg.train.exponential_decay(0.1, step, 10, 0.5)
    with fg.Session() as sess:
        sess.run(step.initializer)
        sess.run(step.assign(15))
        np.testing.assert_allclose(sess.run([lr, smooth]), [0.05, 0.1 * 0.5 ** 1.5], rtol=1e-6)


# ---- the tutorial programs, as TensorFlow 1 users wrote them ----------------------------------------
@pytest.mark.parametrize("face", ["compat.v1", "fastgraph"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tutorial_programs_run(name, face):
    out = PROGRAMS[name](FACES[face])
    if name == "hello_world":
        assert out == [b"Hello, TensorFlow!"]
    elif name == "basic_operations":
        assert [int(v) for v in out[:4]] == [5, 6, 5, 6]
        np.testing.assert_array_equal(out[4], [[12.0]])
    elif name == "linear_regression":
        assert out[0] < 0.2 and 0.2 < out[1] < 0.5
    elif name in ("logistic_regression", "multilayer_perceptron"):
        assert out[0][-1] < out[0][0] and out[1] > 0.8
    elif name == "autoencoder":
        assert out[0][-1] < out[0][0]
    elif name == "nearest_neighbor":
        from tf1_cases import _NN_LABELS
        np.testing.assert_array_equal(out[0], _NN_LABELS[[3, 11, 17]].argmax(1))


def test_disable_eager_execution_and_v2_behavior_are_no_ops():
    assert tfv1.disable_eager_execution() is None and tfv1.disable_v2_behavior() is None
    assert tfv1.executing_eagerly() is False
    assert fg.compat.v1 is tfv1 and tfv1.compat.v1 is tfv1
    assert tfv1.nn is fg.nn and tfv1.train is fg.train and tfv1.losses is fg.losses


# ---- against TensorFlow itself ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def tensorflow_results(tmp_path_factory):
    import importlib.util
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    out = tmp_path_factory.mktemp("tensorflow") / "results.npz"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, str(CASES_FILE), str(out)], capture_output=True,
                          text=True, timeout=1200, env=env)
    if proc.returncode == 3:
        pytest.skip("TensorFlow cannot be imported")
    assert proc.returncode == 0, proc.stderr[-4000:]
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_values_and_gradients_equal_tensorflows(case, tensorflow_results):
    values, grads = run_case(tfv1, case)
    want = [tensorflow_results[f"case/{case.name}/value/{k}"] for k in range(len(values))]
    # (tf.losses computes in float32 whatever the inputs' dtype; fastgraph in the inputs')
    tol = 1e-5 if case.tf32 else 1e-9
    _check(values, want, tol, case.name, same_dtype=not case.tf32)
    for i, g in zip(case.grad, grads):
        key = f"case/{case.name}/grad/{i}"
        if key not in tensorflow_results:
            assert g is None, f"{case.name}: TensorFlow has no gradient for input {i}"
            continue
        assert g is not None, f"{case.name}: no gradient for input {i}"
        np.testing.assert_allclose(g, tensorflow_results[key], rtol=tol, atol=tol / 1e3,
                                   err_msg=f"{case.name}: gradient of input {i}")


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtypes_equal_tensorflows(name, tensorflow_results):
    got = dtype_program(tfv1, name)
    for k, v in enumerate(got):
        want = tensorflow_results[f"dtype/{name}/{k}"]
        assert v.dtype.kind == want.dtype.kind, f"{name}[{k}]: {v.dtype} != {want.dtype}"
        assert v.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizers_step_for_step_equal_tensorflows(name, dtype, tensorflow_results):
    got = optimizer_program(fg, name, dtype)
    # (TensorFlow rounds Python-number hyperparameters to float32 before casting them to a
    # float64 variable's dtype; fastgraph keeps them exact: a relative 1e-7 difference)
    tol = 1e-5 if dtype == np.float32 else 1e-6
    for k, v in enumerate(got):
        want = tensorflow_results[f"opt/{name}/{np.dtype(dtype).name}/{k}"]
        assert v.dtype == want.dtype, f"{name}[{k}]"
        np.testing.assert_allclose(v, want, rtol=tol, atol=tol, err_msg=f"{name}[{k}]")


@pytest.mark.parametrize("face", ["compat.v1", "fastgraph"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tutorial_programs_equal_tensorflows(name, face, tensorflow_results):
    got = PROGRAMS[name](FACES[face])
    for k, v in enumerate(got):
        want = tensorflow_results[f"program/{name}/{k}"]
        v = np.asarray(v)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(v, want, rtol=2e-4, atol=1e-5, err_msg=f"{name}[{k}]")
        else:
            assert v.tolist() == want.tolist(), f"{name}[{k}]"


# ---- the guide's name table ---------------------------------------------------------------------
def test_the_guides_name_table_is_the_registrys():
    page = (Path(__file__).resolve().parent.parent / "docs" / "tensorflow1.md").read_text()
    start = "<!-- name-table: generated by fastgraph.compat.name_table() -->\n"
    table = page[page.index(start) + len(start):page.index("<!-- name-table: end -->")]
    assert table == fg.compat.name_table(), (
        "docs/tensorflow1.md's name table is out of date: paste the output of "
        "python -c 'import fastgraph; print(fastgraph.compat.name_table(), end=\"\")'")
    for row in table.splitlines()[2:]:       # every name listed is there
        where, names = row.strip("|").split("|")
        for name in names.replace("`", "").split(","):
            name = name.strip()
            spaces = {"`fg.nn`": fg.nn, "`fg.losses`": fg.losses}
            home = next((m for k, m in spaces.items() if where.strip().startswith(k)), tfv1)
            assert hasattr(home, name), f"{where.strip()}: {name}"
