"""``inplace``: variable updates written straight into the variable's array.

An update ``assign(v, f(v, g))`` whose value is an elementwise step (a fused kernel without a
reduction, or a ufunc) reading ``v`` itself with ``v``'s shape and dtype -- the SGD step
``v - lr * g`` -- writes its result into ``v``'s array (``out=``) instead of a new one that the
commit then installs.  Saves an allocation and a stream of fresh memory per update and step
(W1 of bench_mlp: 800 KB).  Safe because:

* the store's arrays are private: commits copy every value that may alias anything the caller
  holds (feeds, constants, fetched results) -- see ``executor._commit_converter``;
* nothing reads ``v`` (or a view of it) after the update: the update steps move to the end of
  the plan, after every other step; ``v`` and its views must not be fetched or committed.  An
  update may read another's *new* value through that one's assign (Adam's variable update
  reads the new ``m`` and ``v``): both move, in their order; an update whose new value a step
  other than an update, an assign or a group reads (Adam's step counter, read by
  ``beta ** step``) stays where it is, as a new array (``_drop_read_updates``);
* all-or-nothing: only updates, assigns and groups follow them, so no error can come after the
  first in-place write; only one assign per variable in the plan.
"""
from __future__ import annotations

from ..plan import live_order, users_of
from .buffers import is_fresh_step, writes_elementwise


def _views(var, order, users) -> list:
    """``var`` and every step that may return a view of it (non-fresh steps, transitively)."""
    out = [var]
    seen = {id(var)}
    k = 0
    while k < len(out):
        for u in users.get(id(out[k]), ()):
            if id(u) not in seen and u.kind in ("op", "call", "proj") and not is_fresh_step(u):
                seen.add(id(u))
                out.append(u)
        k += 1
    return out


def _drop_read_updates(cands, order, users) -> list:
    """The candidates whose every dependent (transitively) is an assign, a group or another
    remaining candidate: those can all move to the end of the plan.  Adam's step counter
    ``step + 1`` is read by ``beta1 ** step``, so it stays where it is -- and the updates of
    ``m``, ``v`` and the variable, which read one another only through their assigns, still go
    in place.  Linear per round (a reverse sweep); a round only drops candidates, and one whose
    update fed a dropped one goes in the next round."""
    while cands:
        moved = {id(v) for v, _ in cands}
        blocked: dict = {}      # id -> some step at or after it may not follow the updates
        for p in reversed(order):
            b = id(p) not in moved and p.kind not in ("assign", "group")
            if not b:
                for u in users.get(id(p), ()):
                    if blocked[id(u)]:
                        b = True
                        break
            blocked[id(p)] = b
        keep = [(v, var) for v, var in cands
                if not any(blocked[id(u)] for u in users.get(id(v), ()))]
        if len(keep) == len(cands):
            return keep
        cands = keep
    return cands


def inplace(ir, ctx) -> None:
    order = live_order(ir)
    users = users_of(order)
    fetched = {id(o) for o in ir.outputs if o is not None}
    committed = {id(p.inputs[0]) for p in order if p.kind == "assign"}
    n_assign: dict = {}
    for p in order:
        if p.kind == "assign":
            n_assign[p.var_index] = n_assign.get(p.var_index, 0) + 1
    cands = []
    for a in order:
        if a.kind != "assign" or n_assign[a.var_index] != 1:
            continue
        v = a.inputs[0]
        if not writes_elementwise(v) or users.get(id(v)) != [a] or id(v) in fetched:
            continue
        var = next((q for q in v.inputs if q.kind == "var" and q.var_index == a.var_index), None)
        # (a scalar variable's value is a NumPy scalar, which cannot be written into)
        if var is None or var.shape is None or v.shape is None or var.shape == () or \
                tuple(var.shape) != tuple(v.shape) or var.dtype != v.dtype:
            continue
        views = _views(var, order, users)
        if any(id(w) in fetched or id(w) in committed for w in views):
            continue
        cands.append((v, var, views))
    # another update reading this variable (or a view of it) would see the new value
    # (by a map from each input to the updates reading it: linear in the number of updates)
    readers: dict = {}
    for c, _, _ in cands:
        for q in c.inputs:
            readers.setdefault(id(q), []).append(c)
    final = []
    for v, var, views in cands:
        if not any(c is not v for w in views for c in readers.get(id(w), ())):
            final.append((v, var))
    cands = _drop_read_updates(final, order, users)
    if not cands:
        ctx.note("inplace", "0 update(s) in place" if not final else
                 "0 update(s) in place (the updates are read by other steps)")
        return
    # the updates and everything after them: only assigns and groups may follow them
    moved = {id(v) for v, _ in cands}
    tail = set(moved)
    for p in order:
        if any(id(q) in tail for q in p.inputs):
            tail.add(id(p))
    if any(p.kind not in ("assign", "group") for p in order if id(p) in tail and id(p) not in moved):
        ctx.note("inplace", "0 update(s) in place (the updates are read by other steps)")
        return
    for v, var in cands:
        v.inplace = var
        ctx.note("inplace", f"{v.name}: written into {var.name}'s array")
    ir.order = [p for p in ir.order if id(p) not in tail] + [p for p in ir.order if id(p) in tail]
    ctx.note("inplace", f"{len(cands)} update(s) in place")
