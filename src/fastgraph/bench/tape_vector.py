"""Eager tape overhead on short vectors: fastgraph vs PyTorch and HIPS autograd.

What it measures: the chain of ``tape_scalar`` -- ``z = a``; 2,500 times
``z = tanh(z * a + b) - z * 0.5``; then ``sum(z).backward()`` -- with leaves ``a, b`` of length
64 (float64). 12,501 recorded operations on arrays small enough that per-op overhead still
dominates, but now through the real ndarray paths (allocation, broadcasting checks, ufunc dispatch)
rather than the 0-d scalar fast path.

Why it matters: small-vector models (per-sample parameters, small RNN cells, physics states) sit
in this regime; it shows whether the eager engine's overhead is hidden behind NumPy's own.

Method: as ``fastgraph.bench.tape_scalar`` (interleaved rounds via ``fastgraph.bench.timing.compare``, GC on;
backward timed inside the forward+backward calls; reported per operation).  Targets: the scalar
chain's (``tape_scalar.TARGETS``), on the total per op.

Forward is timed with the chain's deallocation in it; "total" is the target figure.  Same-shape
float arrays (or an array and a weak scalar) go straight to the op's NumPy inner loop
(``OpDef.set_kernel``, bit-identical), and the VJPs of the common ops run as one compiled kernel
each (``OpDef.set_eager_vjps``).

Run: ``python -m fastgraph bench --only tape_vector``, or on its own
``python -m fastgraph.bench.tape_vector [--quick] [--threads N] [--json out.json]``.
"""
from __future__ import annotations

import sys
from typing import Any

from fastgraph.bench.timing import script_main
from fastgraph.bench.tape_scalar import ITERATIONS, tape_benchmark

LENGTH = 64


def run(quick: bool = False, verbose: bool = True) -> dict[str, Any]:
    """``quick``: 200 iterations instead of 2,500 and 3 rounds instead of 7."""
    n = 200 if quick else ITERATIONS
    out = tape_benchmark(f"tape vector[{LENGTH}]", (LENGTH,), n, rounds=3 if quick else 7,
                         verbose=verbose, quick=quick)
    return {"benchmark": "tape_vector", "quick": quick, **out}


def main(argv: list[str] | None = None) -> int:
    return script_main(run, __doc__, '200 iterations, 3 rounds', argv=argv)


if __name__ == "__main__":
    sys.exit(main())
