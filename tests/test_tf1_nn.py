"""TensorFlow 1's faces of the convolution ops: ``fg.nn.conv2d``, ``max_pool``, ``avg_pool``
(NHWC, ``'SAME'``/``'VALID'``, strides and dilations) and ``batch_normalization`` against
TensorFlow (values and gradients), eager == static == ``fg.function``; ``fg.layers.dense``,
``conv2d`` and ``flatten`` creating their Variables."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fastgraph as fg

# (x shape NHWC, filter (kh, kw, in, out), strides, padding, dilations).  TensorFlow's CPU
# kernels have no gradient of dilated or grouped convolutions: those rows compare the values
# with TensorFlow and the gradients with central differences.
CONV = [
    ((2, 7, 6, 3), (3, 3, 3, 4), 1, "SAME", None),
    ((2, 7, 6, 3), (3, 2, 3, 4), [1, 2, 2, 1], "SAME", None),      # odd padding at the end
    ((1, 8, 9, 2), (2, 4, 2, 3), [1, 3, 2, 1], "VALID", None),
    ((1, 9, 9, 2), (3, 3, 2, 2), 1, "SAME", [1, 2, 2, 1]),
    ((2, 6, 6, 4), (3, 3, 2, 4), 1, "VALID", None),                # grouped (in 4, filter 2)
    ((1, 6, 5, 2), (3, 3, 2, 2), 1, [[0, 0], [1, 2], [0, 1], [0, 0]], None),
]
NO_TF_GRADIENT = {3, 4}
# (x shape, ksize, strides, padding)
POOL = [
    ((2, 6, 6, 3), [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
    ((2, 7, 5, 2), [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    ((1, 5, 8, 1), 2, 1, "SAME"),
    ((1, 6, 7, 2), [3, 2], [2, 3], "VALID"),
]


def _tf():
    return pytest.importorskip("tensorflow")


def _tf_grads(fn, arrays, cot):
    tf = _tf()
    ts = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        out = fn(*ts)
    return out.numpy(), [g.numpy() for g in tape.gradient(out, ts, output_gradients=tf.constant(cot))]


def _fg_grads(fn, arrays, cot):
    ts = [fg.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(fg.tensor(cot))
    return out.data, [t.grad.data for t in ts]


def _finite_difference_check(fg_fn, arrays, cot, grads):
    """``d/de sum(fn(x + e v) * cot)`` at 0 by central differences equals ``grad . v``."""
    rng = np.random.default_rng(2)
    for i, g in enumerate(grads):
        v = rng.standard_normal(arrays[i].shape)
        shifted = []
        for e in (1e-6, -1e-6):
            a = [x.astype(np.float64) for x in arrays]
            a[i] = a[i] + e * v
            shifted.append(float((np.asarray(fg_fn(*a)) * cot).sum()))
        fd = (shifted[0] - shifted[1]) / 2e-6
        assert abs(fd - float((g * v).sum())) <= 1e-5 * max(1.0, abs(fd))


def _check(fg_fn, tf_fn, arrays, dtype, tf_gradient=True):
    tf = _tf()
    out = tf_fn(*[tf.constant(a) for a in arrays]).numpy()
    cot = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    f_out, f_grads = _fg_grads(fg_fn, arrays, cot)
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    assert f_out.dtype == dtype
    np.testing.assert_allclose(f_out, out, **tol)
    if not tf_gradient:
        if dtype == np.float64:
            _finite_difference_check(fg_fn, arrays, cot, f_grads)
        return
    _, t_grads = _tf_grads(tf_fn, arrays, cot)
    for f, t in zip(f_grads, t_grads):
        np.testing.assert_allclose(f, t, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("i", range(len(CONV)), ids=[f"conv{i}" for i in range(len(CONV))])
def test_conv2d_matches_tensorflow(i, dtype):
    tf = _tf()
    xs, ws, strides, padding, dil = CONV[i]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    _check(lambda a, b: fg.nn.conv2d(a, b, strides, padding, dilations=dil),
           lambda a, b: tf.nn.conv2d(a, b, strides, padding, dilations=dil), [x, w], dtype,
           tf_gradient=i not in NO_TF_GRADIENT)


@pytest.mark.parametrize("kind", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("row", POOL, ids=[f"pool{i}" for i in range(len(POOL))])
def test_pools_match_tensorflow(row, kind):
    tf = _tf()
    xs, k, s, padding = row
    x = np.random.default_rng(0).standard_normal(xs)
    tfk = {"max_pool": tf.nn.max_pool2d, "avg_pool": tf.nn.avg_pool2d}[kind]
    _check(lambda a: getattr(fg.nn, kind)(a, k, s, padding),
           lambda a: tfk(a, k, s, padding), [x], np.float64)


def test_batch_normalization_matches_tensorflow():
    tf = _tf()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    mean, var = rng.standard_normal(5).astype(np.float32), rng.uniform(0.5, 2, 5).astype(np.float32)
    off, sc = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    _check(lambda *a: fg.nn.batch_normalization(*a, 1e-3),
           lambda *a: tf.nn.batch_normalization(*a, 1e-3), [x, mean, var, off, sc], np.float32)
    np.testing.assert_allclose(
        fg.nn.batch_normalization(x, mean, var, None, None, 1e-3),
        tf.nn.batch_normalization(x, mean, var, None, None, 1e-3).numpy(), rtol=1e-5, atol=1e-6)


def test_nchw_equals_nhwc_and_eager_static_function_agree():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 2, 3, 4))

    def net(x, w):
        h = fg.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
        return fg.sum(fg.nn.avg_pool(fg.nn.max_pool(h, 2, 1, "SAME"), 2, 1, "SAME") ** 2)

    tx, tw = fg.tensor(x, requires_grad=True), fg.tensor(w, requires_grad=True)
    out = net(tx, tw)
    out.backward()
    nchw = fg.nn.conv2d(x.transpose(0, 3, 1, 2), w, [1, 1, 2, 2], "SAME", data_format="NCHW")
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1),
                               fg.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"), rtol=1e-12)
    f = fg.function(fg.value_and_grad(net, argnums=(0, 1)))
    v, (gx, gw) = f(x, w)
    np.testing.assert_allclose(v, out.data, rtol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.data, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, tw.grad.data, rtol=1e-10, atol=1e-12)
    g = fg.Graph()
    with g.as_default():
        px, pw = fg.placeholder(fg.float64, x.shape), fg.placeholder(fg.float64, w.shape)
        loss = net(px, pw)
        grads = fg.gradients(loss, [px, pw])
        with fg.Session() as sess:
            sv, sgx, sgw = sess.run([loss] + grads, {px: x, pw: w})
    np.testing.assert_allclose(sv, out.data, rtol=1e-12)
    np.testing.assert_allclose(sgx, tx.grad.data, rtol=1e-10, atol=1e-12)


def test_bad_arguments_name_the_op():
    x = np.ones((1, 4, 4, 2))
    with pytest.raises(ValueError, match="conv2d: padding must be 'SAME', 'VALID'"):
        fg.nn.conv2d(x, np.ones((2, 2, 2, 1)), 1, "FULL")
    with pytest.raises(ValueError, match="conv2d: the filter must be 4-D"):
        fg.nn.conv2d(x, np.ones((2, 2, 2)), 1, "SAME")
    with pytest.raises(ValueError, match="max_pool strides: the batch and channel entries"):
        fg.nn.max_pool(x, 2, [2, 2, 2, 1], "SAME")
    with pytest.raises(ValueError, match="conv2d: the input's 2 channels"):
        fg.nn.conv2d(x, np.ones((2, 2, 3, 1)), 1, "SAME")


# ---- fg.layers ----------------------------------------------------------------------------------
def test_layers_create_variables_and_compute():
    fg.random.seed(0)
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(fg.float32, (None, 6, 6, 3))
        c = fg.layers.conv2d(x, 4, 3, padding="same", activation=fg.nn.relu)
        f = fg.layers.flatten(c)
        y = fg.layers.dense(f, 5, name="logits")
        names = [v.name for v in fg.trainable_variables()]
        assert names == ["conv2d/kernel", "conv2d/bias", "logits/kernel", "logits/bias"]
        k = g.get("conv2d/kernel")
        assert tuple(k.shape) == (3, 3, 3, 4) and tuple(f.shape) == (None, 144)
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            out, ck, cb, dk, db = sess.run([y, k, g.get("conv2d/bias"), g.get("logits/kernel"),
                                            g.get("logits/bias")], {x: xv})
    limit = math.sqrt(6 / (27 + 36))
    assert np.abs(ck).max() <= limit and np.all(cb == 0) and ck.dtype == np.float32
    h = np.maximum(fg.nn.conv2d(xv, ck, 1, "SAME") + cb, 0).reshape(2, -1)
    np.testing.assert_allclose(out, h @ dk + db, rtol=1e-5, atol=1e-5)
    tf = pytest.importorskip("tensorflow")
    ref = tf.nn.relu(tf.nn.conv2d(xv, ck, 1, "SAME") + cb).numpy().reshape(2, -1) @ dk + db
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_layers_refuse_eager_tensors():
    with pytest.raises(TypeError, match="fastgraph.torch.nn"):
        fg.layers.dense(fg.ones(2, 3), 4)
