"""``prune``: keep only what the fetches need, cutting the graph at fed nodes (TF's pruning)."""
from __future__ import annotations


def prune(ir, ctx) -> None:
    for p in ir.feeds:
        p.inputs = []
    live = set()
    stack = [p for p in ir.outputs if p is not None]
    while stack:
        p = stack.pop()
        if id(p) in live:
            continue
        live.add(id(p))
        stack.extend(p.inputs)
    kept = []
    n_pruned = 0
    for p in ir.order:
        if id(p) in live:
            kept.append(p)
        else:
            n_pruned += 1
            if p.kind not in ("const",):
                ctx.note("prune", p.name)
    ir.order = kept
    ctx.note("prune", f"{n_pruned} node(s) not needed by the fetches")
