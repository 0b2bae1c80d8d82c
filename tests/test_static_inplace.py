"""The ``inplace`` pass: SGD-style variable updates overwrite the variable's own array, with the
Session's semantics unchanged (fetches see the values before the run's updates, results handed
out are never changed later, errors leave every variable as it was, initial values survive)."""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg


def _model(rng, lr=0.1):
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    w0 = rng.standard_normal((6, 3)).astype(np.float32)
    b0 = rng.standard_normal(3).astype(np.float32)
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(np.float32, (None, 6))
        yp = fg.placeholder(np.int64, (None,))
        w = fg.Variable(w0)
        b = fg.Variable(b0)
        loss = fg.cross_entropy(fg.matmul(xp, w) + b, yp)
        train = fg.train.GradientDescentOptimizer(lr).minimize(loss)
        init = fg.global_variables_initializer()
    return g, dict(x=x, y=y, w0=w0, b0=b0, xp=xp, yp=yp, w=w, b=b, loss=loss, train=train,
                   init=init)


def _train(disable, steps=5):
    g, m = _model(np.random.default_rng(3))
    with g.as_default():
        sess = fg.Session(g, disable=disable)
        sess.run(m["init"])
        feed = {m["xp"]: m["x"], m["yp"]: m["y"]}
        losses = [sess.run([m["train"], m["loss"]], feed)[1] for _ in range(steps)]
        return losses, sess.run([m["w"], m["b"]]), sess.explain([m["train"], m["loss"]], feed)


def test_updates_in_place_equal_copies():
    losses, (w, b), text = _train(())
    losses0, (w0, b0), text0 = _train(("inplace",))
    assert "in place into" in text and "in place into" not in text0
    assert losses == losses0
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(b, b0)


def test_fetches_see_values_before_the_update(rng):
    g, m = _model(rng)
    with g.as_default():
        sess = fg.Session(g)
        sess.run(m["init"])
        feed = {m["xp"]: m["x"], m["yp"]: m["y"]}
        _, w_before = sess.run([m["train"], m["w"]], feed)
        np.testing.assert_array_equal(w_before, m["w0"])
        w_after = sess.run(m["w"])
        assert not np.array_equal(w_after, m["w0"])
        np.testing.assert_array_equal(w_before, m["w0"])      # not changed by the run
        # the initial value is intact: re-initialising restores it
        sess.run(m["init"])
        np.testing.assert_array_equal(sess.run(m["w"]), m["w0"])
        text = sess.explain([m["train"], m["w"]], feed)
        lines = text.splitlines()
        # W is fetched: its update makes a new array; b's is in place
        assert not any(ln.endswith("in place into Variable") for ln in lines)
        assert any(ln.endswith("in place into Variable_1") for ln in lines)


def test_fetched_update_value_is_not_overwritten_later():
    g = fg.Graph()
    with g.as_default():
        v = fg.Variable(np.arange(4.0))
        new = v - 1.0
        op = v.assign(new)
        sess = fg.Session(g)
        sess.run(v.initializer)
        _, first = sess.run([op, new])
        keep = first.copy()
        for _ in range(3):
            sess.run(op)
        np.testing.assert_array_equal(first, keep)
        np.testing.assert_array_equal(sess.run(v), np.arange(4.0) - 4)


def test_an_error_leaves_every_variable_unchanged(rng):
    g, m = _model(rng)
    with g.as_default():
        sess = fg.Session(g)
        sess.run(m["init"])
        bad = {m["xp"]: m["x"], m["yp"]: np.full(16, 7)}       # labels out of range
        with pytest.raises(Exception):
            sess.run([m["train"], m["loss"]], bad)
        np.testing.assert_array_equal(sess.run(m["w"]), m["w0"])
        np.testing.assert_array_equal(sess.run(m["b"]), m["b0"])


def test_two_sessions_stay_independent(rng):
    g, m = _model(rng)
    with g.as_default():
        s1, s2 = fg.Session(g), fg.Session(g)
        s1.run(m["init"])
        s2.run(m["init"])
        feed = {m["xp"]: m["x"], m["yp"]: m["y"]}
        s1.run(m["train"], feed)
        np.testing.assert_array_equal(s2.run(m["w"]), m["w0"])


def test_an_update_reading_another_updated_variable_is_not_in_place():
    """``u <- u + v`` and ``v <- v * 2`` in one run: ``u`` must see ``v``'s old value."""
    g = fg.Graph()
    with g.as_default():
        u = fg.Variable(np.ones(3))
        v = fg.Variable(np.full(3, 2.0))
        step = fg.group(u.assign(u + v), v.assign(v * 2.0))
        sess = fg.Session(g)
        sess.run(fg.global_variables_initializer())
        sess.run(step)
        text = sess.explain(step)
        assert "in place into Variable\n" in text and "into Variable_1" not in text
        np.testing.assert_array_equal(sess.run(u), np.full(3, 3.0))
        np.testing.assert_array_equal(sess.run(v), np.full(3, 4.0))


def test_training_is_identical_fused_unfused_and_across_threads():
    """Small kernels use NumPy's own transcendental loops, so a training run is bit-identical
    with and without fusion, and with 1 or 2 threads."""
    prev = fg.get_num_threads()
    try:
        runs = []
        for disable, nt in [((), 1), (("fuse",), 1), ((), 2)]:
            fg.set_num_threads(nt)
            runs.append(_train(disable))
    finally:
        fg.set_num_threads(prev)
    (l0, (w0, b0), text), *others = runs
    assert "fused kernel" in text
    for losses, (w, b), _ in others:
        assert losses == l0
        np.testing.assert_array_equal(w, w0)
        np.testing.assert_array_equal(b, b0)


def _adam(disable, rng, steps=4):
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    w0 = rng.standard_normal((6, 3)).astype(np.float32)
    g = fg.Graph()
    with g.as_default():
        xp = fg.placeholder(np.float32, (None, 6))
        yp = fg.placeholder(np.int64, (None,))
        w = fg.Variable(w0)
        loss = fg.cross_entropy(fg.matmul(xp, w), yp)
        train = fg.train.AdamOptimizer(0.05).minimize(loss)
        sess = fg.Session(g, disable=disable)
        sess.run(fg.global_variables_initializer())
        feed = {xp: x, yp: y}
        losses = [sess.run([train, loss], feed)[1] for _ in range(steps)]
        return losses, sess.run(w), sess.explain([train, loss], feed)


def test_chained_updates_go_in_place_and_a_read_one_stays():
    """Adam: the variable's update reads the new ``m`` and ``v`` through their assigns -- all
    three are written in place, in order -- while the step counter's ``step + 1``, read by
    ``beta ** step``, is left as a new value."""
    l1, w1, text = _adam((), np.random.default_rng(5))
    l2, w2, plain = _adam(("inplace",), np.random.default_rng(5))
    assert l1 == l2
    np.testing.assert_array_equal(w1, w2)
    assert "in place into Adam/Variable/m" in text and "in place into Adam/Variable/v" in text
    assert "in place into Variable\n" in text
    assert "in place into Adam/step" not in text
    assert "in place" not in plain.split("[plan]")[1]


def test_an_update_whose_new_value_another_step_reads_is_not_in_place():
    """``s <- s + 1`` read by ``w <- w * s``'s factor ``2 ** s`` (not an update): ``s`` keeps a
    new array; ``w``'s update, whose only reader is its assign, still goes in place."""
    g = fg.Graph()
    with g.as_default():
        s = fg.Variable(np.zeros(()))
        w = fg.Variable(np.ones(3))
        s_new = s.assign(s + 1.0)
        factor = fg.power(2.0, s_new)
        step = fg.group(s_new, w.assign(w * factor))
        sess = fg.Session(g)
        sess.run(fg.global_variables_initializer())
        sess.run(step)
        sess.run(step)
        text = sess.explain(step)
        np.testing.assert_array_equal(sess.run(w), np.full(3, 8.0))    # 1 * 2 * 4
        assert sess.run(s) == 2.0
        assert "in place into Variable_1\n" in text and "in place into Variable\n" not in text


@pytest.mark.parametrize("codegen_max_steps", [0, 300], ids=["loop", "codegen"])
def test_a_scalar_variable_is_updated_by_value_not_in_place(codegen_max_steps, monkeypatch):
    # a scalar variable's value is a NumPy scalar: the update replaces it (Adam's beta powers)
    from fastgraph.static import executor
    monkeypatch.setattr(executor, "CODEGEN_MAX_STEPS", codegen_max_steps)
    g = fg.Graph()
    with g.as_default():
        p = fg.Variable(np.float64(2.0), name="p")
        lr = fg.placeholder(fg.float64, [])
        w = fg.Variable(np.ones(3))
        step = fg.group(p.assign(p * 0.5), w.assign(w - lr * p))
        with fg.Session() as sess:
            sess.run(fg.global_variables_initializer())
            for _ in range(3):
                sess.run(step, {lr: 0.1})
            got_p, got_w = sess.run([p, w])
    assert got_p == 0.25
    np.testing.assert_allclose(got_w, 1 - 0.1 * (2 + 1 + 0.5))
