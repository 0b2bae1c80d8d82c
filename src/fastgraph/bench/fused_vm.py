"""Micro-benchmark of the fused-kernel VM (fastgraph.kernels.vm).

Used to choose how transcendentals are evaluated (the ``eval`` column of
src/fastgraph/kernels/include/fg_opcodes.h) and the block size / thread threshold; the figures
that chose the strategies are in benchmarks/results/vm-strategies-transcribed.json.

    python -m fastgraph.bench.fused_vm             # every section
    python -m fastgraph.bench.fused_vm --quick     # smaller arrays, fewer repeats
    python -m fastgraph.bench.fused_vm --only ops,w4
    python -m fastgraph bench --only fused_vm        # run(): side-by-side ratios for the suite

Sections:
  ops      per-op candidates, 1 thread: libm C loop vs NumPy's own inner loop (called per block
           through the ufunc loop table) vs fastgraph's vectorised kernels, and plain NumPy out=;
  w4       the fused workload y = tanh(a*b + c) * sigmoid(d) + 0.5*a*a, float64: fused at 1 and 2
           threads vs NumPy with out= buffers (and numexpr when installed);
  grad     forward + gradients of sum(y) w.r.t. a, b, c, d as one 5-output kernel vs NumPy;
  xla      the same two, side by side with jax.jit (XLA) when JAX is installed;
  threads  scaling on a compute-bound expression (1 vs 2 threads);
  block    block-size sweep on w4;
  thresh   small sizes, 1 vs 2 threads (where OpenMP starts to pay);
  blas     a plan whose matmul feeds a fused kernel: the kernel on one thread (the fuse pass's
           policy for plans that run threaded BLAS) vs on the threads.

Times are the minimum over repeats (wall clock; "cpu" is the calling thread's CPU time, which is
what a 1-thread run costs even on a busy machine).

Target (``TARGET_THREAD_SPEEDUP``): the compute-bound kernel of ``threads`` at least 1.8x faster
on 2 threads (or more) than on one; the suite's summary shows it as the time ratio
fastgraph / fastgraph_1thread at most 1 / 1.8.

The suite's forward rows also time ``fastgraph_plain``: the same kernel compiled without
superinstructions, run over whole blocks without prefetching (the VM's schedule before
sub-blocks), so the gain of both is measured side by side on any machine.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

from fastgraph.bench.timing import SETTLE_S, compare, peers, print_results, target_note
from fastgraph.fused import BY_NAME, Expr, compile_kernel
from fastgraph.kernels import vm as _fused

#: thread scaling: the compute-bound kernel's 1-thread time / its time on 2 threads (or more), at
#: least
TARGET_THREAD_SPEEDUP = 1.8


def timeit(f, reps):
    f()
    wall, cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.thread_time()
        f()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return min(wall), min(cpu)


def ms(t):
    return f"{t * 1e3:8.1f}"


def section(title):
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def bench_ops(n, reps):
    section(f"per-op strategies, float64, n={n:,}, 1 thread (ns/element, cpu time)")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) * 3
    pos = np.abs(x) + 0.1
    out = np.empty(n)
    names = ["exp", "expm1", "tanh", "sigmoid", "softplus", "log", "log1p", "sin", "cos", "tan",
             "sinh", "cosh", "arctan", "erf", "sqrt", "floor", "ceil"]
    print(f"{'op':10s}{'libm':>9s}{'numpy-loop':>12s}{'vec':>9s}{'np out=':>10s}   table")
    for name in names:
        arg = pos if name in ("log", "sqrt") else x
        row = []
        for strat in ("libm", "ufunc", "vec"):
            spec = BY_NAME[name]
            if strat == "vec" and not _fused.vm_has_vec(name):
                row.append("      -")
                continue
            if strat == "ufunc" and spec.ufunc is None and name not in ("sigmoid", "softplus"):
                row.append("         -")
                continue
            k = compile_kernel([Expr.op(name, Expr.input(0))], strategy=strat)
            _, c = timeit(lambda: k(arg, out=out, num_threads=1), reps)
            row.append(f"{c / n * 1e9:9.2f}" if strat != "ufunc" else f"{c / n * 1e9:12.2f}")
        npf = getattr(np, BY_NAME[name].ufunc or "", None) if BY_NAME[name].ufunc else None
        if npf is not None:
            _, c = timeit(lambda: npf(arg, out=out), reps)
            npt = f"{c / n * 1e9:10.2f}"
        else:
            npt = "         -"
        print(f"{name:10s}{row[0]}{row[1]}{row[2]}{npt}   {BY_NAME[name].eval}")


def w4_inputs(n):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(n) for _ in range(4)]


def w4_expr():
    a, b, c, d = (Expr.input(i) for i in range(4))
    return a, b, c, d, Expr.op("tanh", a * b + c), Expr.op("sigmoid", d)


def w4_kernels(superinstructions=True):
    """The workload as one kernel, and with the gradients of ``sum(y)`` as one 5-output
    kernel: ``(forward, forward_and_gradients)``."""
    a, b, c, d, t, s = w4_expr()
    y = t * s + 0.5 * a * a
    gu = Expr.op("tanh_grad", t, s)
    return (compile_kernel([y], superinstructions=superinstructions),
            compile_kernel([y, gu * b + a, gu * a, gu, Expr.op("sigmoid_grad", s, t)],
                           reduce=[("sum", None), None, None, None, None],
                           superinstructions=superinstructions))


def numpy_w4(A, out, t1, t2):
    a, b, c, d = A
    np.multiply(a, b, out=t1)
    np.add(t1, c, out=t1)
    np.tanh(t1, out=t1)
    np.negative(d, out=t2)       # sigmoid as 1 / (1 + exp(-d))
    np.exp(t2, out=t2)
    np.add(t2, 1.0, out=t2)
    np.divide(1.0, t2, out=t2)
    np.multiply(t1, t2, out=t1)
    np.multiply(a, a, out=t2)
    np.multiply(t2, 0.5, out=t2)
    np.add(t1, t2, out=out)


def bench_w4(n, reps):
    section(f"fused workload forward: y = tanh(a*b + c) * sigmoid(d) + 0.5*a*a, float64, n={n:,}")
    A = w4_inputs(n)
    a, b, c, d, t, s = w4_expr()
    k = compile_kernel([t * s + 0.5 * a * a])
    out, t1, t2 = np.empty(n), np.empty(n), np.empty(n)
    res = {}
    for nt in (1, 2):
        w, cpu = timeit(lambda: k(*A, out=out, num_threads=nt), reps)
        res[nt] = w
        print(f"fused, {nt} thread(s):   wall {ms(w)} ms" + (f"   (cpu {ms(cpu)} ms)" if nt == 1 else ""))
    w, _ = timeit(lambda: k(*A, num_threads=2), reps)
    print(f"fused, 2 threads, allocating output: wall {ms(w)} ms")
    w_np, _ = timeit(lambda: numpy_w4(A, out, t1, t2), reps)
    print(f"NumPy with out= buffers: wall {ms(w_np)} ms")
    print(f"speed-up vs NumPy out=: {w_np / res[1]:.2f}x (1 thread), {w_np / res[2]:.2f}x (2 threads);"
          f" 2 vs 1 thread: {res[1] / res[2]:.2f}x")
    try:
        import numexpr as ne
        for nt in (1, 2):
            ne.set_num_threads(nt)
            w, _ = timeit(lambda: ne.evaluate(
                "tanh(a*b + c) * (1 / (1 + exp(-d))) + 0.5*a*a",
                local_dict=dict(a=A[0], b=A[1], c=A[2], d=A[3]), out=out), reps)
            print(f"numexpr, {nt} thread(s): wall {ms(w)} ms")
    except ImportError:
        print("numexpr: not installed")
    print(k.describe())


def bench_grad(n, reps):
    section(f"forward + gradients of sum(y) w.r.t. a, b, c, d: one 5-output kernel, n={n:,}")
    A = w4_inputs(n)
    a, b, c, d, t, s = w4_expr()
    y = t * s + 0.5 * a * a
    gu = Expr.op("tanh_grad", t, s)          # d sum(y) / du, u = a*b + c  (= dc)
    outs = [y, gu * b + a, gu * a, gu, Expr.op("sigmoid_grad", s, t)]
    k = compile_kernel(outs)
    bufs = [np.empty(n) for _ in outs]
    for nt in (1, 2):
        w, _ = timeit(lambda: k(*A, out=bufs, num_threads=nt), reps)
        print(f"fused fwd+grad, {nt} thread(s): wall {ms(w)} ms")
    kl = compile_kernel([y, gu * b + a, gu * a, gu, Expr.op("sigmoid_grad", s, t)],
                        reduce=[("sum", None), None, None, None, None])
    bufl = [np.empty(())] + bufs[1:]
    w, _ = timeit(lambda: kl(*A, out=bufl, num_threads=2), reps)
    print(f"fused loss (sum) + grads, 2 threads: wall {ms(w)} ms")
    tmp = [np.empty(n) for _ in range(3)]

    def numpy_grad():
        return numpy_w4_grad(A, tmp, bufs[1:])
    w, _ = timeit(numpy_grad, reps)
    print(f"NumPy fwd+grad with out= buffers: wall {ms(w)} ms")


def numpy_w4_grad(A, scratch, grads):
    """The NumPy reference for W4's loss ``sum(y)`` and its gradients, with ``out=`` buffers:
    ``scratch`` holds 3 arrays, ``grads`` receives (d/da, d/db, d/dc, d/dd). Returns the loss."""
    a_, b_, c_, d_ = A
    u, s_, t_ = scratch
    ga, gb, gc, gd = grads
    np.multiply(a_, b_, out=u)
    np.add(u, c_, out=u)
    np.tanh(u, out=t_)
    np.negative(d_, out=s_)
    np.exp(s_, out=s_)
    np.add(s_, 1.0, out=s_)
    np.divide(1.0, s_, out=s_)
    np.multiply(t_, s_, out=u)
    loss = u.sum() + 0.5 * np.dot(a_, a_)
    np.multiply(t_, t_, out=gc)
    np.subtract(1.0, gc, out=gc)
    np.multiply(gc, s_, out=gc)
    np.multiply(gc, b_, out=ga)
    np.add(ga, a_, out=ga)
    np.multiply(gc, a_, out=gb)
    np.subtract(1.0, s_, out=gd)
    np.multiply(gd, s_, out=gd)
    np.multiply(gd, t_, out=gd)
    return loss


def bench_xla(n, reps):
    """Side by side with JAX/XLA (float64), interleaved so both see the same machine load."""
    section(f"side by side with XLA (jax.jit, float64), n={n:,}, min over {reps} interleaved runs")
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    except ImportError:
        print("jax: not installed")
        return
    A = w4_inputs(n)
    JA = [jax.device_put(x) for x in A]

    def f(a, b, c, d):
        return jnp.tanh(a * b + c) * jax.nn.sigmoid(d) + 0.5 * a * a

    jf = jax.jit(f)
    jg = jax.jit(jax.value_and_grad(lambda a, b, c, d: jnp.sum(f(a, b, c, d)), argnums=(0, 1, 2, 3)))
    k, kg = w4_kernels()
    out = np.empty(n)
    bufs = [np.empty(())] + [np.empty(n) for _ in range(4)]
    np.testing.assert_allclose(k(*A), np.asarray(jf(*JA)), rtol=1e-12, atol=1e-12)
    cases = {
        "XLA forward": lambda: jf(*JA).block_until_ready(),
        "fused forward, 1 thread": lambda: k(*A, out=out, num_threads=1),
        "fused forward, 2 threads": lambda: k(*A, out=out, num_threads=2),
        "XLA value_and_grad(sum y)": lambda: jax.block_until_ready(jg(*JA)),
        "fused sum(y) + 4 grads, 1 thread": lambda: kg(*A, out=bufs, num_threads=1),
        "fused sum(y) + 4 grads, 2 threads": lambda: kg(*A, out=bufs, num_threads=2),
    }
    best = {name: float("inf") for name in cases}
    for fn in cases.values():
        fn()
    for _ in range(reps):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    for name, t in best.items():
        print(f"{name:36s} {ms(t)} ms")


def bench_threads(n, reps):
    section(f"thread scaling, compute-bound: sin(x) * tanh(x) + exp(-x*x), n={n:,}")
    x = np.random.default_rng(0).standard_normal(n)
    e = Expr.input(0)
    k = compile_kernel([Expr.op("sin", e) * Expr.op("tanh", e) + Expr.op("exp", -(e * e))])
    out = np.empty(n)
    # interleaved, so load that drifts during the run hits both counts alike
    one, two = [], []
    for _ in range(max(reps, 5)):
        one.append(timeit(lambda: k(x, out=out, num_threads=1), 1)[0])
        two.append(timeit(lambda: k(x, out=out, num_threads=2), 1)[0])
    w1, w2 = min(one), min(two)
    paired = sorted(a / b for a, b in zip(one, two))[len(one) // 2]
    print(f"1 thread {ms(w1)} ms, 2 threads {ms(w2)} ms: {w1 / w2:.2f}x "
          f"(median of per-round ratios {paired:.2f}x)")


def bench_block(n, reps):
    section(f"block size sweep on w4, n={n:,}")
    A = w4_inputs(n)
    a, b, c, d, t, s = w4_expr()
    out = np.empty(n)
    for blk in (256, 512, 1024, 2048, 4096, 8192):
        k = compile_kernel([t * s + 0.5 * a * a], block=blk)
        w1, c1 = timeit(lambda: k(*A, out=out, num_threads=1), reps)
        w2, _ = timeit(lambda: k(*A, out=out, num_threads=2), reps)
        print(f"block {blk:5d}: 1 thread {ms(w1)} ms (cpu {ms(c1)}), 2 threads {ms(w2)} ms")


def bench_thresh(reps):
    section("small sizes: 1 vs 2 threads (us per call), exp(x) * x + 1")
    e = Expr.input(0)
    k = compile_kernel([Expr.op("exp", e) * e + 1.0], threshold=0)
    for n in (1024, 4096, 16384, 32768, 65536, 131072, 262144):
        x = np.random.default_rng(0).standard_normal(n)
        out = np.empty(n)
        w1, _ = timeit(lambda: k(x, out=out, num_threads=1), reps * 20)
        w2, _ = timeit(lambda: k(x, out=out, num_threads=2), reps * 20)
        print(f"n={n:7d}: 1 thread {w1 * 1e6:8.1f} us, 2 threads {w2 * 1e6:8.1f} us")


def bench_blas(reps):
    """A plan with a matmul feeding a fused kernel, ``tanh(a @ b) * sigmoid(c) + 0.5 * c``
    (float32, k = 64): its kernel on one thread (the fuse pass's policy for plans that run
    threaded BLAS) against the threads (the policy switched off).  OpenBLAS's worker threads
    spin for ~0.1 s after each product, so in such a plan an OpenMP worker gets little of its
    core."""
    import statistics

    import fastgraph as fg
    from fastgraph.static import blas_threads
    section("plan with threaded BLAS: kernel on one thread vs on the threads (ms per run)")
    rng = np.random.default_rng(0)
    for rows, cols in ((512, 512), (1024, 1024), (2048, 2048)):
        k = 64
        vals = (rng.standard_normal((rows, k)).astype(np.float32),
                rng.standard_normal((k, cols)).astype(np.float32),
                rng.standard_normal((rows, cols)).astype(np.float32))
        runs = {}
        for policy in (True, False):
            blas_threads.BLAS_PLANS_ONE_THREAD = policy
            try:
                g = fg.Graph()
                with g.as_default():
                    a = fg.placeholder(np.float32, (rows, k))
                    b = fg.placeholder(np.float32, (k, cols))
                    c = fg.placeholder(np.float32, (rows, cols))
                    y = fg.tanh(fg.matmul(a, b)) * fg.sigmoid(c) + c * 0.5
                sess = fg.Session(g)
                feed = dict(zip((a, b, c), vals))
                sess.run(y, feed)
            finally:
                blas_threads.BLAS_PLANS_ONE_THREAD = True
            runs[policy] = (sess, y, feed)
        times = {True: [], False: []}
        for _ in range(reps * 3):                      # interleaved: the same machine state
            for policy, (sess, y, feed) in runs.items():
                t0 = time.perf_counter()
                sess.run(y, feed)
                times[policy].append(time.perf_counter() - t0)
        one, many = (statistics.median(times[p]) for p in (True, False))
        print(f"{rows * cols:>10,} elements: one thread {ms(one)} ms, threads {ms(many)} ms "
              f"({many / one:.2f}x)")


def run(quick: bool = False, verbose: bool = True, threads: int | None = None) -> dict[str, Any]:
    """Suite entry point (``python -m fastgraph bench``): fastgraph's fused VM against NumPy with
    ``out=`` buffers, numexpr and XLA, timed side by side (medians; ratio < 1: fastgraph faster)."""
    import fastgraph as fg

    n = 250_000 if quick else 10_000_000
    rounds = 3 if quick else 7
    nt = threads or fg.get_num_threads()
    avail, missing = peers("numexpr", "jax")
    A = w4_inputs(n)
    k, kg = w4_kernels()
    out, t1, t2 = np.empty(n), np.empty(n), np.empty(n)
    bufs = [np.empty(())] + [np.empty(n) for _ in range(4)]
    meta = {"n": n, "dtype": "float64", "threads": nt, "vec_isa": _fused.vec_isa()}
    results = []

    k_plain = w4_kernels(superinstructions=False)[0]

    def plain_schedule():
        _fused._set_block_schedule(sub_bytes=8 * k_plain.block, ahead_bytes=0)
        try:
            k_plain(*A, out=out, num_threads=nt)
        finally:
            _fused._set_block_schedule()

    fwd = {"fastgraph": lambda: k(*A, out=out, num_threads=nt),
           "fastgraph_1thread": lambda: k(*A, out=out, num_threads=1),
           "fastgraph_plain": plain_schedule,
           "numpy": lambda: numpy_w4(A, out, t1, t2)}
    grd = {"fastgraph": lambda: kg(*A, out=bufs, num_threads=nt),
           "fastgraph_1thread": lambda: kg(*A, out=bufs, num_threads=1)}
    tmp = [np.empty(n) for _ in range(7)]

    def numpy_grad():
        return numpy_w4_grad(A, tmp[:3], tmp[3:])
    grd["numpy"] = numpy_grad
    if "numexpr" in avail:
        ne = avail["numexpr"]
        env = dict(a=A[0], b=A[1], c=A[2], d=A[3])

        def numexpr_fwd():
            ne.set_num_threads(nt)
            ne.evaluate("tanh(a*b + c) * (1 / (1 + exp(-d))) + 0.5*a*a", local_dict=env, out=out)
        fwd["numexpr"] = numexpr_fwd
    if "jax" in avail:
        jax = avail["jax"]
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def f(a_, b_, c_, d_):
            return jnp.tanh(a_ * b_ + c_) * jax.nn.sigmoid(d_) + 0.5 * a_ * a_
        JA = [jax.device_put(x) for x in A]
        jf = jax.jit(f)
        jg = jax.jit(jax.value_and_grad(lambda *z: jnp.sum(f(*z)), argnums=(0, 1, 2, 3)))
        fwd["jax"] = lambda: jf(*JA).block_until_ready()
        grd["jax"] = lambda: jax.block_until_ready(jg(*JA))
    results.append(compare("w4_forward", fwd, rounds=rounds, meta=meta, settle=SETTLE_S))
    results.append(compare("w4_forward_and_grad", grd, rounds=rounds, meta=meta,
                           settle=SETTLE_S))

    x = np.random.default_rng(0).standard_normal(min(n, 4_000_000))
    ox = np.empty_like(x)
    e = Expr.input(0)
    kc = compile_kernel([Expr.op("sin", e) * Expr.op("tanh", e) + Expr.op("exp", -(e * e))])
    scaling = compare("thread_scaling", {
        "fastgraph": lambda: kc(x, out=ox, num_threads=nt),
        "fastgraph_1thread": lambda: kc(x, out=ox, num_threads=1)},
        rounds=rounds, meta=dict(meta, n=x.size), settle=SETTLE_S)
    i_scaling = len(results)
    results.append(scaling)

    xs = np.random.default_rng(0).standard_normal(250_000 if quick else 2_000_000) * 3
    os_ = np.empty_like(xs)
    for name in ("exp", "tanh", "sigmoid"):
        cands = {}
        for strat, label in (("auto", "fastgraph"), ("libm", "fastgraph_libm"),
                             ("ufunc", "fastgraph_numpyloop")):
            kk = compile_kernel([Expr.op(name, Expr.input(0))], strategy=strat)
            cands[label] = (lambda kk=kk: kk(xs, out=os_, num_threads=1))
        if name != "sigmoid":
            npf = getattr(np, name)
            cands["numpy"] = lambda npf=npf: npf(xs, out=os_)
        results.append(compare(f"op_{name}_1thread", cands, rounds=rounds,
                               meta=dict(meta, n=xs.size, threads=1)))
    speedup = scaling.ratio("fastgraph_1thread", "fastgraph")
    if verbose:
        print_results(results, missing)
        if nt >= 2:
            print(f"thread_scaling: {nt} threads {speedup:.2f}x faster than one "
                  f"({target_note(speedup, TARGET_THREAD_SPEEDUP, quick, at_least=True)})")
    # The target rides on its result, for the suite's summary rows (fastgraph.cli.bench
    # .headline), as a time ratio like every other: fastgraph / fastgraph_1thread at most
    # 1 / TARGET_THREAD_SPEEDUP (with one thread the two candidates are the same run: no target).
    dicts = [r.to_dict() for r in results]
    if nt >= 2:
        dicts[i_scaling]["targets"] = {"fastgraph_1thread": 1.0 / TARGET_THREAD_SPEEDUP}
    return {"results": dicts, "missing": missing, "thread_speedup": speedup}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--n", type=int, default=None, help="elements for w4/grad (default 10M)")
    p.add_argument("--only", default="ops,w4,grad,xla,threads,block,thresh,blas")
    p.add_argument("--suite", action="store_true", help="run the suite entry point run() instead")
    args = p.parse_args()
    if args.suite:
        run(quick=args.quick)
        return
    n = args.n or (2_000_000 if args.quick else 10_000_000)
    reps = 3 if args.quick else 7
    only = set(args.only.split(","))
    print(f"fastgraph fused VM benchmark: numpy {np.__version__}, vec kernels: {_fused.vec_isa()}, "
          f"cpus: {os.cpu_count()}")
    if "ops" in only:
        bench_ops(min(n, 2_000_000), reps)
    if "w4" in only:
        bench_w4(n, reps)
    if "grad" in only:
        bench_grad(n, reps)
    if "xla" in only:
        bench_xla(n, reps)
    if "threads" in only:
        bench_threads(min(n, 4_000_000), reps)
    if "block" in only:
        bench_block(n, max(3, reps // 2))
    if "thresh" in only:
        bench_thresh(reps)
    if "blas" in only:
        bench_blas(reps)


if __name__ == "__main__":
    main()
