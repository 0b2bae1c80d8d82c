"""Eager tape overhead on short vectors: fastgraph vs PyTorch and HIPS autograd.

What it measures: the chain of ``bench_tape_scalar`` -- ``z = a``; 2,500 times
``z = tanh(z * a + b) - z * 0.5``; then ``sum(z).backward()`` -- with leaves ``a, b`` of length
64 (float64). 12,501 recorded operations on arrays small enough that per-op overhead still
dominates, but now through the real ndarray paths (allocation, broadcasting checks, ufunc dispatch)
rather than the 0-d scalar fast path.

Why it matters: small-vector models (per-sample parameters, small RNN cells, physics states) sit
in this regime; it shows whether the eager engine's overhead is hidden behind NumPy's own.

Method: as ``bench_tape_scalar`` (interleaved rounds via ``benchmarks._timing.compare``, GC on;
backward timed inside the forward+backward calls; reported per operation).  Targets: the scalar
chain's (``bench_tape_scalar.TARGETS``), on the total per op.

Measured (2-core AMD EPYC KVM guest shared with other jobs, load ~2.5; Python 3.11.7, NumPy
2.4.6, torch 2.13.0+cpu; full size, 7 rounds, GC on), per op:

    fastgraph   forward 2.41 us  backward 2.71-3.10 us  total (median) 3.67-4.30 us
    torch       forward 7.4 us   backward 10.7-11.7 us  total (median) 15.3-15.6 us
    autograd    forward 49 us    backward 12-15 us      total (median) 62-66 us
    fastgraph/torch = 0.240 and 0.276 (two runs); fastgraph/autograd = 0.059 and 0.065

(before the compiled kernels below: 0.38-0.48 and ~0.12).  Forward is timed with the chain's
deallocation in it; "total" is the target figure.

Where the time goes (callgrind, GC off, per iteration of 5 ops: 105k instructions before, 39.5k
now).  A NumPy ufunc call on 64 elements is ~1 us, nearly all dispatch, and the old tape made 15
per iteration (5 forward, 10 in backward).  Now same-shape float arrays (or an array and a weak
scalar) go straight to the op's NumPy inner loop (``OpDef.set_kernel``, bit-identical); the VJPs
of the common ops run as one compiled kernel each (``OpDef.set_eager_vjps``); gradient sums and
a dead gradient's buffer are reused in place, so backward allocates 2 arrays per iteration
instead of 10.  What is left: the recorder and walker (~13k: objects per op, version checks),
NumPy's tanh loop (3.3k) and the 7 array allocations and frees (~9k with malloc), Python's
object churn (~10k).  At full length backward is also memory-bound: the tape (~20 MB) is far
bigger than the caches, and each iteration misses ~33 cache lines, half of them reading the
saved activations back (software prefetching did not measurably help).

Run: ``python benchmarks/bench_tape_vector.py [--quick] [--json out.json]``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import script_main  # noqa: E402
from benchmarks.bench_tape_scalar import ITERATIONS, tape_benchmark  # noqa: E402

LENGTH = 64


def run(quick: bool = False, verbose: bool = True) -> dict[str, Any]:
    """``quick``: 500 iterations instead of 2,500 and 5 rounds instead of 7."""
    n = 500 if quick else ITERATIONS
    out = tape_benchmark(f"tape vector[{LENGTH}]", (LENGTH,), n, rounds=5 if quick else 7,
                         verbose=verbose)
    return {"benchmark": "tape_vector", "quick": quick, **out}


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, '500 iterations, 5 rounds', argv=argv)


if __name__ == "__main__":
    sys.exit(main())
