"""An Elman RNN's loss and gradients: ``fg.scan`` in a Session and in ``fg.function``, eager fastgraph, against NumPy BPTT, PyTorch, JAX ``lax.scan``, HIPS autograd and TF1's ``tf.scan``.

What it measures: milliseconds per call of the loss ``mean(h_T ** 2)`` of a float32 Elman RNN
``h_t = tanh(x_t @ Wx + h_{t-1} @ Wh + b)`` (T = 100 steps, batch 32, input 32, hidden 128,
``h_0 = 0``) and its gradients in the three weights, from the same seeded weights and data:

* ``fastgraph_session``: ``fg.scan`` in a graph, ``fg.gradients``, one ``Session.run`` of the
  loss and the gradients per call (the weights and the inputs fed);
* ``fastgraph_function``: ``fg.function(fg.value_and_grad(loss, argnums=(0, 1, 2)))``, the same
  ``fg.scan``;
* ``fastgraph_eager``: eager Tensors, a Python loop on the tape, ``backward()``;
* ``numpy``: a hand-written forward and backpropagation through time (the hidden states saved,
  three products per step back);
* ``torch``: PyTorch eager, a Python loop, ``backward()``;
* ``jax_jit``: ``jax.jit(jax.value_and_grad(loss))`` with ``lax.scan``;
* ``autograd``: HIPS autograd, a Python loop (it has no scan);
* ``tf1_scan``: TensorFlow 1's graph: ``tf.scan``, ``tf.gradients``, ``Session.run``.

Targets: Session and ``fg.function`` scans <= 1.0x NumPy's BPTT and <= 1.0x JAX jit; eager
<= 0.5x PyTorch eager; ``fg.function``'s first call (trace, compile, run) <= 0.1x JAX's (jit
tracing and XLA compilation included).  It also times tracing and compiling with the loop
unrolled by Python instead (T = 100, 1,000, 10,000: graphs of ~1,700 to ~170,000 nodes), whose
time per step should stay flat (compile time linear in T); the CPU time per step is reported
beside the wall-clock time, as it does not grow with the machine's load.

Method: ``fastgraph.bench.timing.compare``, rounds of single calls per candidate in a shuffled
order each round, after a warm-up call; the losses and gradients are checked against NumPy's
first.  First calls are each timed once per fresh function (best of three).

Run: ``python -m fastgraph bench --only rnn``, or on its own
``python -m fastgraph.bench.rnn [--threads N] [--quick] [--json out.json]``.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable

import numpy as np

from fastgraph.bench.timing import compare, peers, print_results, script_main, target_note

T, BATCH, INPUT, HIDDEN = 100, 32, 32, 128
ROUNDS = 15
UNROLLED = (100, 1000, 10000)
TARGETS = {("fastgraph_session", "numpy"): 1.0, ("fastgraph_function", "numpy"): 1.0,
           ("fastgraph_session", "jax_jit"): 1.0, ("fastgraph_function", "jax_jit"): 1.0,
           ("fastgraph_eager", "torch"): 0.5}
FIRST_CALL_TARGET = 0.1


def make_data(steps: int = T, seed: int = 0):
    """Inputs (steps, batch, input) and weights (Glorot-like scales), float32, seeded."""
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((steps, BATCH, INPUT)).astype(np.float32)
    Wx = (rng.standard_normal((INPUT, HIDDEN)) / np.sqrt(INPUT)).astype(np.float32)
    Wh = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
    b = (rng.standard_normal(HIDDEN) * 0.1).astype(np.float32)
    return xs, (Wx, Wh, b)


# ---- NumPy: forward and backpropagation through time by hand -----------------------------------
def numpy_fn(xs, weights):
    Wx, Wh, b = weights

    def call():
        n = len(xs)
        hs = np.empty((n + 1, BATCH, HIDDEN), np.float32)
        hs[0] = 0.0
        for t in range(n):
            hs[t + 1] = np.tanh(xs[t] @ Wx + hs[t] @ Wh + b)
        h = hs[n]
        loss = np.mean(h ** 2)
        dh = (2.0 / h.size) * h
        gWx, gWh, gb = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
        for t in range(n - 1, -1, -1):
            dz = dh * (1.0 - hs[t + 1] ** 2)
            gWx += xs[t].T @ dz
            gWh += hs[t].T @ dz
            gb += dz.sum(axis=0)
            dh = dz @ Wh.T
        return loss, [gWx, gWh, gb]
    return call


# ---- fastgraph ------------------------------------------------------------------------------------
def _fg_loss(fg):
    def loss(Wx, Wh, b, xs):
        def step(h, x):
            return fg.tanh(x @ Wx + h @ Wh + b), None
        h, _ = fg.scan(step, np.zeros((BATCH, HIDDEN), np.float32), xs)
        return fg.mean(h ** 2)
    return loss


def fastgraph_session_fn(xs, weights):
    import fastgraph as fg

    g = fg.Graph()
    with g.as_default():
        ws = [fg.placeholder(fg.float32, w.shape) for w in weights]
        X = fg.placeholder(fg.float32, (None, BATCH, INPUT))
        loss = _fg_loss(fg)(*ws, X)
        fetches = [loss, fg.gradients(loss, ws)]
    sess = fg.Session(g)
    feed = {X: xs, **dict(zip(ws, weights))}
    return lambda: sess.run(fetches, feed)


def fastgraph_function_fn(xs, weights):
    import fastgraph as fg

    f = fg.function(fg.value_and_grad(_fg_loss(fg), argnums=(0, 1, 2)))
    return lambda: f(*weights, xs)


def fastgraph_eager_fn(xs, weights):
    import fastgraph as fg

    def call():
        ws = [fg.tensor(w, requires_grad=True) for w in weights]
        Wx, Wh, b = ws
        h = fg.tensor(np.zeros((BATCH, HIDDEN), np.float32))
        for x in xs:
            h = fg.tanh(x @ Wx + h @ Wh + b)
        loss = fg.mean(h ** 2)
        loss.backward()
        return float(loss.item()), [w.grad._ndarray for w in ws]
    return call


# ---- peers ----------------------------------------------------------------------------------------
def torch_fn(xs, weights):
    import torch

    X = torch.from_numpy(xs)

    def call():
        ws = [torch.tensor(w, requires_grad=True) for w in weights]
        Wx, Wh, b = ws
        h = torch.zeros((BATCH, HIDDEN))
        for x in X:
            h = torch.tanh(x @ Wx + h @ Wh + b)
        loss = (h ** 2).mean()
        loss.backward()
        return loss.item(), [w.grad.numpy() for w in ws]
    return call


def _jax_value_and_grad():
    import jax
    import jax.numpy as jnp

    def loss(Wx, Wh, b, xs):
        def step(h, x):
            return jnp.tanh(x @ Wx + h @ Wh + b), None
        h, _ = jax.lax.scan(step, jnp.zeros((BATCH, HIDDEN), jnp.float32), xs)
        return jnp.mean(h ** 2)
    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))


def jax_fn(xs, weights):
    import jax
    import jax.numpy as jnp

    f = _jax_value_and_grad()
    args = [jnp.asarray(w) for w in weights] + [jnp.asarray(xs)]

    def call():
        v, gs = f(*args)
        jax.block_until_ready(gs)
        return v, gs
    return call


def autograd_fn(xs, weights):
    import autograd
    import autograd.numpy as anp

    def loss(Wx, Wh, b):
        h = anp.zeros((BATCH, HIDDEN), np.float32)
        for x in xs:
            h = anp.tanh(anp.dot(x, Wx) + anp.dot(h, Wh) + b)
        return anp.mean(h ** 2)
    vg = autograd.value_and_grad(lambda ws: loss(*ws))
    return lambda: vg(list(weights))


def tf1_fn(xs, weights):
    import tensorflow as tf

    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        ws = [v1.placeholder(tf.float32, w.shape) for w in weights]
        X = v1.placeholder(tf.float32, (None, BATCH, INPUT))
        Wx, Wh, b = ws
        hs = tf.scan(lambda h, x: tf.tanh(tf.matmul(x, Wx) + tf.matmul(h, Wh) + b), X,
                     initializer=tf.zeros((BATCH, HIDDEN), tf.float32))
        loss = tf.reduce_mean(hs[-1] ** 2)
        fetches = [loss, tf.gradients(loss, ws)]
    sess = v1.Session(graph=g)
    feed = {X: xs, **dict(zip(ws, weights))}
    return lambda: sess.run(fetches, feed)


def candidates(xs, weights) -> tuple[dict[str, Callable], dict[str, str]]:
    calls = {"numpy": numpy_fn(xs, weights),
             "fastgraph_session": fastgraph_session_fn(xs, weights),
             "fastgraph_function": fastgraph_function_fn(xs, weights),
             "fastgraph_eager": fastgraph_eager_fn(xs, weights)}
    skipped: dict[str, str] = {}
    available, _ = peers("torch", "jax", "autograd", "tensorflow")
    for name, lib, make in (("torch", "torch", torch_fn), ("jax_jit", "jax", jax_fn),
                            ("autograd", "autograd", autograd_fn),
                            ("tf1_scan", "tensorflow", tf1_fn)):
        if lib not in available:
            skipped[name] = "not installed"
            continue
        try:
            calls[name] = make(xs, weights)
        except Exception as exc:    # a peer that does not build here is reported, not fatal
            skipped[name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return calls, skipped


def _check(calls, skipped) -> float:
    """Every candidate's loss and gradients against NumPy's (same weights, same data)."""
    want_v, want_g = calls["numpy"]()
    for name in list(calls):
        try:
            v, gs = calls[name]()
        except Exception as exc:
            if name.startswith("fastgraph"):
                raise
            skipped[name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            del calls[name]
            continue
        ok = np.isclose(float(v), want_v, rtol=1e-4) and all(
            np.allclose(np.asarray(a), e, rtol=2e-3, atol=1e-6) for a, e in zip(gs, want_g))
        if not ok:
            raise AssertionError(f"bench_rnn: {name} computes another loss or gradient than "
                                 f"NumPy's BPTT ({float(v)} vs {want_v})")
    return float(want_v)


# ---- first calls ----------------------------------------------------------------------------------
def _first_call(make: Callable[[], Callable], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        make()()
        best = min(best, time.perf_counter() - t0)
    return best


def first_calls(xs, weights, available) -> dict[str, float]:
    import fastgraph as fg

    out = {"fastgraph_function": _first_call(
        lambda: (lambda f: lambda: f(*weights, xs))(
            fg.function(fg.value_and_grad(_fg_loss(fg), argnums=(0, 1, 2)))))}
    if "jax" in available:
        import jax
        import jax.numpy as jnp
        args = [jnp.asarray(w) for w in weights] + [jnp.asarray(xs)]
        out["jax_jit"] = _first_call(
            lambda: (lambda f: lambda: jax.block_until_ready(f(*args)))(_jax_value_and_grad()))
    return out


def unrolled_compile_times(sizes) -> tuple[dict[int, float], dict[int, float]]:
    """``fg.function``'s trace and compile time (without the run) of the loss and gradients
    with the loop unrolled by Python, per length: wall-clock seconds, and the process's CPU
    seconds (what a loaded machine's other processes do not inflate)."""
    import gc

    import fastgraph as fg

    def loss(Wx, Wh, b, xs):
        h = np.zeros((BATCH, HIDDEN), np.float32)
        for t in range(xs.shape[0]):
            h = fg.tanh(xs[t] @ Wx + h @ Wh + b)
        return fg.mean(h ** 2)

    wall, cpu = {}, {}
    for n in sizes:
        xs, weights = make_data(n)
        f = fg.function(fg.value_and_grad(loss, argnums=(0, 1, 2)))
        gc.collect()        # the previous length's graph is garbage: not this length's cost
        t0, c0 = time.perf_counter(), time.process_time()
        f.trace(list(weights) + [xs], {})       # trace and compile, without running
        wall[n], cpu[n] = time.perf_counter() - t0, time.process_time() - c0
        del f
    return wall, cpu


# ---- run ------------------------------------------------------------------------------------------
def run(quick: bool = False, verbose: bool = True, threads: int | None = None) -> dict[str, Any]:
    """``quick``: 3 rounds, unrolled lengths 100 and 1,000 only."""
    import fastgraph as fg

    xs, weights = make_data()
    nthreads = threads or fg.get_num_threads()
    calls, skipped = candidates(xs, weights)
    if "torch" in calls:
        import torch
        torch.set_num_threads(nthreads)
    loss = _check(calls, skipped)
    res = compare(f"Elman RNN T={T} batch {BATCH} {INPUT}->{HIDDEN} float32, loss + 3 gradients",
                  calls, rounds=3 if quick else ROUNDS, warmup=1, number=1,
                  meta={"threads": nthreads, "loss": loss})
    ms = {k: 1e3 * res.stats[k].median for k in calls}
    available, _ = peers("jax")
    first = first_calls(xs, weights, available)
    unrolled, unrolled_cpu = unrolled_compile_times(UNROLLED[:2] if quick else UNROLLED)
    headline = []
    for (a, b), target in TARGETS.items():
        if a in ms and b in ms:
            fa, fb = res.stats[a].min, res.stats[b].min
            headline.append({"case": "Elman RNN loss + gradients", "fastgraph": a, "peer": b,
                             "fastgraph_s": ms[a] / 1e3, "peer_s": ms[b] / 1e3,
                             "ratio": ms[a] / ms[b], "fastgraph_min_s": fa, "peer_min_s": fb,
                             "ratio_min": fa / fb, "ratio_paired": res.paired_ratio(a, b),
                             "target": target})
    for peer in ("torch", "autograd", "tf1_scan"):
        for a in ("fastgraph_session", "fastgraph_function"):
            if a in ms and peer in ms:
                headline.append({"case": "Elman RNN loss + gradients", "fastgraph": a,
                                 "peer": peer, "fastgraph_s": ms[a] / 1e3,
                                 "peer_s": ms[peer] / 1e3, "ratio": ms[a] / ms[peer],
                                 "target": None})
    if "jax_jit" in first:
        headline.append({"case": "RNN first call (trace+compile+run)",
                         "fastgraph": "fastgraph_function", "peer": "jax_jit",
                         "fastgraph_s": first["fastgraph_function"], "peer_s": first["jax_jit"],
                         "ratio": first["fastgraph_function"] / first["jax_jit"],
                         "target": FIRST_CALL_TARGET})
    per_step = {n: t / n for n, t in unrolled.items()}
    cpu_per_step = {n: t / n for n, t in unrolled_cpu.items()}
    if verbose:
        print_results([res], [k for k, why in skipped.items() if why == "not installed"])
        for k, why in skipped.items():
            print(f"skipped {k}: {why}")
        for row in headline:
            t = row["target"]
            note = "" if t is None else f" ({target_note(row['ratio'], t, quick)})"
            print(f"{row['case']}: {row['fastgraph']}/{row['peer']} = {row['ratio']:.3f}{note}")
        for n, t in unrolled.items():
            print(f"unrolled T={n}: trace + compile {t:.3f} s, {1e6 * per_step[n]:.1f} us per "
                  f"step ({1e6 * cpu_per_step[n]:.1f} us CPU)")
    return {
        "benchmark": "rnn",
        "headline": headline,
        "quick": quick,
        "results": [res.to_dict()],
        "missing": [k for k, why in skipped.items() if why == "not installed"],
        "skipped": skipped,
        "ms_per_call": ms,
        "first_call_s": first,
        "unrolled_compile_s": {str(n): t for n, t in unrolled.items()},
        "unrolled_s_per_step": {str(n): t for n, t in per_step.items()},
        "unrolled_cpu_s_per_step": {str(n): t for n, t in cpu_per_step.items()},
        "targets": {f"{a}/{b}": t for (a, b), t in TARGETS.items()},
        "first_call_target": FIRST_CALL_TARGET,
    }


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, "3 rounds, unrolled T up to 1,000", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
