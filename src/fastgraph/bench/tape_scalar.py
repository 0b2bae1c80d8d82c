"""Eager tape overhead on scalars: fastgraph vs PyTorch and HIPS autograd.

What it measures: leaves ``a, b`` (0-d float64, requiring grad); ``z = a``; 2,500 times
``z = tanh(z * a + b) - z * 0.5`` (5 recorded operations per iteration, 12,500 in all); then
``backward()``. With 0-d data the arithmetic is free, so this is the pure per-operation cost of a
define-by-run engine: creating the result, recording the tape node, and walking it in reverse.

Why it matters: scalar-heavy code (probabilistic programs, ODE steppers, small optimisation
problems) is dominated by this overhead, and it bounds how small a model can be before the
framework, not the math, is the bottleneck.

Method: two candidates per library, timed side by side by ``fastgraph.bench.timing.compare``
(interleaved rounds, medians) with the garbage collector **on**, as users run: "forward" (build
the chain) and "total" (build + ``backward``); backward is timed inside the "total" calls (a clock
around ``backward()`` / autograd's ``vjp``), so it does not rest on the difference of two noisy
medians. Reported per operation (divided by 12,500). Targets: total per op <= 0.33x PyTorch's
and <= 0.1x autograd's.

Run: ``python -m fastgraph bench --only tape_scalar``, or on its own
``python -m fastgraph.bench.tape_scalar [--quick] [--threads N] [--json out.json]``.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from fastgraph.bench.timing import compare, peers, print_results, script_main, target_note

ITERATIONS = 2500
_clock = time.perf_counter
OPS_PER_ITERATION = 5
TARGETS = {"torch": 0.33, "autograd": 0.1}


# ---- one chain per library --------------------------------------------------------------------
def _define_by_run_fns(lib, a0: np.ndarray, b0: np.ndarray, n: int, reduce: bool):
    """The chain on a PyTorch-style library (``tensor(..., requires_grad=True)``, ``backward()``):
    fastgraph and torch run exactly the same code."""
    a = lib.tensor(a0.copy(), requires_grad=True)
    b = lib.tensor(b0.copy(), requires_grad=True)
    tanh = lib.tanh

    def forward():
        z = a
        for _ in range(n):
            z = tanh(z * a + b) - z * 0.5
        return z.sum() if reduce else z

    def total():
        a.grad = None
        b.grad = None
        z = forward()
        t = _clock()
        z.backward()
        total.backward_s.append(_clock() - t)
        return a.grad, b.grad

    total.backward_s = []

    return forward, total


def _fastgraph_fns(a0: np.ndarray, b0: np.ndarray, n: int, reduce: bool):
    import fastgraph
    return _define_by_run_fns(fastgraph, a0, b0, n, reduce)


def _torch_fns(a0: np.ndarray, b0: np.ndarray, n: int, reduce: bool):
    import torch
    return _define_by_run_fns(torch, a0, b0, n, reduce)


def _autograd_fns(a0: np.ndarray, b0: np.ndarray, n: int, reduce: bool):
    import autograd.numpy as anp
    from autograd import make_vjp

    tanh = anp.tanh
    # autograd treats 0-d arrays and floats alike; pass what the user would: the arrays.
    a, b = a0.copy(), b0.copy()

    def chain(ab):
        a, b = ab
        z = a
        for _ in range(n):
            z = tanh(z * a + b) - z * 0.5
        return anp.sum(z) if reduce else z

    def forward():
        return make_vjp(chain, 0)((a, b))  # traces the forward pass, returns (vjp, value)

    def total():
        vjp, ans = make_vjp(chain, 0)((a, b))
        t = _clock()
        g = vjp(np.ones_like(ans))
        total.backward_s.append(_clock() - t)
        return g

    total.backward_s = []

    return forward, total


BUILDERS: dict[str, Callable] = {"fastgraph": _fastgraph_fns, "torch": _torch_fns,
                                 "autograd": _autograd_fns}


def _to_numpy(g) -> np.ndarray:
    if hasattr(g, "detach"):  # torch, and fastgraph (whose detach() is a Tensor)
        g = g.detach()
        g = g.numpy() if hasattr(g, "numpy") else g
    return np.asarray(getattr(g, "_ndarray", g), dtype=np.float64)


def _check_grads(fns: dict[str, tuple[Callable, Callable]]) -> None:
    """All libraries must compute the same gradients (else the timing compares different work)."""
    ref = None
    for name, (_, total) in fns.items():
        ga, gb = (_to_numpy(g) for g in total())
        if ref is None:
            ref = (name, ga, gb)
        elif not (np.allclose(ga, ref[1], rtol=1e-9) and np.allclose(gb, ref[2], rtol=1e-9)):
            raise AssertionError(f"{name} and {ref[0]} disagree on the gradients")


def tape_benchmark(label: str, shape: tuple, n: int, rounds: int,
                   verbose: bool = True, quick: bool = False) -> dict[str, Any]:
    """Time forward and forward+backward of the chain for every installed library."""
    rng = np.random.default_rng(0)
    a0 = rng.uniform(0.2, 0.8, size=shape)
    b0 = rng.uniform(-0.5, 0.5, size=shape)
    reduce = shape != ()
    available, missing = peers("torch", "autograd")
    fns = {"fastgraph": _fastgraph_fns(a0, b0, n, reduce)}
    for peer in ("torch", "autograd"):
        if peer in available:
            fns[peer] = BUILDERS[peer](a0, b0, n, reduce)
    if "torch" in fns:
        import torch
        torch.set_num_threads(1)  # scalar/64-element work: threads only add overhead
    _check_grads(fns)
    n_ops = OPS_PER_ITERATION * n + (1 if reduce else 0)
    meta = {"shape": list(shape), "iterations": n, "ops": n_ops, "gc": "on"}
    fwd = compare(f"{label} forward", {k: v[0] for k, v in fns.items()}, rounds=rounds,
                  warmup=1, meta=meta, disable_gc=False)
    for _, t in fns.values():
        t.backward_s.clear()
    tot = compare(f"{label} forward+backward", {k: v[1] for k, v in fns.items()}, rounds=rounds,
                  warmup=1, meta=meta, disable_gc=False)
    per_op: dict[str, dict[str, float]] = {}
    for k in fns:
        f, t = fwd.stats[k].median, tot.stats[k].median
        bw = statistics.median(fns[k][1].backward_s[1:])  # [0] is compare()'s warm-up call
        per_op[k] = {"forward_us": 1e6 * f / n_ops, "backward_us": 1e6 * bw / n_ops,
                     "total_us": 1e6 * t / n_ops}
    ratios = {k: per_op["fastgraph"]["total_us"] / v["total_us"]
              for k, v in per_op.items() if k != "fastgraph"}
    # The same from the fastest round (robust when the machine is shared and medians drift).
    min_total = {k: tot.stats[k].min / n_ops for k in fns}
    ratios_min = {k: min_total["fastgraph"] / v for k, v in min_total.items() if k != "fastgraph"}
    if verbose:
        print_results([fwd, tot], missing)
        print(f"per operation ({n_ops:,} ops), microseconds:")
        print(f"  {'library':<12}{'forward':>10}{'backward':>10}{'total':>10}{'fastgraph/x':>14}")
        for k, v in per_op.items():
            r = f"{ratios[k]:.3f}x" if k in ratios else ""
            print(f"  {k:<12}{v['forward_us']:>10.3f}{v['backward_us']:>10.3f}"
                  f"{v['total_us']:>10.3f}{r:>14}")
        for k, target in TARGETS.items():
            if k in ratios:
                print(f"  fastgraph/{k} total = {ratios[k]:.3f} "
                      f"({target_note(ratios[k], target, quick)})")
    headline = [{"case": f"{label} total per op", "fastgraph": "fastgraph", "peer": k,
                 "fastgraph_s": per_op["fastgraph"]["total_us"] * 1e-6,
                 "peer_s": per_op[k]["total_us"] * 1e-6, "ratio": r,
                 "fastgraph_min_s": min_total["fastgraph"], "peer_min_s": min_total[k],
                 "ratio_min": ratios_min[k],
                 "target": TARGETS.get(k)}
                for k, r in ratios.items()]
    return {
        "headline": headline,
        "results": [fwd.to_dict(), tot.to_dict()],
        "missing": missing,
        "per_op_us": per_op,
        "ratios": ratios,
        "ratios_min": ratios_min,
        "targets": {k: v for k, v in TARGETS.items() if k in ratios},
        "meets_targets": {k: ratios[k] <= v for k, v in TARGETS.items() if k in ratios},
    }


def run(quick: bool = False, verbose: bool = True) -> dict[str, Any]:
    """``quick``: 200 iterations instead of 2,500 and 3 rounds instead of 7."""
    n = 200 if quick else ITERATIONS
    out = tape_benchmark("tape scalar", (), n, rounds=3 if quick else 7, verbose=verbose,
                         quick=quick)
    return {"benchmark": "tape_scalar", "quick": quick, **out}


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, '200 iterations, 3 rounds', argv=argv)


if __name__ == "__main__":
    sys.exit(main())
