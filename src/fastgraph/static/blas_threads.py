"""A plan's threads next to threaded BLAS: which plans run it, and what their kernels do then.

OpenBLAS computes a product of up to :data:`BLAS_THREADED_MNK` multiply-adds on the calling
thread and hands larger ones to its own worker threads.  After each such call those workers keep
spinning for about 0.1 s, waiting for more work, and never yield their core: an OpenMP team
started meanwhile gets no more than the one core the plan runs on.  Measured on 2 cores, a plan
``tanh(a @ b) * sigmoid(c) + 0.5 * c`` ran its kernel no faster on 2 threads than on 1 from 0.26M
to 16.8M elements, while the same kernel took half the time on 2 threads once OpenBLAS's threads
had gone to sleep.  So a plan that runs threaded BLAS keeps its fused kernels on one thread
(:func:`plan_holds_threads`), up to :data:`BLAS_HOLD_WORK`: a worker that waits out a spinning BLAS
thread's time slice still pays for itself on heavier kernels, and on many cores each does.
Blocks do not depend on the thread count, so the results are the same either way.

The ``fuse`` pass asks :func:`plan_holds_threads` and :func:`hold_threads`; the ``blas`` pass's
product steps report themselves (``threaded_blas``) with :data:`BLAS_THREADED_MNK`.

>>> from fastgraph.static.blas_threads import hold_threads
>>> hold_threads(True, 1_000_000, 12, 32768), hold_threads(False, 1_000_000, 12, 32768)
(True, False)
"""
from __future__ import annotations

from math import prod

from .. import ops as F
from .plan import known

__all__ = ["BLAS_OPS", "BLAS_THREADED_MNK", "BLAS_PLANS_ONE_THREAD", "BLAS_HOLD_WORK",
           "ONE_THREAD", "runs_threaded_blas", "plan_holds_threads", "hold_threads"]

#: ops whose NumPy forward runs BLAS or LAPACK (OpenBLAS's threaded routines; ``np.einsum``
#: without ``optimize=`` does not): their declarations' ``blas`` field
BLAS_OPS = frozenset(name for name, op in F.REGISTRY.items() if op.blas is not None)
#: OpenBLAS computes a product of up to this many multiply-adds (M*N*K) on the calling thread;
#: larger ones go to its own worker threads (and it runs ``axpy`` on over 10,000 elements there)
BLAS_THREADED_MNK = 1 << 18
#: fused kernels of a plan that runs threaded BLAS stay on one thread (a switch for benchmarks
#: and tests) ...
BLAS_PLANS_ONE_THREAD = True
#: ... unless they have more work than this (elements x work per element in adds: 2M elements
#: of ``tanh * sigmoid``); from 4.2M elements on, 1 and 2 threads came out even
BLAS_HOLD_WORK = 1 << 25
#: a single-thread threshold no kernel reaches
ONE_THREAD = 1 << 62


def _product_mnk(p):
    """Multiply-adds of a product step, or ``None`` when a shape is unknown."""
    a, b = p.inputs
    if not (known(a.shape) and known(b.shape) and known(p.shape)) or not a.shape:
        return None
    return prod(p.shape) * int(a.shape[-1])


def runs_threaded_blas(order) -> bool:
    """Does the plan (its steps ``order``) call BLAS or LAPACK on work big enough for
    OpenBLAS's own threads: a product of more than :data:`BLAS_THREADED_MNK` multiply-adds (or
    of unknown size), any other op with a ``blas`` field, or a step that says it does
    (``fn.threaded_blas``: the ``blas`` pass's calls)?"""
    for p in order:
        if p.kind == "call" and getattr(p.fn, "threaded_blas", False):
            return True
        if p.kind != "op" or p.op.blas is None:
            continue
        if p.op.blas == "product":
            mnk = _product_mnk(p)
            if mnk is not None and mnk <= BLAS_THREADED_MNK:
                continue
        return True
    return False


def plan_holds_threads(order) -> bool:
    """Do the fused kernels of the plan ``order`` stay on one thread (up to
    :data:`BLAS_HOLD_WORK`) because it runs threaded BLAS?"""
    return BLAS_PLANS_ONE_THREAD and runs_threaded_blas(order)


def hold_threads(plan_holds: bool, n: int, work: int, threshold: int) -> bool:
    """Does a kernel of ``n`` elements doing ``work`` adds per element, which would use the
    threads from ``threshold`` elements on, stay on one thread in a plan that holds its
    kernels' threads (``plan_holds``: :func:`plan_holds_threads`)?"""
    return plan_holds and n >= threshold and n * work < BLAS_HOLD_WORK
