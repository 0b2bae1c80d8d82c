"""Plan-level rewrites for training graphs: shape-only inputs fold (``fold``), bias gradients and
matmuls of transposes become lean calls (``lower``).  Each rewrite computes bit-identical values
to the plan without it."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
from fastgraph import ops as F


def _run(build, feeds, disable=()):
    g = fg.Graph()
    with g.as_default():
        phs = [fg.placeholder(v.dtype, v.shape) for v in feeds]
        fetches = list(build(*phs))
        feed = dict(zip(phs, feeds))
        sess = fg.Session(g, disable=disable)
        return sess.run(fetches, feed), sess.explain(fetches, feed)


def _steps(text):
    return text.split("[plan]")[1].split("[buffers]")[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mean_gradient_seed_folds_to_one_constant(dtype, rng):
    x = rng.standard_normal((8, 5)).astype(dtype)

    def build(a):
        loss = fg.mean(fg.exp(a))
        return [loss, fg.gradients(loss, [a])[0]]

    (loss, ga), text = _run(build, [x])
    (loss0, ga0), _ = _run(build, [x], disable=("fold",))
    steps = _steps(text)
    assert "broadcast_like(" not in steps and "size_ratio(" not in steps
    assert loss == loss0 and ga.dtype == ga0.dtype == dtype
    np.testing.assert_array_equal(ga, ga0)
    np.testing.assert_allclose(ga, np.exp(x) / x.size, rtol=1e-6)


def test_shape_only_fold_needs_known_shapes(rng):
    x = rng.standard_normal((4, 3))
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(np.float64, (None, 3))
        loss = fg.mean(a * a)
        grad = fg.gradients(loss, [a])[0]
        # shapes are known per feed signature, so the plan for a fed (4, 3) folds the seed
        sess = fg.Session(g)
        np.testing.assert_allclose(sess.run(grad, {a: x}), 2 * x / x.size)
        np.testing.assert_allclose(sess.run(grad, {a: x[:2]}), 2 * x[:2] / 6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_gradient_and_transposed_matmuls_are_lowered(dtype, rng):
    x = rng.standard_normal((16, 7)).astype(dtype)
    w = rng.standard_normal((7, 5)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)

    def build(xp, wp, bp):
        loss = fg.sum(fg.tanh(fg.matmul(xp, wp) + bp))
        return [loss] + list(fg.gradients(loss, [xp, wp, bp]))

    got, text = _run(build, [x, w, b])
    ref, ref_text = _run(build, [x, w, b], disable=("lower",))
    assert "add.reduce(axis=(0,))" in text
    assert "transposed" in _steps(text) and "swapaxes(" not in _steps(text)
    assert "swapaxes(" in _steps(ref_text)
    for a, r in zip(got, ref):
        assert np.asarray(a).dtype == np.asarray(r).dtype
        np.testing.assert_array_equal(a, r)
    d = 1 - np.tanh(x @ w + b) ** 2
    np.testing.assert_allclose(got[3], d.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(got[2], x.T @ d, rtol=1e-4)


def test_lowered_bias_gradient_is_a_fresh_fetch(rng):
    """A fetched lowered sum owns its memory: a second run does not change the first result."""
    d1 = rng.standard_normal((6, 4))
    g = fg.Graph()
    with g.as_default():
        a = fg.placeholder(np.float64, (6, 4))
        b = fg.Variable(np.zeros(4))
        loss = fg.sum((a + b) * (a + b))
        gb = fg.gradients(loss, [b])[0]
        sess = fg.Session(g)
        sess.run(fg.global_variables_initializer())
        first = sess.run(gb, {a: d1})
        keep = first.copy()
        sess.run(gb, {a: 2 * d1})
        np.testing.assert_array_equal(first, keep)
        np.testing.assert_allclose(keep, 2 * d1.sum(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_pick_row_sums_fold_to_the_seed(dtype, rng):
    """``sum(put_labels(seed, ...), axis=-1)`` is the (constant) seed as a column: exact.
    (The cross-entropy written out of its parts; ``fg.cross_entropy`` itself is one op.)"""
    z = rng.standard_normal((12, 5)).astype(dtype)
    labels = rng.integers(0, 5, 12)

    def build(zp, lp):
        loss = -fg.mean(F.pick(fg.log_softmax(zp), lp))
        return [loss, fg.gradients(loss, [zp])[0]]

    got, text = _run(build, [z, labels])
    ref, _ = _run(build, [z, labels], disable=("simplify",))
    assert "c as a column" in text
    assert got[0] == ref[0]
    np.testing.assert_array_equal(got[1], ref[1])
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(12), labels] -= 1
    np.testing.assert_allclose(got[1], p / 12, rtol=1e-5, atol=1e-7)


def test_a_product_never_writes_over_its_own_operand(rng):
    """The buffer planner gives a step that is not elementwise (a matmul) a buffer none of its
    inputs lives in -- ``np.matmul`` would copy such an operand first -- while elementwise
    steps still take their dying input's buffer (in place)."""
    import re
    x = rng.standard_normal((8, 6))
    w = rng.standard_normal((6, 6))

    def build(a, b):
        d = fg.tanh(a) + 1.0          # dies in the product below, same shape as its result
        return [fg.matmul(fg.exp(fg.matmul(d, b)), b)]

    (out,), text = _run(build, [x, w])
    np.testing.assert_array_equal(out, np.matmul(np.exp(np.matmul(np.tanh(x) + 1.0, w)), w))
    steps = _steps(text)
    buf = {m.group(1): m.group(2) for m in re.finditer(r"(\S+) = .* -> buffer (\d+)", steps)}
    mm = next(line for line in steps.splitlines() if "= matmul(fused" in line)
    mm_name, operand = re.match(r"\s*(\S+) = matmul\((\S+),", mm).groups()
    assert operand in buf and mm_name in buf and buf[mm_name] != buf[operand]
    ew = next(line for line in steps.splitlines() if "(matmul" in line and "matmul(" not in line)
    assert buf[re.match(r"\s*(\S+) =", ew).group(1)] == buf[mm_name]   # exp in place
