"""A fused elementwise expression and its gradient, at the user-API level.

What it measures: ``y = tanh(a*b + c) * sigmoid(d) + 0.5*a*a`` on float64 arrays of 10,000,000
elements (``--quick``: 250,000), and forward + gradients of ``sum(y)`` with respect to
``a, b, c, d`` -- fastgraph via ``@fg.function`` (traced once, run as one fused kernel) against
NumPy (plain expression; and with ``out=`` into preallocated buffers), numexpr, JAX ``jit``,
PyTorch eager and ``torch.compile`` (not in ``--quick``: its compilation alone takes
10-20 s here), and TensorFlow ``tf.function(jit_compile=True)`` (XLA).

Why it matters: elementwise chains are memory-bound. NumPy materialises every intermediate
(reading and writing 8 bytes per element per operation), so the work a fuser removes is
bandwidth; the fair yardstick is therefore the **memory floor**: the time just to read the 4
inputs and write the outputs once, at the best streaming bandwidth the machine reaches.  Several
probes measure it on arrays of the same size (``FLOOR_PROBES``): NumPy's ``copyto`` (2 x 8 bytes
moved per element) and ``np.add(p, q, out=r)`` (3 x 8), and a C pass with the forward's own
traffic, 4 reads and 1 streamed write (``kernels.vm.stream_probe_4r1w``), on 1 thread and on the
benchmark's threads.  In each round the floor is the bytes the expression must move -- forward:
4 reads + 1 write; forward+grad: 4 reads + 4 writes (the gradients; the sum is a scalar) -- over
the best bandwidth any probe reached in that round; its median over rounds is the floor.  The
probes are timed as extra rows in the same shuffled rounds as the candidates, so floor and
candidates see the same load on a shared machine (a probe run on its own, before or after,
caught a different moment: 9.6-22 ms for the same add within one run); the ratios to the floor
are printed from medians and as the median of per-round ratios.

Kernel to kernel and with conversions: the ``jax_jit`` and ``tensorflow_xla`` rows take their
library's own arrays (converted once, outside the timing) and leave the result as one (a JAX
array after ``block_until_ready``, a TF tensor, computed when the call returns): the kernels'
own times.  The rows marked ``(numpy io)`` take NumPy arrays and return NumPy arrays, so the
conversions (XLA's ``.numpy()`` copies into a fresh 80 MB array, which page-faults) are
included, as fastgraph's always are. Page faults (``getrusage`` minor faults per call)
show fresh allocations: NumPy's temporaries of 80 MB are ``mmap``-ed and faulted in on every
call; a plan with preallocated buffers shows none. Peak extra memory is the resident-set high-water
mark above the level before the call (Linux ``/proc/self/clear_refs``), in MB.

Method: ``fastgraph.bench.timing.compare`` (interleaved rounds, medians, one warm-up call, which
absorbs JIT compilation); every candidate's result is checked against NumPy's first.
Targets (``TARGETS``, ``FLOOR_TARGETS``): forward and forward+grad at most XLA's kernel time
(``tf.function(jit_compile=True)``, result left a tensor); the forward at most 1.2x the floor.

Run: ``python -m fastgraph bench --only fused``, or on its own
``python -m fastgraph.bench.fused [--quick] [--threads N] [--json out.json]``.
"""
from __future__ import annotations

import os
import signal
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from fastgraph.bench.timing import (
    SETTLE_S, compare, peers, print_results, script_main, target_note)

N_FULL = 10_000_000
N_QUICK = 250_000
TORCH_COMPILE_LIMIT_S = 60
#: fastgraph's time / the peer's, at most, on both workloads
TARGETS = {"tensorflow_xla": 1.0}
#: fastgraph's time / the memory floor, at most, by workload (``memory_floor``)
FLOOR_TARGETS = {"forward": 1.2}


def make_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(n) for _ in range(4))


# ---- NumPy --------------------------------------------------------------------------------------
def np_forward(a, b, c, d):
    return np.tanh(a * b + c) * (1.0 / (1.0 + np.exp(-d))) + 0.5 * a * a


def np_grad(a, b, c, d):
    t = np.tanh(a * b + c)
    s = 1.0 / (1.0 + np.exp(-d))
    dc = (1.0 - t * t) * s
    return (dc * b + a, dc * a, dc, t * s * (1.0 - s))


def np_out_fns(n: int):
    """NumPy with ``out=``: the same math through a few preallocated buffers (no allocation)."""
    t, s, y = np.empty(n), np.empty(n), np.empty(n)
    ga, gb, gc, gd = (np.empty(n) for _ in range(4))

    def sig(d):
        np.negative(d, out=s); np.exp(s, out=s); np.add(s, 1.0, out=s)
        np.reciprocal(s, out=s)

    def forward(a, b, c, d):
        np.multiply(a, b, out=t); np.add(t, c, out=t); np.tanh(t, out=t)
        sig(d)
        np.multiply(t, s, out=t)
        np.multiply(a, a, out=y); np.multiply(y, 0.5, out=y); np.add(y, t, out=y)
        return y

    def grad(a, b, c, d):
        np.multiply(a, b, out=t); np.add(t, c, out=t); np.tanh(t, out=t)
        sig(d)
        # gd = t*s*(1-s)
        np.subtract(1.0, s, out=gd); np.multiply(gd, s, out=gd); np.multiply(gd, t, out=gd)
        # gc = (1-t^2)*s
        np.multiply(t, t, out=gc); np.subtract(1.0, gc, out=gc); np.multiply(gc, s, out=gc)
        np.multiply(gc, a, out=gb)
        np.multiply(gc, b, out=ga); np.add(ga, a, out=ga)
        return ga, gb, gc, gd

    return forward, grad


# ---- peers --------------------------------------------------------------------------------------
def numexpr_fns(ne):
    fwd_expr = "tanh(a*b + c) / (1 + exp(-d)) + 0.5*a*a"

    def forward(a, b, c, d):
        return ne.evaluate(fwd_expr)

    def grad(a, b, c, d):
        # numexpr evaluates one expression per call: the shared factors are computed once each.
        t = ne.evaluate("tanh(a*b + c)")
        s = ne.evaluate("1 / (1 + exp(-d))")
        dc = ne.evaluate("(1 - t*t) * s")
        return (ne.evaluate("dc*b + a"), ne.evaluate("dc*a"), dc, ne.evaluate("t*s*(1 - s)"))

    return forward, grad


def jax_fns(jax):
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def f(a, b, c, d):
        return jnp.tanh(a * b + c) * jax.nn.sigmoid(d) + 0.5 * a * a

    fwd = jax.jit(f)
    grd = jax.jit(jax.grad(lambda a, b, c, d: jnp.sum(f(a, b, c, d)), argnums=(0, 1, 2, 3)))

    def forward(a, b, c, d):
        return fwd(a, b, c, d).block_until_ready()

    def grad(a, b, c, d):
        out = grd(a, b, c, d)
        for o in out:
            o.block_until_ready()
        return out

    def forward_numpy(a, b, c, d):  # NumPy in, NumPy out: the transfers included
        return np.asarray(fwd(a, b, c, d))

    def grad_numpy(a, b, c, d):
        return [np.asarray(o) for o in grd(a, b, c, d)]

    def convert(arrays):
        return tuple(jax.device_put(x) for x in arrays)

    return forward, grad, convert, forward_numpy, grad_numpy


def _torch_forward_grad(torch, f) -> tuple[Callable, Callable]:
    """PyTorch's forward (under ``no_grad``) and gradient (fresh leaves, ``backward`` of the
    sum) of ``f``, eager or compiled."""
    def forward(a, b, c, d):
        with torch.no_grad():
            return f(a, b, c, d)

    def grad(a, b, c, d):
        leaves = [x.detach().requires_grad_() for x in (a, b, c, d)]
        f(*leaves).sum().backward()
        return tuple(x.grad for x in leaves)

    return forward, grad


def torch_fns(torch):
    def f(a, b, c, d):
        return torch.tanh(a * b + c) * torch.sigmoid(d) + 0.5 * a * a

    def convert(arrays):
        return tuple(torch.from_numpy(x) for x in arrays)

    return (f, *_torch_forward_grad(torch, f), convert)


def torch_compile_fns(torch, f, args) -> tuple[Callable, Callable] | str:
    """``torch.compile`` versions, or why not (compilation error, or over the time limit)."""
    forward, grad = _torch_forward_grad(torch, torch.compile(f))
    use_alarm = hasattr(signal, "SIGALRM")

    def _timeout(signum, frame):
        raise TimeoutError(f"compilation took over {TORCH_COMPILE_LIMIT_S} s")

    old = signal.signal(signal.SIGALRM, _timeout) if use_alarm else None
    t0 = time.perf_counter()
    try:
        if use_alarm:
            signal.alarm(TORCH_COMPILE_LIMIT_S)
        forward(*args)
        grad(*args)
    except Exception as exc:  # noqa: BLE001 - any failure means "skip torch.compile"
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    forward.compile_s = grad.compile_s = time.perf_counter() - t0  # type: ignore[attr-defined]
    return forward, grad


def tensorflow_fns(tf, threads: int | None = None):
    if threads:
        try:  # only possible before TensorFlow runs its first op
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError:
            pass
    def f(a, b, c, d):
        return tf.tanh(a * b + c) * tf.sigmoid(d) + 0.5 * a * a

    fwd = tf.function(f, jit_compile=True)

    @tf.function(jit_compile=True)
    def grd(a, b, c, d):
        with tf.GradientTape() as tape:
            tape.watch([a, b, c, d])
            y = tf.reduce_sum(f(a, b, c, d))
        return tape.gradient(y, [a, b, c, d])

    def forward(a, b, c, d):        # the kernel: TF tensors in, the result left a TF tensor
        return fwd(a, b, c, d)

    def grad(a, b, c, d):
        return grd(a, b, c, d)

    def forward_numpy(a, b, c, d):  # NumPy in, NumPy out: the conversions included
        return fwd(a, b, c, d).numpy()

    def grad_numpy(a, b, c, d):
        return [g.numpy() for g in grd(a, b, c, d)]

    def convert(arrays):
        return tuple(tf.constant(x) for x in arrays)

    return forward, grad, convert, forward_numpy, grad_numpy


def fastgraph_fns():
    import fastgraph as fg

    def f(a, b, c, d):
        return fg.tanh(a * b + c) * fg.sigmoid(d) + 0.5 * a * a

    fwd = fg.function(f)
    grd = fg.function(fg.grad(lambda a, b, c, d: fg.sum(f(a, b, c, d)), argnums=(0, 1, 2, 3)))
    return fwd, grd


# ---- measurement helpers ------------------------------------------------------------------------
def _to_numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "numpy"):
        x = x.numpy()
    return np.asarray(x)


def _check(name: str, got, want, what: str) -> None:
    if isinstance(want, tuple):
        got = tuple(got)
        if len(got) != len(want):
            raise AssertionError(f"bench_fused: {name} {what} returned {len(got)} arrays")
        for g, w in zip(got, want):
            _check(name, g, w, what)
        return
    if not np.allclose(_to_numpy(got), want, rtol=1e-9, atol=1e-12):
        raise AssertionError(f"bench_fused: {name} {what} disagrees with NumPy")


def _rss_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_extra_mb(fn: Callable[[], Any]) -> float | None:
    """Resident-set high-water mark during one call, above the resident set before it (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current RSS
    except OSError:
        return None
    before = _rss_kib("VmRSS")
    out = fn()
    peak = _rss_kib("VmHWM")
    del out
    if before is None or peak is None:
        return None
    return max(0.0, (peak - before) / 1024.0)


#: a suffix for the rows that take NumPy arrays and give NumPy arrays back (conversions and
#: transfers included); the rows without it are kernel to kernel (inputs made the library's own
#: arrays once, results left as its arrays: a TF tensor, a JAX array after block_until_ready)
NUMPY_IO = " (numpy io)"

#: not candidates: streaming-bandwidth probes on arrays of the workload's size, timed in the same
#: rounds as the candidates (so under the same load); name -> 8-byte arrays moved per element
FLOOR_PROBES = {"floor: numpy copy": 2, "floor: numpy add": 3, "floor: C 4r1w 1 thread": 5,
                "floor: C 4r1w N threads": 5}
#: 8-byte arrays streamed per element: the forward (4 reads + 1 write), forward + gradients
#: (4 reads + 4 writes; the sum is a scalar)
_FORWARD_ARRAYS, _GRAD_ARRAYS = 5, 8


def floor_probes(n: int, threads: int) -> dict[str, Callable[[], Any]]:
    """The probes of :data:`FLOOR_PROBES`: ``np.copyto`` and ``np.add(p, q, out=r)`` (NumPy's
    single-threaded streaming) and a C pass with the forward's own traffic (4 reads, 1
    streamed write: ``kernels.vm.stream_probe_4r1w``) on 1 and ``threads`` threads."""
    from fastgraph.kernels.vm import stream_probe_4r1w

    p, q, r, u, v = (np.ones(n) for _ in range(5))
    probes = {"floor: numpy copy": lambda: np.copyto(r, p),
              "floor: numpy add": lambda: np.add(p, q, out=r),
              "floor: C 4r1w 1 thread": lambda: stream_probe_4r1w(p, q, u, v, r, 1),
              "floor: C 4r1w N threads": lambda: stream_probe_4r1w(p, q, u, v, r, threads)}
    for f in probes.values():
        f()
    return probes


def memory_floor(res, arrays: int, n: int) -> dict[str, Any]:
    """The floor of a workload streaming ``arrays`` 8-byte arrays of ``n``: in each round, the
    bytes over the best bandwidth any probe reached in that round; ``floor_s`` its median over
    rounds.  Each candidate's ratio to it, from medians and per round (its time over that
    round's floor); each probe's median bandwidth."""
    probes = [k for k in FLOOR_PROBES if k in res.stats]
    nbytes = arrays * 8 * n
    per_round = [min(t * arrays / FLOOR_PROBES[k] for k, t in zip(probes, ts))
                 for ts in zip(*(res.stats[k].times for k in probes))]
    floor_s = statistics.median(per_round)
    ratios, paired = {}, {}
    for k, st in res.stats.items():
        if k in FLOOR_PROBES:
            continue
        ratios[k] = st.median / floor_s
        paired[k] = statistics.median(t / f for t, f in zip(st.times, per_round))
    bw = {k: FLOOR_PROBES[k] * 8 * n / res.stats[k].median / 1e9 for k in probes}
    return {"bandwidth_GBps": nbytes / floor_s / 1e9, "floor_s": floor_s,
            "floor_min_s": min(per_round), "probes_GBps": bw,
            "best_probe": max(bw, key=bw.get), "ratio": ratios, "paired_ratio": paired}


def floor_row(res, floor: dict[str, Any], target: float | None) -> dict[str, Any]:
    """The suite's summary row (``fastgraph.cli.bench.headline``) of fastgraph against the memory
    floor of ``res`` (``memory_floor(res, arrays, n)``); the fastest rounds' ratio from the
    fastest candidate round over the fastest round's floor."""
    fg_stats = res.stats["fastgraph"]
    return {"case": res.name, "fastgraph": "fastgraph", "peer": "memory floor",
            "fastgraph_s": fg_stats.median, "peer_s": floor["floor_s"],
            "fastgraph_min_s": fg_stats.min, "peer_min_s": floor["floor_min_s"],
            "ratio": floor["ratio"]["fastgraph"], "ratio_min": fg_stats.min / floor["floor_min_s"],
            "ratio_paired": floor["paired_ratio"]["fastgraph"], "target": target}


def run(quick: bool = False, verbose: bool = True, threads: int | None = None) -> dict[str, Any]:
    n = N_QUICK if quick else N_FULL
    rounds = 3 if quick else 7
    import fastgraph as fg

    nthreads = threads or fg.get_num_threads()
    arrays = make_inputs(n)
    want_y = np_forward(*arrays)
    want_g = np_grad(*arrays)
    fwd: dict[str, Callable[[], Any]] = {}
    grd: dict[str, Callable[[], Any]] = {}
    skipped: dict[str, str] = {}
    notes: dict[str, Any] = {}

    def add(name, f, g, args):
        try:
            _check(name, f(*args), want_y, "forward")
            _check(name, g(*args), want_g, "gradient")
        except Exception as exc:  # noqa: BLE001
            skipped[name] = f"{type(exc).__name__}: {exc}"[:200]
            return
        fwd[name] = lambda: f(*args)
        grd[name] = lambda: g(*args)

    if hasattr(fg, "function"):
        try:
            f, g = fastgraph_fns()
            add("fastgraph", f, g, arrays)
        except Exception as exc:  # noqa: BLE001
            skipped["fastgraph"] = f"{type(exc).__name__}: {exc}"[:200]
    else:
        skipped["fastgraph"] = "fg.function not available in this build"
    add("numpy", np_forward, np_grad, arrays)
    f, g = np_out_fns(n)
    add("numpy_out", f, g, arrays)

    available, missing = peers("numexpr", "jax", "torch", "tensorflow")
    if "numexpr" in available:
        ne = available["numexpr"]
        ne.set_num_threads(nthreads)
        add("numexpr", *numexpr_fns(ne), arrays)
    if "jax" in available:
        try:
            f, g, conv, fn, gn = jax_fns(available["jax"])
            add("jax_jit", f, g, conv(arrays))
            add("jax_jit" + NUMPY_IO, fn, gn, arrays)
        except Exception as exc:  # noqa: BLE001
            skipped["jax_jit"] = f"{type(exc).__name__}: {exc}"[:200]
    if "torch" in available:
        torch = available["torch"]
        torch.set_num_threads(nthreads)
        tf_, f, g, conv = torch_fns(torch)
        targs = conv(arrays)
        add("torch", f, g, targs)
        compiled = ("skipped in --quick (compiling takes 10-20 s here)" if quick
                    else torch_compile_fns(torch, tf_, targs))
        if isinstance(compiled, str):
            skipped["torch_compile"] = compiled
        else:
            notes["torch_compile_s"] = getattr(compiled[0], "compile_s", None)
            add("torch_compile", *compiled, targs)
    if "tensorflow" in available:
        try:
            f, g, conv, fn, gn = tensorflow_fns(available["tensorflow"], nthreads)
            add("tensorflow_xla", f, g, conv(arrays))
            add("tensorflow_xla" + NUMPY_IO, fn, gn, arrays)
        except Exception as exc:  # noqa: BLE001
            skipped["tensorflow_xla"] = f"{type(exc).__name__}: {exc}"[:200]

    reference = "fastgraph" if "fastgraph" in fwd else "numpy"
    from fastgraph.kernels.vm import vec_isa
    meta = {"n": n, "dtype": "float64", "threads": nthreads, "vec_isa": vec_isa()}
    probes = floor_probes(n, nthreads)
    r_fwd = compare(f"fused forward n={n:,}", {**fwd, **probes}, rounds=rounds,
                    warmup=1, faults=True, reference=reference, meta=meta, settle=SETTLE_S)
    r_grd = compare(f"fused forward+grad n={n:,}", {**grd, **probes}, rounds=rounds,
                    warmup=1, faults=True, reference=reference, meta=meta, settle=SETTLE_S)
    floors = {"forward": memory_floor(r_fwd, _FORWARD_ARRAYS, n),
              "forward_grad": memory_floor(r_grd, _GRAD_ARRAYS, n)}
    peaks = {"forward": {k: peak_extra_mb(v) for k, v in fwd.items()},
             "forward_grad": {k: peak_extra_mb(v) for k, v in grd.items()}}
    if verbose:
        print_results([r_fwd, r_grd], missing)
        for k, why in skipped.items():
            print(f"skipped {k}: {why}")
        ff, fg_ = floors["forward"], floors["forward_grad"]
        print("memory floor: the best streaming bandwidth of the probes in each round (GB/s, "
              "forward rounds / forward+grad rounds): " + ", ".join(
                  f"{k[len('floor: '):]} {ff['probes_GBps'][k]:.1f} / {fg_['probes_GBps'][k]:.1f}"
                  for k in ff["probes_GBps"]))
        print(f"  forward {1e3 * ff['floor_s']:.2f} ms (4 reads + 1 write at "
              f"{ff['bandwidth_GBps']:.1f} GB/s), forward+grad {1e3 * fg_['floor_s']:.2f} ms "
              f"(4 reads + 4 writes at {fg_['bandwidth_GBps']:.1f} GB/s)")
        print(f"  {'candidate':<16}{'fwd/floor':>10}{'(per round)':>12}{'grad/floor':>11}"
              f"{'(per round)':>12}{'fwd peak MB':>13}{'grad peak MB':>14}")
        for k in fwd:
            pf, pg = peaks["forward"][k], peaks["forward_grad"][k]
            print(f"  {k:<16}{ff['ratio'][k]:>10.2f}{ff['paired_ratio'][k]:>12.2f}"
                  f"{fg_['ratio'][k]:>11.2f}{fg_['paired_ratio'][k]:>12.2f}"
                  f"{(f'{pf:.0f}' if pf is not None else 'n/a'):>13}"
                  f"{(f'{pg:.0f}' if pg is not None else 'n/a'):>14}")
        for res in (r_fwd, r_grd):
            for peer, target in TARGETS.items():
                if reference == "fastgraph" and peer in res.stats:
                    r = res.ratio("fastgraph", peer)
                    print(f"  {res.name}: fastgraph/{peer} = {r:.3f} "
                          f"({target_note(r, target, quick)})")
        for kind, target in FLOOR_TARGETS.items():
            if "fastgraph" in fwd:
                r = floors[kind]["ratio"]["fastgraph"]
                rp = floors[kind]["paired_ratio"]["fastgraph"]
                print(f"  {kind}: fastgraph/floor = {r:.3f} ({target_note(r, target, quick)}; "
                      f"median of per-round ratios {rp:.3f})")
    # Summary rows (fastgraph.cli.bench.headline): the peer targets ride on the results, the
    # floor (timed beside the candidates, not one of them) gets rows of its own.
    floor_rows = []
    if "fastgraph" in fwd:
        floor_rows = [floor_row(r_fwd, floors["forward"], FLOOR_TARGETS.get("forward")),
                      floor_row(r_grd, floors["forward_grad"], FLOOR_TARGETS.get("forward_grad"))]
    return {
        "benchmark": "fused",
        "quick": quick,
        "results": [{**r.to_dict(), "targets": dict(TARGETS)} for r in (r_fwd, r_grd)],
        "headline_extra": floor_rows,
        "missing": missing,
        "skipped": skipped,
        "not_candidates": list(FLOOR_PROBES),
        "memory_floor": floors,
        "ratio_to_floor": {k: v["ratio"] for k, v in floors.items()},
        "peak_extra_mb": peaks,
        "notes": notes,
        "pid": os.getpid(),
    }


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, '250,000 elements, 3 rounds, no torch.compile', argv=argv)


if __name__ == "__main__":
    sys.exit(main())
