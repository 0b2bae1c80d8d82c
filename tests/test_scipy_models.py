"""Models written as a NumPy/SciPy user writes them, run by ``scipy.optimize.minimize`` on
fastgraph's gradients and on HIPS autograd's: the same script, two sets of modules.

* a one-dimensional Gaussian mixture's negative log-likelihood (``logsumexp`` over components
  of ``norm.logpdf`` plus log-weights), in the mixture's logits, means and log-scales;
* a Bayesian linear regression's negative log posterior with ``multivariate_normal.logpdf``
  of the weights and ``t.logpdf`` (robust) residuals.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy.optimize import minimize

import fastgraph as fg

autograd = pytest.importorskip("autograd")


def _fastgraph_modules():
    import fastgraph.numpy as fnp
    import fastgraph.scipy.special as special
    import fastgraph.scipy.stats as stats
    return fnp, special, stats


def _autograd_modules():
    import autograd.numpy as anp
    import autograd.scipy.special as special
    import autograd.scipy.stats as stats
    return anp, special, stats


def gmm_nll(np_, special, stats, params, data, k=3):
    logits, means, log_scales = params[:k], params[k:2 * k], params[2 * k:]
    log_weights = logits - special.logsumexp(logits)
    per_component = stats.norm.logpdf(data[:, None], means, np_.exp(log_scales)) + log_weights
    # (a small penalty on the logits: they are otherwise defined up to a shift)
    return -np_.sum(special.logsumexp(per_component, axis=1)) + 0.01 * np_.sum(logits ** 2)


def regression_nll(np_, special, stats, w, X, y, prior_cov):
    prior = stats.multivariate_normal.logpdf(w, np.zeros(len(w)), prior_cov)
    return -(prior + np_.sum(stats.t.logpdf(y - np_.dot(X, w), 4.0, 0.0, 0.5)))


def _data():
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.normal(-2.0, 0.5, 40), rng.normal(0.5, 1.0, 40),
                           rng.normal(3.0, 0.3, 40)])
    X = rng.standard_normal((30, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.standard_t(4, 30)
    return data, X, y, np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 1.5]])


def _objectives(model, *args):
    ours = fg.value_and_grad(lambda p: model(*_fastgraph_modules(), p, *args))
    theirs = autograd.value_and_grad(lambda p: model(*_autograd_modules(), p, *args))
    return ours, theirs


def _start(model):
    if model is gmm_nll:
        return np.array([0.0, 0.1, -0.1, -1.5, 0.0, 2.0, 0.0, 0.0, 0.0])
    return np.zeros(3)


def _args(model):
    data, X, y, prior_cov = _data()
    return (data,) if model is gmm_nll else (X, y, prior_cov)


@pytest.mark.parametrize("model", [gmm_nll, regression_nll], ids=["gmm", "regression"])
def test_value_and_gradient_match_hips_autograd_at_several_points(model):
    ours, theirs = _objectives(model, *_args(model))
    rng = np.random.default_rng(1)
    x0 = _start(model)
    for _ in range(4):
        x = x0 + 0.5 * rng.standard_normal(x0.shape)
        v, g = ours(x)
        av, ag = theirs(x)
        np.testing.assert_allclose(float(v), av, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g), ag, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("model", [gmm_nll, regression_nll], ids=["gmm", "regression"])
def test_scipy_minimize_matches_hips_autograd(model):
    ours, theirs = _objectives(model, *_args(model))

    def wrap(f):
        def fun(x):
            v, g = f(x)
            return float(v), np.asarray(g, dtype=np.float64)
        return fun

    x0 = _start(model)
    a = minimize(wrap(ours), x0, jac=True, method="BFGS", options={"gtol": 1e-9})
    b = minimize(wrap(theirs), x0, jac=True, method="BFGS", options={"gtol": 1e-9})
    assert a.nit > 3 and abs(a.fun - b.fun) <= 1e-8 * max(1.0, abs(b.fun))
    # the two runs take BFGS's steps on gradients equal to ~1e-13, and stop within the flat
    # bottom a few 1e-8 apart (the mixture); the gradients at both end points agree to 1e-10
    np.testing.assert_allclose(a.x, b.x, rtol=1e-6, atol=1e-6)
    for x in (a.x, b.x):
        np.testing.assert_allclose(np.asarray(ours(x)[1]), theirs(x)[1], rtol=1e-8, atol=1e-10)


def test_ode_parameter_fit_matches_hips_autograd():
    """Fit a damped oscillator's stiffness and damping to noisy observations: the loss is
    ``odeint`` of a NumPy-style right-hand side, its gradient the adjoint method."""
    from autograd.builtins import tuple as atuple
    from autograd.scipy.integrate import odeint as aode

    import fastgraph.numpy as fnp
    from fastgraph.scipy.integrate import odeint
    import autograd.numpy as anp

    t = np.linspace(0.0, 3.0, 5)
    y0 = np.array([1.0, 0.0])
    tol = dict(rtol=1e-8, atol=1e-8)

    def rhs(np_, stack):
        return lambda y, s, th: stack([y[1], -th[0] * y[0] - th[1] * y[1]])

    truth = odeint(rhs(fnp, fnp.stack), y0, t, (np.array([2.0, 0.4]),), **tol)
    obs = truth + 0.01 * np.random.default_rng(2).standard_normal(truth.shape)

    def ours(th):
        return fnp.sum((odeint(rhs(fnp, fnp.stack), y0, t, (th,), **tol) - obs) ** 2)

    def theirs(th):
        return anp.sum((aode(rhs(anp, anp.array), y0, t, atuple((th,)), **tol) - obs) ** 2)

    vg_ours, vg_theirs = fg.value_and_grad(ours), autograd.value_and_grad(theirs)
    # (the same solver on the same right-hand-side values: the adjoints agree to rounding)
    for th in ([2.5, 0.8], [1.9, 0.35]):
        v, g = vg_ours(np.array(th))
        av, ag = vg_theirs(np.array(th))
        np.testing.assert_allclose(float(v), av, rtol=1e-10)
        np.testing.assert_allclose(np.asarray(g), ag, rtol=1e-8, atol=1e-10)

    def wrap(f):
        return lambda x: tuple(np.asarray(r, np.float64) for r in f(x))

    a = minimize(wrap(vg_ours), np.array([1.8, 0.3]), jac=True, method="BFGS")
    b = minimize(wrap(vg_theirs), np.array([1.8, 0.3]), jac=True, method="BFGS")
    assert abs(a.fun - b.fun) <= 1e-8 * max(1.0, b.fun)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.x, [2.0, 0.4], atol=0.05)


def test_odeint_gradient_is_first_order():
    from fastgraph.scipy.integrate import odeint
    k = fg.tensor(0.5, requires_grad=True)
    ys = odeint(lambda y, s, k: -k * y, np.array([1.0]), np.array([0.0, 1.0]), (k,))
    (g,) = fg.autograd.grad(fg.sum(ys), [k], create_graph=True)
    np.testing.assert_allclose(g.data, -np.exp(-0.5), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="first order"):
        fg.autograd.grad(g, [k])


def _decay(t, y, k):
    return -k * y + 0.3 * fnp_sin(t)


def fnp_sin(t):
    import fastgraph.numpy as fnp
    return fnp.sin(t)


def test_solve_ivp_without_t_eval_takes_scipys_steps():
    """The times are the solver's own, the states SciPy's, the gradient in y0 and k the
    adjoint's (against finite differences of SciPy's solves on those fixed times)."""
    from scipy.integrate import solve_ivp as sp_ivp
    from fastgraph.scipy.integrate import solve_ivp

    def np_decay(t, y, k):
        return -k * y + 0.3 * np.sin(t)

    y0, k = fg.tensor([1.0, -0.5], requires_grad=True), fg.tensor(0.8, requires_grad=True)
    tol = dict(rtol=1e-10, atol=1e-10)
    ours = solve_ivp(_decay, (0.0, 2.0), y0, args=(k,), **tol)
    ref = sp_ivp(np_decay, (0.0, 2.0), y0.data, args=(0.8,), **tol)
    np.testing.assert_array_equal(ours.t, ref.t)
    np.testing.assert_allclose(ours.y.data, ref.y, rtol=1e-9, atol=1e-12)
    assert ours.success and ours.status == 0
    gy, gk = fg.autograd.grad(fg.sum(ours.y[:, -1]), [y0, k])

    def end(y0v, kv):
        return sp_ivp(np_decay, (0.0, 2.0), y0v, args=(kv,), t_eval=ref.t,
                      rtol=1e-12, atol=1e-12).y[:, -1].sum()
    eps = 1e-6
    fd_k = (end(y0.data, 0.8 + eps) - end(y0.data, 0.8 - eps)) / (2 * eps)
    fd_y = [(end(y0.data + eps * e, 0.8) - end(y0.data - eps * e, 0.8)) / (2 * eps)
            for e in np.eye(2)]
    np.testing.assert_allclose(gk.data, fd_k, rtol=1e-6)
    np.testing.assert_allclose(gy.data, fd_y, rtol=1e-6)


def test_solve_ivp_refuses_what_it_cannot_differentiate():
    from fastgraph.scipy.integrate import solve_ivp
    y0 = fg.tensor([1.0], requires_grad=True)
    for option in ("events", "dense_output", "vectorized"):
        with pytest.raises(NotImplementedError, match=f"solve_ivp: {option}"):
            solve_ivp(_decay, (0.0, 1.0), y0, args=(1.0,), **{option: True})
    with pytest.raises(ValueError, match="method must be one of.*'Euler'"):
        solve_ivp(_decay, (0.0, 1.0), y0, method="Euler", args=(1.0,))
    g = fg.Graph()
    with g.as_default():
        p = fg.placeholder(fg.float64, (1,))
        with pytest.raises(TypeError, match="give t_eval"):
            solve_ivp(_decay, (0.0, 1.0), p, args=(1.0,))


def test_ode_gradients_in_threads_are_each_threads_own():
    """The adjoint solve is shared by an op's inputs through a per-thread memo: threads
    differentiating different problems at once each get their own gradient."""
    import threading
    from fastgraph.scipy.integrate import odeint
    t = np.linspace(0.0, 1.0, 4)

    def grad_of(k0):
        k = fg.tensor(k0, requires_grad=True)
        y0 = fg.tensor([1.0, 2.0], requires_grad=True)
        ys = odeint(lambda y, s, k: -k * y, y0, t, (k,), rtol=1e-10, atol=1e-10)
        gy, gk = fg.autograd.grad(fg.sum(ys), [y0, k])
        return np.concatenate([gy.data, [gk.data]])

    ks = [0.2 + 0.1 * i for i in range(6)]
    expected = [grad_of(k) for k in ks]
    results, barrier = {}, threading.Barrier(len(ks))

    def work(i):
        barrier.wait()
        for _ in range(3):
            results.setdefault(i, []).append(grad_of(ks[i]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(ks))]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)     # threads interleave inside each other's backward passes
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(switch)
    for i, want in enumerate(expected):
        for got in results[i]:
            np.testing.assert_array_equal(got, want)
