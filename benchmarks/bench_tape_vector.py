"""Eager tape overhead on short vectors: fastgraph vs PyTorch and HIPS autograd.

What it measures: the chain of ``bench_tape_scalar`` -- ``z = a``; 2,500 times
``z = tanh(z * a + b) - z * 0.5``; then ``sum(z).backward()`` -- with leaves ``a, b`` of length
64 (float64). 12,501 recorded operations on arrays small enough that per-op overhead still
dominates, but now through the real ndarray paths (allocation, broadcasting checks, ufunc dispatch)
rather than the 0-d scalar fast path.

Why it matters: small-vector models (per-sample parameters, small RNN cells, physics states) sit
in this regime; it shows whether the eager engine's overhead is hidden behind NumPy's own.

Method: as ``bench_tape_scalar`` (interleaved rounds via ``benchmarks._timing.compare``, GC on;
backward timed inside the forward+backward calls; reported per operation).

Measured (2-core AMD EPYC KVM guest shared with other jobs; ``python -m fastgraph bench
--threads 1``, 7 rounds), total per op (median): fastgraph 7.86 us, torch 16.8 us (fastgraph/torch
= 0.469; fastest rounds 0.429), autograd 64.5 us (fastgraph/autograd = 0.122; fastest 0.084).

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
