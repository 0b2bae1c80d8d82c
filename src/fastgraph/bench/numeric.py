"""Numeric scripts with gradients: the value-and-gradient call an optimiser makes, fastgraph
against HIPS autograd, JAX (jit and no-jit), PyTorch and a hand-written NumPy function.

Each workload is one objective ``f(w) -> (value, gradient)`` as ``scipy.optimize.minimize(f, w0,
jac=True)`` calls it: a float64 NumPy array in, a float and a float64 array out.  Candidates:

* ``numpy``: the value and the gradient written out by hand with NumPy (the reference);
* ``autograd``: ``autograd.value_and_grad`` of the objective written with ``autograd.numpy``;
* ``jax_jit`` / ``jax``: ``jax.value_and_grad`` with and without ``jax.jit`` (x64 enabled), the
  results converted to NumPy as SciPy needs them;
* ``torch``: the objective on a leaf tensor, ``backward()``, the gradient as NumPy;
* ``fastgraph``: eager ``fg.value_and_grad`` of the objective written with ``fastgraph.numpy``;
* ``fastgraph_function``: ``fg.function(fg.value_and_grad(objective))``, the traced, optimised
  and fused plan.

Workloads (each a function returning its candidates and targets, registered in ``WORKLOADS``):

* ``logistic``: L2-regularised logistic regression, ``X`` 1,000 x 20 float64, labels +-1:
  ``mean(logaddexp(0, -y * (X @ w))) + 0.005 * (w @ w)``.  Targets: eager ``fastgraph`` at most
  0.3x ``autograd``; ``fastgraph_function`` at most 1.0x ``numpy`` and at most 0.5x ``jax_jit``.
* ``gp``: a Gaussian process's negative log marginal likelihood and its gradient with respect
  to the RBF kernel's three log hyper-parameters (signal variance, length scale, noise), 500
  points in 3-D (their squared distances given), float64: ``K = s2 exp(-D2 / (2 l^2)) + sn2 I``,
  ``L = cholesky(K)``, ``alpha = solve_triangular(L, y, lower=True)``, ``alpha @ alpha / 2 +
  sum(log(diag(L))) + n log(2 pi) / 2``.  Targets: eager ``fastgraph`` at most 0.3x
  ``autograd``; eager or ``fastgraph_function`` at most 1.0x ``numpy`` and at most 0.8x
  ``jax_jit``.  The factorisation dominates: ``numpy`` by hand forms ``K^-1`` with
  ``cho_solve`` (two triangular solves with 500 right-hand sides), the autodiff peers run
  Cholesky's reverse mode as triangular solves with 500 right-hand sides; fastgraph's reverse
  mode is blocked (products and solves on halves of the factor, recursively: about 0.8 n^3
  flops against the by-hand 2 n^3).

* ``fft``: ``sum(|ifft2(fft2(x) * k)|^2)`` of a complex 64 x 64 image ``x`` with a fixed
  complex filter ``k``, and its gradient with respect to ``x`` (complex128, HIPS autograd's
  convention: PyTorch's gradient is conjugated to compare).  Targets: eager ``fastgraph`` and
  ``fastgraph_function`` at most 0.25x ``autograd``; ``fastgraph_function`` at most 1.0x
  ``jax_jit``.

Method: ``fastgraph.bench.timing.compare`` (candidates interleaved round by round in a shuffled
order, medians with min/max); every candidate's value and gradient are first checked against the
hand-written NumPy ones.  Per-call times in microseconds.

Run: ``python -m fastgraph bench --only numeric``, or on its own
``python -m fastgraph.bench.numeric [--quick] [--threads N] [--json out.json]``.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from fastgraph.bench.timing import compare, peers, print_results, script_main, target_note


# ---- workload 1: L2-regularised logistic regression ------------------------------------------------
N_SAMPLES, N_FEATURES, L2 = 1000, 20, 0.005


def _logistic_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N_SAMPLES, N_FEATURES))
    w_true = rng.standard_normal(N_FEATURES)
    y = np.where(X @ w_true + 0.5 * rng.standard_normal(N_SAMPLES) > 0, 1.0, -1.0)
    w0 = 0.1 * rng.standard_normal(N_FEATURES)
    return X, y, w0


def _logistic_loss(np_, X, y):
    """The objective, written once for every NumPy-like namespace."""
    def loss(w):
        return np_.mean(np_.logaddexp(0.0, -y * (X @ w))) + L2 * (w @ w)
    return loss


def _logistic_numpy(X, y):
    from scipy.special import expit
    n = X.shape[0]

    def value_and_grad(w):
        m = -y * (X @ w)
        value = np.mean(np.logaddexp(0.0, m)) + L2 * (w @ w)
        grad = X.T @ (-y * expit(m)) / n + 2 * L2 * w
        return value, grad
    return value_and_grad


def _logistic_autograd(X, y):
    import autograd
    import autograd.numpy as anp
    return autograd.value_and_grad(_logistic_loss(anp, X, y))


def _jax_call(loss, jit: bool):
    """The optimiser's call on JAX's ``value_and_grad(loss)`` (compiled with ``jax.jit`` or
    not): NumPy values out."""
    import jax
    vg = jax.value_and_grad(loss)
    f = jax.jit(vg) if jit else vg

    def call(x):
        v, g = f(x)
        return float(v), np.asarray(g)
    return call


def _jax_numpy(jit: bool):
    def build(X, y):
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        return _jax_call(_logistic_loss(jnp, jnp.asarray(X), jnp.asarray(y)), jit)
    return build


def _logistic_torch(X, y):
    import torch
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    zero = torch.zeros((), dtype=torch.float64)

    def value_and_grad(w):
        wt = torch.from_numpy(w).requires_grad_(True)
        loss = torch.mean(torch.logaddexp(zero, -yt * (Xt @ wt))) + L2 * (wt @ wt)
        loss.backward()
        return loss.item(), wt.grad.numpy()
    return value_and_grad


#: the peers' value-and-gradient functions: candidate -> (peer library, builder(X, y))
LOGISTIC_PEERS = {"autograd": ("autograd", _logistic_autograd),
                  "jax_jit": ("jax", _jax_numpy(jit=True)), "jax": ("jax", _jax_numpy(jit=False)),
                  "torch": ("torch", _logistic_torch)}
LOGISTIC_TARGETS = {("fastgraph", "autograd"): 0.3, ("fastgraph_function", "numpy"): 1.0,
                    ("fastgraph_function", "jax_jit"): 0.5}


def logistic(available) -> tuple[str, dict[str, Callable], Callable, dict]:
    """``(title, candidates, reference, targets)`` of the logistic-regression workload: each
    candidate a call of no arguments; ``targets`` maps ``(fastgraph variant, peer)`` to the
    ratio to stay at or under."""
    import fastgraph as fg
    import fastgraph.numpy as fnp
    X, y, w0 = _logistic_data()
    reference = _logistic_numpy(X, y)
    fg_vg = fg.value_and_grad(_logistic_loss(fnp, X, y))
    fns = {"numpy": reference, "fastgraph": fg_vg, "fastgraph_function": fg.function(fg_vg)}
    for name, (lib, build) in LOGISTIC_PEERS.items():
        if lib in available:
            fns[name] = build(X, y)
    calls = {k: (lambda f=f: f(w0)) for k, f in fns.items()}
    return ("logistic regression value and gradient (1000 x 20, float64)", calls,
            lambda: reference(w0), LOGISTIC_TARGETS)


# ---- workload 2: Gaussian-process negative log marginal likelihood ---------------------------------
GP_POINTS, GP_DIMS = 500, 3
GP_THETA0 = np.log([1.3, 0.7, 0.05])   # log signal variance, log length scale, log noise variance


def _gp_data():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2.0, 2.0, (GP_POINTS, GP_DIMS))
    y = np.sin(X @ np.array([1.0, -0.5, 0.3])) + 0.1 * rng.standard_normal(GP_POINTS)
    sq = np.sum(X * X, axis=1)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (X @ X.T), 0.0)   # squared distances
    return D2, y


def _gp_loss(np_, solve_triangular, D2, y):
    """The objective (RBF kernel, ``cholesky``, ``solve_triangular``), written once for every
    NumPy-like namespace: ``theta`` = log signal variance, log length scale, log noise."""
    n = y.shape[0]
    eye = np.eye(n)
    const = 0.5 * n * np.log(2.0 * np.pi)

    def nll(theta):
        s2, inv_l2, sn2 = np_.exp(theta[0]), np_.exp(-2.0 * theta[1]), np_.exp(theta[2])
        K = s2 * np_.exp(-0.5 * inv_l2 * D2) + sn2 * eye
        L = np_.linalg.cholesky(K)
        alpha = solve_triangular(L, y, lower=True)
        return 0.5 * (alpha @ alpha) + np_.sum(np_.log(np_.diag(L))) + const
    return nll


def _gp_numpy(D2, y):
    """Value and gradient by hand (Rasmussen and Williams, eq. 5.9): the factor, ``alpha =
    K^-1 y`` and ``K^-1`` from it by ``cho_solve``, then ``0.5 tr((K^-1 - alpha alpha^T)
    dK/dtheta)``."""
    from scipy.linalg import cho_solve, solve_triangular
    n = y.shape[0]
    eye = np.eye(n)
    const = 0.5 * n * np.log(2.0 * np.pi)

    def value_and_grad(theta):
        s2, inv_l2, sn2 = np.exp(theta[0]), np.exp(-2.0 * theta[1]), np.exp(theta[2])
        Ks = s2 * np.exp(-0.5 * inv_l2 * D2)
        L = np.linalg.cholesky(Ks + sn2 * eye)
        z = solve_triangular(L, y, lower=True)
        value = 0.5 * (z @ z) + np.sum(np.log(np.diagonal(L))) + const
        alpha = solve_triangular(L, z, lower=True, trans="T")
        W = cho_solve((L, True), eye)
        W -= np.outer(alpha, alpha)
        grad = 0.5 * np.array([np.sum(W * Ks), inv_l2 * np.sum(W * Ks * D2),
                               sn2 * np.trace(W)])
        return value, grad
    return value_and_grad


def _gp_autograd(D2, y):
    import autograd
    import autograd.numpy as anp
    import autograd.scipy.linalg as asla
    return autograd.value_and_grad(_gp_loss(anp, asla.solve_triangular, D2, y))


def _gp_jax(jit: bool):
    def build(D2, y):
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg as jsla
        jax.config.update("jax_enable_x64", True)
        return _jax_call(_gp_loss(jnp, jsla.solve_triangular, jnp.asarray(D2), jnp.asarray(y)),
                         jit)
    return build


def _gp_torch(D2, y):
    import torch
    D2t, yt = torch.from_numpy(D2), torch.from_numpy(y)
    n = y.shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    const = 0.5 * n * np.log(2.0 * np.pi)

    def value_and_grad(theta):
        t = torch.from_numpy(theta).requires_grad_(True)
        K = torch.exp(t[0]) * torch.exp(-0.5 * torch.exp(-2.0 * t[1]) * D2t) + \
            torch.exp(t[2]) * eye
        L = torch.linalg.cholesky(K)
        alpha = torch.linalg.solve_triangular(L, yt[:, None], upper=False)[:, 0]
        loss = 0.5 * (alpha @ alpha) + torch.sum(torch.log(torch.diagonal(L))) + const
        loss.backward()
        return loss.item(), t.grad.numpy()
    return value_and_grad


GP_PEERS = {"autograd": ("autograd", _gp_autograd), "jax_jit": ("jax", _gp_jax(jit=True)),
            "jax": ("jax", _gp_jax(jit=False)), "torch": ("torch", _gp_torch)}
GP_TARGETS = {("fastgraph", "autograd"): 0.3, ("fastgraph", "numpy"): 1.0,
              ("fastgraph", "jax_jit"): 0.8, ("fastgraph_function", "numpy"): 1.0,
              ("fastgraph_function", "jax_jit"): 0.8}


def gaussian_process(available) -> tuple[str, dict[str, Callable], Callable, dict]:
    """The Gaussian-process workload: the negative log marginal likelihood of ``GP_POINTS``
    points and its gradient with respect to the RBF kernel's three log hyper-parameters
    (``theta`` = log signal variance, log length scale, log noise variance), float64.  The
    factorisation dominates: the Cholesky factor (n^3 / 3), then in the gradient either
    ``K^-1`` (by hand: two triangular solves with n right-hand sides, 2 n^3) or Cholesky's
    reverse mode (fastgraph: blocked, ~0.8 n^3; autograd, JAX, PyTorch: triangular solves
    with n right-hand sides)."""
    import fastgraph as fg
    import fastgraph.numpy as fnp
    import fastgraph.scipy.linalg as fsla
    D2, y = _gp_data()
    reference = _gp_numpy(D2, y)
    fg_vg = fg.value_and_grad(_gp_loss(fnp, fsla.solve_triangular, D2, y))
    fns = {"numpy": reference, "fastgraph": fg_vg, "fastgraph_function": fg.function(fg_vg)}
    for name, (lib, build) in GP_PEERS.items():
        if lib in available:
            fns[name] = build(D2, y)
    calls = {k: (lambda f=f: f(GP_THETA0)) for k, f in fns.items()}
    return (f"Gaussian-process NLL value and gradient (n = {GP_POINTS}, RBF, float64)", calls,
            lambda: reference(GP_THETA0), GP_TARGETS)


# ---- workload 3: an FFT-based objective of a complex image ------------------------------------------
FFT_SIZE = 64


def _fft_data():
    """A complex 64 x 64 image and a complex filter (a Gaussian low-pass with a phase ramp)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((FFT_SIZE, FFT_SIZE)) + 1j * rng.standard_normal((FFT_SIZE, FFT_SIZE))
    f = np.fft.fftfreq(FFT_SIZE)
    k = np.exp(-(f[:, None] ** 2 + f[None, :] ** 2) / 0.02) * \
        np.exp(2j * np.pi * (f[:, None] + 0.5 * f[None, :]))
    return x, k


def _fft_loss(np_, k):
    """``sum(|ifft2(fft2(x) * k)|^2)``, written once for every NumPy-like namespace."""
    def loss(x):
        return np_.sum(np_.abs(np_.fft.ifft2(np_.fft.fft2(x) * k)) ** 2)
    return loss


def _fft_numpy(k):
    """Value and gradient by hand, in HIPS autograd's convention (``df/dRe - i df/dIm``): the
    map is linear, ``y = A x`` with ``A^T = fft2 . k . ifft2``, and ``d|y|^2 = 2 conj(y)``."""
    def value_and_grad(x):
        y = np.fft.ifft2(np.fft.fft2(x) * k)
        value = np.sum(y.real * y.real + y.imag * y.imag)
        return value, np.fft.fft2(k * np.fft.ifft2(2.0 * np.conj(y)))
    return value_and_grad


def _fft_autograd(k):
    import autograd
    import autograd.numpy as anp
    return autograd.value_and_grad(_fft_loss(anp, k))


def _fft_jax(jit: bool):
    def build(k):
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        return _jax_call(_fft_loss(jnp, jnp.asarray(k)), jit)   # JAX's convention is autograd's
    return build


def _fft_torch(k):
    import torch
    kt = torch.from_numpy(k)

    def value_and_grad(x):
        xt = torch.from_numpy(x).requires_grad_(True)
        loss = torch.sum(torch.abs(torch.fft.ifft2(torch.fft.fft2(xt) * kt)) ** 2)
        loss.backward()
        # PyTorch's gradient is the conjugate of autograd's (df/dRe + i df/dIm)
        return loss.item(), np.conj(xt.grad.numpy())
    return value_and_grad


FFT_PEERS = {"autograd": ("autograd", _fft_autograd), "jax_jit": ("jax", _fft_jax(jit=True)),
             "jax": ("jax", _fft_jax(jit=False)), "torch": ("torch", _fft_torch)}
FFT_TARGETS = {("fastgraph", "autograd"): 0.25, ("fastgraph_function", "autograd"): 0.25,
               ("fastgraph_function", "jax_jit"): 1.0}


def fft_objective(available) -> tuple[str, dict[str, Callable], Callable, dict]:
    """The FFT workload: ``sum(|ifft2(fft2(x) * k)|^2)`` of a complex 64 x 64 ``x`` and its
    gradient with respect to ``x`` (complex128, HIPS autograd's convention): four 2-D FFTs per
    call (two forward, two in the gradient) and a few elementwise passes."""
    import fastgraph as fg
    import fastgraph.numpy as fnp
    x, k = _fft_data()
    reference = _fft_numpy(k)
    fg_vg = fg.value_and_grad(_fft_loss(fnp, k))
    fns = {"numpy": reference, "fastgraph": fg_vg, "fastgraph_function": fg.function(fg_vg)}
    for name, (lib, build) in FFT_PEERS.items():
        if lib in available:
            fns[name] = build(k)
    calls = {name: (lambda f=f: f(x)) for name, f in fns.items()}
    return (f"FFT objective value and gradient ({FFT_SIZE} x {FFT_SIZE}, complex128)", calls,
            lambda: reference(x), FFT_TARGETS)


#: workload name -> function(available peers) -> (title, candidates, reference call, targets)
WORKLOADS: dict[str, Callable] = {"logistic": logistic, "gp": gaussian_process,
                                  "fft": fft_objective}
#: calls per round and rounds (quick, full) of each workload: a GP call costs milliseconds
SIZES = {"logistic": ((5, 20), (15, 200)), "gp": ((3, 3), (9, 10)), "fft": ((5, 10), (20, 30))}


def _check(title: str, calls: dict[str, Callable], reference: Callable) -> None:
    v_ref, g_ref = reference()
    for name, call in calls.items():
        v, g = call()
        if not np.isclose(float(v), float(v_ref), rtol=1e-10, atol=1e-12) or \
                not np.allclose(np.asarray(g), g_ref, rtol=1e-9, atol=1e-12):
            raise AssertionError(f"{title}: {name} computes {v}, {g} instead of {v_ref}, {g_ref}")


def run(quick: bool = False, verbose: bool = True) -> dict[str, Any]:
    available, missing = peers("autograd", "jax", "torch")
    results, headline = [], []
    for key, make in WORKLOADS.items():
        title, calls, reference, targets = make(available)
        _check(title, calls, reference)
        rounds, number = SIZES[key][0 if quick else 1]
        res = compare(title, calls, rounds=rounds, number=number, warmup=3,
                      reference="fastgraph", meta={"workload": key})
        results.append({**res.to_dict(), "targets": {f"{a}/{b}": t
                                                     for (a, b), t in targets.items()}})
        for (a, b), target in targets.items():
            if a in res.stats and b in res.stats:
                sa, sb = res.stats[a], res.stats[b]
                headline.append({"workload": "numeric", "case": f"numeric: {key}",
                                 "fastgraph": a, "peer": b, "fastgraph_s": sa.median,
                                 "peer_s": sb.median, "ratio": sa.median / sb.median,
                                 "fastgraph_min_s": sa.min, "peer_min_s": sb.min,
                                 "peer_max_s": sb.max, "ratio_min": sa.min / sb.min,
                                 "ratio_paired": res.paired_ratio(a, b), "target": target})
        if verbose:
            print_results([res])
            for name, s in sorted(res.stats.items(), key=lambda kv: kv[1].median):
                print(f"  {name:<20}{1e6 * s.median:10.1f} us/call")
            for row in headline:
                if row["case"] == f"numeric: {key}":
                    note = target_note(row["ratio"], row["target"], quick)
                    print(f"  {row['fastgraph']}/{row['peer']} = {row['ratio']:.3f} ({note}; "
                          f"median of per-round ratios {row['ratio_paired']:.3f})")
    if verbose and missing:
        print(f"skipped (not installed): {', '.join(missing)}")
    return {"benchmark": "numeric", "quick": quick, "results": results, "headline": headline,
            "missing": missing,
            "per_call_us": {r["meta"]["workload"]: {k: 1e6 * c["median_s"]
                                                    for k, c in r["candidates"].items()}
                            for r in results}}


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
