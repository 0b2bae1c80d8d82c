"""The two executors run the same plan to the same bits.

Plans of up to ``CODEGEN_MAX_STEPS`` steps run as generated code; larger ones run the loop
executor (a training graph over many variables). Forcing the loop on small plans checks it
against the generated code: in-place updates into variables and donated arguments, fused
kernels with several outputs (projections), scalar feeds, and what a run returns.
"""
import numpy as np
import pytest

import fastgraph as fg
from fastgraph.static import executor


@pytest.fixture(params=["codegen", "loop"])
def mode(request, monkeypatch):
    if request.param == "loop":
        monkeypatch.setattr(executor, "CODEGEN_MAX_STEPS", 0)
    return request.param


def _train(opt_factory, steps=3):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((16, 5))
    y = rng.integers(0, 3, 16)
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(fg.float64, (None, 5))
        labels = fg.placeholder(fg.int64, (None,))
        lr = fg.placeholder(fg.float64, ())
        W1 = fg.Variable(rng.standard_normal((5, 8)) * 0.5)
        b1 = fg.Variable(np.zeros(8))
        W2 = fg.Variable(rng.standard_normal((8, 3)) * 0.5)
        h = fg.relu(fg.matmul(x, W1) + b1)
        loss = fg.cross_entropy(fg.matmul(h, W2), labels)
        train = opt_factory(lr).minimize(loss)
        sess = fg.Session(g)
        sess.run(fg.global_variables_initializer())
        losses = []
        for _ in range(steps):
            _, l = sess.run([train, loss], {x: X, labels: y, lr: 0.1})
            losses.append(l)
        return losses, sess.run([W1, b1, W2]), sess


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adam"])
def test_training_steps(mode, opt, monkeypatch):
    factories = {"sgd": lambda lr: fg.train.GradientDescentOptimizer(lr),
                 "momentum": lambda lr: fg.train.MomentumOptimizer(lr, 0.9),
                 "adam": lambda lr: fg.train.AdamOptimizer(lr)}
    losses, params, sess = _train(factories[opt])
    plan = next(iter(next(iter(sess._node_plans.values())).values()))
    assert hasattr(plan, "source") == (mode == "codegen")
    with monkeypatch.context() as m:
        m.setattr(executor, "CODEGEN_MAX_STEPS", 300)
        want_losses, want_params, _ = _train(factories[opt])
    np.testing.assert_array_equal(losses, want_losses)
    for p, w in zip(params, want_params):
        np.testing.assert_array_equal(p, w)
    assert losses[-1] < losses[0]


def test_projections_of_a_multi_output_kernel(mode):
    def step(w, x):
        t = fg.tanh(w * x)
        return fg.sum(t), w - 0.5 * t * x, t * t     # one kernel, several outputs
    f = fg.function(step)
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal(300), rng.standard_normal(300)
    s, w_new, sq = f(w, x)
    t = np.tanh(w * x)
    np.testing.assert_allclose(s, t.sum(), rtol=1e-13)
    np.testing.assert_allclose(w_new, w - 0.5 * t * x, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(sq, t * t, rtol=1e-13, atol=1e-15)
    assert "fused" in f.explain(w, x)


def test_donated_update_in_place(mode):
    def step(w, g, lr):
        return fg.sum(w * g), w - lr * g
    f = fg.function(step, donate_argnums=(0,))
    rng = np.random.default_rng(2)
    w0, g = rng.standard_normal(500), rng.standard_normal(500)
    w = w0.copy()
    for _ in range(3):
        want = np.sum(w * g)                     # before the call, which overwrites w
        s, w_new = f(w, g, np.float64(0.1))
        np.testing.assert_allclose(s, want, rtol=1e-12)
        assert np.shares_memory(w_new, w)        # written into the donated array
        w = w_new
    np.testing.assert_array_equal(w, ((w0 - 0.1 * g) - 0.1 * g) - 0.1 * g)
