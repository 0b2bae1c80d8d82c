"""``fuse``: groups of elementwise steps become one fused kernel (:mod:`fastgraph.fused`).

First, a per-channel bias and an activation after an op that applies them itself (``conv``'s
``epilogue``) join that op (:mod:`..epilogue`).  Then three steps, a module each:

* :mod:`.regions`: which steps can share a kernel -- convex regions of elementwise members of one
  shape and dtype, with trailing reductions as reduced outputs, grown in linear time;
* :mod:`.cost`: which regions are worth a kernel, and each kernel's block size, thread
  threshold and evaluation strategy (with :mod:`fastgraph.static.blas_threads` next to BLAS);
* :mod:`.emit`: each region as one ``call`` step running a kernel compiled once, read through
  ``proj`` steps, and the plan re-sorted.

See ``docs/fusion.md``.
"""
from __future__ import annotations

from ... import blas_threads
from ...plan import live_order
from ..epilogue import fuse_epilogues
from . import cost, emit, regions

__all__ = ["fuse"]


def fuse(ir, ctx) -> None:
    """The pass: the worthwhile regions of plan ``ir`` become fused kernels."""
    fuse_epilogues(ir, ctx)     # first: a bias and an activation taken into the op before them
    order = live_order(ir)      # dead steps (left by simplify) must not join regions
    grown = regions.grow(order, ir.outputs)
    live = [r for r in grown.live() if cost.worth(r)]
    if not live:
        ctx.note("fuse", "0 kernel(s)")
        return
    emit.emit(ir, ctx, order, grown, live, blas_threads.plan_holds_threads(order))
