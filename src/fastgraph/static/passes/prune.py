"""``prune``: keep only what the fetches need, cutting the graph at fed nodes (TF's pruning)."""
from __future__ import annotations

from ..plan import live_order


def prune(ir, ctx) -> None:
    for p in ir.feeds:
        p.inputs = []
    kept = live_order(ir)
    kept_ids = {id(p) for p in kept}
    n_pruned = 0
    for p in ir.order:
        if id(p) not in kept_ids:
            n_pruned += 1
            if p.kind not in ("const",):
                ctx.note("prune", p.name)
    ir.order = kept
    ctx.note("prune", f"{n_pruned} node(s) not needed by the fetches")
