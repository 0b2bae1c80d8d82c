"""Several Python threads using one Session, one ``fg.function`` or one shared parameter.

A plan's runs write its own preallocated buffers and a backward walk keeps scratch in the
leaves it reaches, so concurrent calls take turns (``executor`` and ``autograd`` hold a lock);
these tests fail with wrong values when they do not.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

import fastgraph as fg

N_THREADS = 6


def _in_threads(work, n_threads=N_THREADS, repeats=20):
    results, errors = [[] for _ in range(n_threads)], []
    start = threading.Barrier(n_threads)

    def body(i):
        try:
            start.wait()
            for _ in range(repeats):
                results[i].append(work(i))
        except BaseException as e:     # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((64, 256)), rng.standard_normal((256, 128))


def test_one_session_from_many_threads():
    X, W0 = _data()
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(fg.float64, (None, 256), name="x")
        w = fg.Variable(W0)
        loss = fg.sum(fg.tanh(fg.matmul(x, w)) ** 2)
        (gw,) = fg.gradients(loss, [w])
        init = fg.global_variables_initializer()
    sess = fg.Session(graph=g)
    sess.run(init)
    want = sess.run([loss, gw], {x: X})
    _assert_every_result(_in_threads(lambda i: sess.run([loss, gw], {x: X})), *want)


def _loss_and_grad_step():
    return fg.function(fg.value_and_grad(lambda w, x: fg.sum(fg.tanh(fg.matmul(x, w)) ** 2)))


def _assert_every_result(results, want_loss, want_grad):
    for per_thread in results:
        for got_loss, got_grad in per_thread:
            assert got_loss == want_loss
            np.testing.assert_array_equal(got_grad, want_grad)


def test_one_function_from_many_threads():
    X, W = _data(1)
    step = _loss_and_grad_step()
    _assert_every_result(_in_threads(lambda i: step(W, X)), *step(W, X))


def test_clearing_a_function_while_other_threads_run_it():
    # a run in progress keeps the plan it started with; the next call traces again
    X, W = _data(3)
    step = _loss_and_grad_step()
    want = step(W, X)

    def work(i):
        if i == 0:
            step.clear_cache()
        elif i == 1:
            fg.clear_caches()
        return step(W, X)

    _assert_every_result(_in_threads(work), *want)
    assert step.trace_count > 2 and step.cache_size == 1


def test_eager_backward_into_a_shared_parameter():
    X, W0 = _data(2)
    xs = [X + i for i in range(N_THREADS)]
    w = fg.tensor(W0, requires_grad=True)
    want = np.zeros_like(W0)
    for xi in xs:
        w.grad = None
        fg.sum(fg.tanh(fg.matmul(fg.tensor(xi), w))).backward()
        want += w.grad.numpy()
    repeats = 5
    w.grad = None
    _in_threads(lambda i: fg.sum(fg.tanh(fg.matmul(fg.tensor(xs[i]), w))).backward(),
                repeats=repeats)
    # (the threads add their gradients in any order: equal up to rounding, where an unlocked
    # walk was off by tens of percent)
    np.testing.assert_allclose(w.grad.numpy(), repeats * want, rtol=1e-9,
                               atol=1e-9 * np.abs(want).max())
    grads = _in_threads(lambda i: fg.autograd.grad(
        fg.sum(fg.tanh(fg.matmul(fg.tensor(xs[i]), w))), [w])[0].numpy(), repeats=3)
    for i, per_thread in enumerate(grads):
        w.grad = None
        fg.sum(fg.tanh(fg.matmul(fg.tensor(xs[i]), w))).backward()
        for g in per_thread:
            np.testing.assert_array_equal(g, w.grad.numpy())


def _updates_on_a_fresh_session(n_threads, repeats):
    """Threads released together on a new Session, each updating two shared variables through
    its own fetch structure (so several threads compile a plan for the first time at once and
    different plans update the same variable)."""
    g = fg.Graph()
    with g.as_default():
        v = fg.Variable(np.zeros(4))
        c = fg.Variable(0.0)
        ones = np.ones(4)
        both = fg.group(v.assign_add(ones), c.assign_add(1.0))
        only_c = c.assign_add(1.0)
        init = fg.global_variables_initializer()
    sess = fg.Session(graph=g)
    sess.run(init)
    fetches = [both, [both], {"step": both}, only_c]
    _in_threads(lambda i: sess.run(fetches[i % len(fetches)]), n_threads=n_threads,
                repeats=repeats)
    n_c = n_threads * repeats
    n_v = sum(repeats for i in range(n_threads) if fetches[i % len(fetches)] is not only_c)
    return sess.run(c), sess.run(v), n_c, n_v


def test_no_update_is_lost_when_threads_start_on_fresh_sessions():
    # read-modify-write updates of one variable store take turns across all of a session's plans
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)     # switch threads as often as possible
    try:
        for _ in range(50):
            got_c, got_v, n_c, n_v = _updates_on_a_fresh_session(8, 200)
            assert got_c == n_c
            np.testing.assert_array_equal(got_v, np.full(4, float(n_v)))
    finally:
        sys.setswitchinterval(old)
